package desired

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/build"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// The Flux desired-state path at scale (issue 35 item 3), without an
// apiserver: N Kustomizations over N/10 GitRepository artifacts, run through
// the agent's own Poller.Round (download from an in-memory source-controller,
// ReadTarGz, build.Build, Store.SetFluxDesired), as StartFlux drives it.
//
// Each artifact is an application repository: a base (3 Secrets, 3
// ExternalSecrets, a secretGenerator, a ConfigMap and a Deployment) and five
// overlays (a patch on a Secret, a secretGenerator, one more ExternalSecret);
// its 10 Kustomizations use overlay i%5 with their own targetNamespace,
// namePrefix and postBuild.substitute (${ENV} in a Secret's name and key).
// Each build yields 10 Secrets/ExternalSecrets (13 objects).
//
// One build costs ~0.2-0.4 s, most of it fluxcd/pkg/kustomize.Build
// re-parsing kustomize's builtin OpenAPI schema (resetOpenAPIWithBuiltins,
// under a process-wide lock), so the default sizes are 10 and 50
// Kustomizations; DRIFTWATCH_BENCH_SCALE set (any value) runs 100 and 1,000
// (minutes). Numbers, never assertions:
//
//	DRIFTWATCH_BENCH_SCALE=1 go test -run '^$' -bench FluxScale -benchtime 1x -benchmem ./internal/flux/desired/

const scaleKSPerArtifact = 10

// scaleArtifactFiles is artifact a's files at revision rev (rev changes one
// value: a new digest, as a commit would).
func scaleArtifactFiles(a, rev int) []entry {
	var base strings.Builder
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&base, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-%d\n  labels: {app.kubernetes.io/name: app-%d}\ntype: Opaque\nstringData:\n"+
			"  USER: app\n  PASSWORD: hunter2-%d-%d\n  HOST: db.svc\n  PORT: \"5432\"\n---\n", i, a, a, rev)
	}
	base.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: env-${ENV}\nstringData:\n  KEY_${ENV}: v\n  OTHER: w\n---\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&base, "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: es-%d\nspec:\n  refreshInterval: 1h\n"+
			"  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: es-%d, creationPolicy: Owner}\n  data:\n"+
			"  - {secretKey: U, remoteRef: {key: app-%d/u}}\n  - {secretKey: P, remoteRef: {key: app-%d/p}}\n  - {secretKey: T, remoteRef: {key: app-%d/t}}\n---\n", i, i, a, a, a)
	}
	base.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  LOG: info\n  FEATURE: \"on\"\n---\n")
	fmt.Fprintf(&base, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n"+
		"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.example.com/app-%d:1.%d\n"+
		"        envFrom: [{secretRef: {name: db-0}}]\n        env: [{name: P, valueFrom: {secretKeyRef: {name: es-0, key: P}}}]\n", a, rev)
	es := []entry{
		reg("apps/base/kustomization.yaml", "resources: [all.yaml]\nsecretGenerator:\n- name: gen\n  literals: [A=1, B=2]\n"),
		reg("apps/base/all.yaml", base.String()),
	}
	for o := 0; o < 5; o++ {
		dir := fmt.Sprintf("apps/overlays/o%d/", o)
		es = append(es,
			reg(dir+"kustomization.yaml", fmt.Sprintf("resources: [../../base, es.yaml]\npatches:\n- path: p.yaml\nsecretGenerator:\n- name: ov\n  literals: [X=%d, Y=%d]\n", o, rev)),
			reg(dir+"p.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db-1}\nstringData: {EXTRA: e}\n"),
			reg(dir+"es.yaml", fmt.Sprintf("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: extra}\nspec:\n"+
				"  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: extra-%d}\n  dataFrom: [{extract: {key: app-%d/extra}}]\n", o, a)))
	}
	return es
}

// scaleSource serves every artifact's current tarball by URL path.
type scaleSource struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (s *scaleSource) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	body, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	status := http.StatusOK
	if !ok {
		status = http.StatusNotFound
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(strings.NewReader(string(body))),
		ContentLength: int64(len(body)), Header: http.Header{}, Request: r}, nil
}

// scaleWorld: the store with N Kustomizations and N/10 GitRepositories, the
// in-memory source-controller, and each artifact's tarballs at revisions 0
// and 1.
type scaleWorld struct {
	n     int
	store *model.Store
	src   *scaleSource
	fp    *model.Fingerprinter
	specs map[model.Ref]map[string]any
	tgz   [][2][]byte // [artifact][rev]
	rev   []int       // current revision per artifact
}

func scaleSourceName(a int) string { return fmt.Sprintf("app-%03d", a) }

func scaleURLPath(a int) string {
	return "/gitrepository/flux-system/" + scaleSourceName(a) + "/latest.tar.gz"
}

func newScaleWorld(b *testing.B, n int) *scaleWorld {
	b.Helper()
	w := &scaleWorld{n: n, store: model.NewStore(nil), src: &scaleSource{files: map[string][]byte{}},
		fp: model.NewFingerprinterWithKey([]byte("bench")), specs: map[model.Ref]map[string]any{}}
	arts := n / scaleKSPerArtifact
	for a := 0; a < arts; a++ {
		w.tgz = append(w.tgz, [2][]byte{tarGz(b, scaleArtifactFiles(a, 0)...), tarGz(b, scaleArtifactFiles(a, 1)...)})
		w.rev = append(w.rev, 0)
		w.publish(a, 0)
		for k := 0; k < scaleKSPerArtifact; k++ {
			name := fmt.Sprintf("%s-k%d", scaleSourceName(a), k)
			spec := map[string]any{"path": fmt.Sprintf("./apps/overlays/o%d", k%5), "prune": true, "interval": "10m",
				"sourceRef":       map[string]any{"kind": "GitRepository", "name": scaleSourceName(a)},
				"targetNamespace": fmt.Sprintf("team-%03d-%d", a, k), "namePrefix": fmt.Sprintf("k%d-", k),
				"postBuild": map[string]any{"substitute": map[string]any{"ENV": fmt.Sprintf("env%d", k), "CLUSTER": "prod"}}}
			ref := model.Ref{Namespace: "flux-system", Name: name}
			w.specs[ref] = spec
			ks := mt.Kustomization("flux-system", name)
			ks.SourceName = scaleSourceName(a)
			ks.Path = spec["path"].(string)
			ks.BuildKey = flux.BuildKey(w.fp, spec)
			w.store.UpsertKustomization(ks)
		}
	}
	return w
}

// publish serves artifact a at revision rev and records it in its
// GitRepository's status.
func (w *scaleWorld) publish(a, rev int) {
	body := w.tgz[a][rev]
	w.src.mu.Lock()
	w.src.files[scaleURLPath(a)] = body
	w.src.mu.Unlock()
	src := mt.GitRepository("flux-system", scaleSourceName(a))
	src.ArtifactURL = "http://source-controller.flux-system.svc.cluster.local." + scaleURLPath(a)
	src.ArtifactDigest = sha("sha256", body)
	src.ArtifactRevision = "main@sha1:" + strings.TrimPrefix(src.ArtifactDigest, "sha256:")[:40]
	w.store.UpsertFluxSource(src)
	w.rev[a] = rev
}

func (w *scaleWorld) poller() *Poller {
	return &Poller{Fetcher: &Fetcher{Transport: w.src}, Interval: time.Hour, FP: w.fp,
		GetKustomization: func(_ context.Context, ns, name string) (map[string]any, error) {
			return map[string]any{"spec": w.specs[model.Ref{Namespace: ns, Name: name}]}, nil
		}}
}

// forget drops every recorded build.
func (w *scaleWorld) forget() {
	var refs []model.Ref
	w.store.Read(func(v model.View) {
		for _, k := range v.Kustomizations() {
			refs = append(refs, model.Ref{Namespace: k.Namespace, Name: k.Name})
		}
	})
	for _, r := range refs {
		w.store.SetFluxDesired(r, nil)
	}
}

// judged counts the Kustomizations with a judged build and their objects.
func (w *scaleWorld) judged() (ks, objs int) {
	w.store.Read(func(v model.View) {
		for _, k := range v.Kustomizations() {
			if d, ok := v.FluxDesiredOf(k.Namespace, k.Name); ok && d.Judged() {
				ks++
				objs += len(d.Objects)
			}
		}
	})
	return ks, objs
}

func scaleSizes() []int {
	if os.Getenv("DRIFTWATCH_BENCH_SCALE") != "" {
		return []int{100, 1000}
	}
	return []int{10, 50}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkFluxScale:
//   - initial/ks=N: one Round of a fresh poller over N Kustomizations never
//     built (every artifact downloaded once, every Kustomization built):
//     the agent's start. Reports ns/kustomization and heap-B/kustomization
//     (live heap the desired state adds to the store, after GC).
//   - revision/ks=N: one artifact's revision changes (its 10 Kustomizations
//     rebuilt, one download), then one Round: the cost of a commit.
//   - idle/ks=N: a Round with nothing changed (every poll interval).
func BenchmarkFluxScale(b *testing.B) {
	// One build first: kustomize's and the poller's one-time allocations
	// stay out of the first size's heap figure.
	warm := newScaleWorld(b, scaleKSPerArtifact)
	warm.poller().Round(context.Background(), warm.store)
	for _, n := range scaleSizes() {
		w := newScaleWorld(b, n)
		b.Run("initial/ks="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			var heap float64
			for b.Loop() {
				b.StopTimer()
				w.forget() // every Kustomization unbuilt, as at the agent's start
				before := liveHeap()
				p := w.poller()
				b.StartTimer()
				p.Round(context.Background(), w.store)
				b.StopTimer()
				heap = float64(int64(liveHeap())-int64(before)) / float64(n)
				runtime.KeepAlive(p)
				b.StartTimer()
			}
			if ks, objs := w.judged(); ks != n || objs != n*10 {
				b.Fatalf("%d of %d Kustomizations judged, %d objects (want %d)", ks, n, objs, n*10)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/kustomization")
			b.ReportMetric(heap, "heap-B/kustomization")
			b.ReportMetric(heap*float64(n)/(1<<20), "heap-MiB")
		})
		p := w.poller()
		p.Round(context.Background(), w.store)
		b.Run("revision/ks="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			a := 0
			before := p.Fetches()
			for b.Loop() {
				b.StopTimer()
				w.publish(a, 1-w.rev[a])
				a = (a + 1) % len(w.tgz)
				b.StartTimer()
				p.Round(context.Background(), w.store)
			}
			if got := p.Fetches() - before; got != uint64(b.N) {
				b.Fatalf("%d downloads for %d revisions", got, b.N)
			}
		})
		b.Run("idle/ks="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			before := p.Fetches()
			for b.Loop() {
				p.Round(context.Background(), w.store)
			}
			if p.Fetches() != before {
				b.Fatal("an idle round downloaded")
			}
		})
	}
}

// BenchmarkFluxScaleBuildOne: build.Build alone of one Kustomization of the
// artifact above (no download, no store): the unit the rounds multiply.
func BenchmarkFluxScaleBuildOne(b *testing.B) {
	fs, err := ReadTarGz(context.Background(), tarGz(b, scaleArtifactFiles(0, 0)...), DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	ks := map[string]any{"spec": map[string]any{"path": "./apps/overlays/o1", "targetNamespace": "team", "namePrefix": "k1-",
		"postBuild": map[string]any{"substitute": map[string]any{"ENV": "env1"}}}}
	b.ReportAllocs()
	for b.Loop() {
		r, err := build.Build(ks, fs)
		if err != nil || len(r.Objects) != 10 {
			b.Fatalf("%v: %d objects", err, len(r.Objects))
		}
	}
}
