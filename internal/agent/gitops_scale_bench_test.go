package agent_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/model"
)

// The GitOps paths at scale (issue 35 item 3), without an apiserver: fake
// clientsets holding N Flux Kustomizations over N/10 GitRepository artifacts
// (with the Secrets and ExternalSecrets they declare) or N Argo CD
// Applications (with the Secrets and ExternalSecrets they manage), synced
// through the agent's real informers, transforms and model; for Flux the
// agent's own artifact poller (StartFlux, its Transport an in-memory
// source-controller) builds every Kustomization before the scrape is timed.
// The Argo CD API poller is not run (no desired state from the API: the
// Applications' own status only).
//
// Sizes: Flux 10 and 50 Kustomizations (each build costs ~0.2-0.4 s:
// internal/flux/desired's BenchmarkFluxScale), Argo CD 100 and 1,000
// Applications; DRIFTWATCH_BENCH_SCALE set (any value) makes them 100 and
// 1,000 Kustomizations and 100, 1,000 and 2,000 Applications. Numbers, never
// assertions:
//
//	go test -run '^$' -bench 'ScrapeFlux|ScrapeArgoCD' -benchmem ./internal/agent/

func gitopsScaled() bool { return os.Getenv("DRIFTWATCH_BENCH_SCALE") != "" }

// gitopsCluster is a fake cluster: core objects, dynamic objects, and the
// tarballs the in-memory source-controller serves by URL path.
type gitopsCluster struct {
	core      []k8sruntime.Object
	dyn       []k8sruntime.Object
	artifacts map[string][]byte
}

func (c *gitopsCluster) RoundTrip(r *http.Request) (*http.Response, error) {
	body, ok := c.artifacts[r.URL.Path]
	status := http.StatusOK
	if !ok {
		status = http.StatusNotFound
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Header: http.Header{}, Request: r}, nil
}

func (c *gitopsCluster) secret(ns, name string, keys ...string) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-s-" + ns + "-" + name)},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte(ns + "/" + name + "/" + k) // distinct: no duplicate-credential findings
	}
	c.core = append(c.core, s)
}

func (c *gitopsCluster) externalSecret(ns, name, target string, keys ...string) {
	now := time.Now().UTC().Format(time.RFC3339)
	var data []any
	for _, k := range keys {
		data = append(data, map[string]any{"secretKey": k, "remoteRef": map[string]any{"key": ns + "/" + target}})
	}
	c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-e-" + ns + "-" + name},
		"spec": map[string]any{"refreshInterval": "1h", "secretStoreRef": map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
			"target": map[string]any{"name": target, "creationPolicy": "Owner"}, "data": data},
		"status": map[string]any{"refreshTime": now, "conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "SecretSynced", "lastTransitionTime": now}}},
	}})
}

// gitopsTarGz is the application repository of artifact a (the shape of
// internal/flux/desired's scaleArtifactFiles: a base of 4 Secrets, 3
// ExternalSecrets, a secretGenerator, a ConfigMap and a Deployment; five
// overlays with a patch, a secretGenerator and one more ExternalSecret).
func gitopsTarGz(b *testing.B, a int) []byte {
	var base strings.Builder
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&base, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-%d\ntype: Opaque\nstringData:\n  USER: app\n  PASSWORD: p\n  HOST: db.svc\n  PORT: \"5432\"\n---\n", i)
	}
	base.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: env-${ENV}\nstringData:\n  KEY_${ENV}: v\n  OTHER: w\n---\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&base, "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: es-%d\nspec:\n  refreshInterval: 1h\n"+
			"  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: es-%d, creationPolicy: Owner}\n  data:\n"+
			"  - {secretKey: U, remoteRef: {key: app-%d/u}}\n  - {secretKey: P, remoteRef: {key: app-%d/p}}\n  - {secretKey: T, remoteRef: {key: app-%d/t}}\n---\n", i, i, a, a, a)
	}
	base.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  LOG: info\n---\n")
	base.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n" +
		"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: app:1\n")
	files := [][2]string{
		{"apps/base/kustomization.yaml", "resources: [all.yaml]\nsecretGenerator:\n- name: gen\n  literals: [A=1, B=2]\n"},
		{"apps/base/all.yaml", base.String()},
	}
	for o := 0; o < 5; o++ {
		dir := fmt.Sprintf("apps/overlays/o%d/", o)
		files = append(files,
			[2]string{dir + "kustomization.yaml", fmt.Sprintf("resources: [../../base, es.yaml]\npatches:\n- path: p.yaml\nsecretGenerator:\n- name: ov\n  literals: [X=%d]\n", o)},
			[2]string{dir + "p.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db-1}\nstringData: {EXTRA: e}\n"},
			[2]string{dir + "es.yaml", fmt.Sprintf("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: extra}\nspec:\n"+
				"  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: extra-%d}\n  dataFrom: [{extract: {key: app-%d/extra}}]\n", o, a)})
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f[1])), ModTime: time.Unix(0, 0)}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.WriteString(tw, f[1]); err != nil {
			b.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(tb.Bytes())
	_ = zw.Close()
	return gz.Bytes()
}

// buildFluxCluster: n Kustomizations (10 per GitRepository, overlay k%5, own
// targetNamespace, namePrefix and postBuild.substitute), applied (Ready,
// inventory of their Secrets and ExternalSecrets) with the Secrets and
// ExternalSecrets of their builds in the cluster (the generated, hashed ones
// and the ExternalSecrets' targets aside); one Kustomization in ten has a
// Secret lacking a key Git declares.
func buildFluxCluster(b *testing.B, n int) *gitopsCluster {
	c := &gitopsCluster{artifacts: map[string][]byte{}}
	now := time.Now().UTC().Format(time.RFC3339)
	ready := []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "lastTransitionTime": now}}
	for a := 0; a < n/10; a++ {
		src := fmt.Sprintf("app-%03d", a)
		p := "/gitrepository/flux-system/" + src + "/latest.tar.gz"
		body := gitopsTarGz(b, a)
		c.artifacts[p] = body
		sum := sha256.Sum256(body)
		digest := hex.EncodeToString(sum[:])
		rev := "main@sha1:" + digest[:40]
		c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
			"metadata": map[string]any{"name": src, "namespace": "flux-system", "uid": "uid-g-" + src, "generation": int64(1)},
			"spec":     map[string]any{"url": "https://git.example.com/" + src, "interval": "1m", "ref": map[string]any{"branch": "main"}},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": ready,
				"artifact": map[string]any{"url": "http://source-controller.flux-system.svc.cluster.local." + p,
					"revision": rev, "digest": "sha256:" + digest, "path": "x", "lastUpdateTime": now}},
		}})
		for k := 0; k < 10; k++ {
			name := fmt.Sprintf("%s-k%d", src, k)
			ns := fmt.Sprintf("team-%03d-%d", a, k)
			pre := fmt.Sprintf("k%d-", k)
			env := fmt.Sprintf("env%d", k)
			var inv []any
			add := func(group, kind, obj string) {
				inv = append(inv, map[string]any{"id": ns + "_" + obj + "_" + group + "_" + kind, "v": "v1"})
			}
			for i := 0; i < 3; i++ {
				keys := []string{"USER", "PASSWORD", "HOST", "PORT"}
				if i == 1 {
					keys = append(keys, "EXTRA")
				}
				if i == 2 && k == 0 {
					keys = keys[:3] // drift: PORT gone from the cluster
				}
				c.secret(ns, fmt.Sprintf("%sdb-%d", pre, i), keys...)
				add("", "Secret", fmt.Sprintf("%sdb-%d", pre, i))
				c.externalSecret(ns, fmt.Sprintf("%ses-%d", pre, i), fmt.Sprintf("es-%d", i), "U", "P", "T")
				add("external-secrets.io", "ExternalSecret", fmt.Sprintf("%ses-%d", pre, i))
				c.secret(ns, fmt.Sprintf("es-%d", i), "U", "P", "T")
			}
			c.secret(ns, pre+"env-"+env, "KEY_"+env, "OTHER")
			add("", "Secret", pre+"env-"+env)
			c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
				"metadata": map[string]any{"name": name, "namespace": "flux-system", "uid": "uid-k-" + name, "generation": int64(1)},
				"spec": map[string]any{"interval": "10m", "path": fmt.Sprintf("./apps/overlays/o%d", k%5), "prune": true,
					"sourceRef":       map[string]any{"kind": "GitRepository", "name": src},
					"targetNamespace": ns, "namePrefix": pre,
					"postBuild": map[string]any{"substitute": map[string]any{"ENV": env, "CLUSTER": "prod"}}},
				"status": map[string]any{"observedGeneration": int64(1), "conditions": ready,
					"lastAppliedRevision": rev, "lastAttemptedRevision": rev, "inventory": map[string]any{"entries": inv}},
			}})
		}
	}
	c.vault()
	return c
}

func (c *gitopsCluster) vault() {
	now := time.Now().UTC().Format(time.RFC3339)
	c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore",
		"metadata": map[string]any{"name": "vault"},
		"spec":     map[string]any{"provider": map[string]any{"vault": map[string]any{"server": "https://vault:8200"}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Valid",
			"lastTransitionTime": now}}},
	}})
}

// buildArgoCluster: n Applications in argocd, each deploying to its own
// namespace 2 Secrets and 2 ExternalSecrets (with their targets), a
// Deployment and a Service; automated with selfHeal, ServerSideApply; one in
// five with ignoreDifferences on the ExternalSecrets' data (jqPathExpressions)
// and on a Secret (jsonPointers) and RespectIgnoreDifferences=true; one in
// twenty OutOfSync at a newer revision; one in fifty with a Secret lacking a
// key.
func buildArgoCluster(n int) *gitopsCluster {
	c := &gitopsCluster{}
	t0 := time.Now().UTC().Add(-time.Hour)
	ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app-%04d", i)
		ns := "team-" + name
		rev := fmt.Sprintf("%040x", 1000+i)
		var resources, synced []any
		res := func(group, kind, obj string) {
			r := map[string]any{"group": group, "version": "v1", "kind": kind, "namespace": ns, "name": obj, "status": "Synced"}
			if kind == "Deployment" || kind == "Service" {
				r["health"] = map[string]any{"status": "Healthy"}
			}
			resources = append(resources, r)
			synced = append(synced, map[string]any{"group": group, "version": "v1", "kind": kind, "namespace": ns, "name": obj,
				"status": "Synced", "message": kind + " " + obj + " serverside-applied", "hookPhase": "Running", "syncPhase": "Sync"})
		}
		for j := 0; j < 2; j++ {
			keys := []string{"USER", "PASSWORD", "URL"}
			if j == 1 && i%50 == 0 {
				keys = keys[:2]
			}
			c.secret(ns, fmt.Sprintf("creds-%d", j), keys...)
			res("", "Secret", fmt.Sprintf("creds-%d", j))
			c.externalSecret(ns, fmt.Sprintf("ext-%d", j), fmt.Sprintf("ext-%d", j), "A", "B", "C", "D", "E")
			c.secret(ns, fmt.Sprintf("ext-%d", j), "A", "B", "C", "D", "E")
			res("external-secrets.io", "ExternalSecret", fmt.Sprintf("ext-%d", j))
		}
		res("apps", "Deployment", "web")
		res("", "Service", "web")
		opts := []any{"CreateNamespace=true", "ServerSideApply=true", "PruneLast=true"}
		spec := map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": "https://git.example.com/apps.git", "path": "apps/" + name, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"syncPolicy": map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}, "syncOptions": opts,
				"retry": map[string]any{"limit": int64(5), "backoff": map[string]any{"duration": "5s", "factor": int64(2), "maxDuration": "3m"}}}}
		if i%5 == 0 {
			spec["syncPolicy"].(map[string]any)["syncOptions"] = append(opts, "RespectIgnoreDifferences=true")
			spec["ignoreDifferences"] = []any{
				map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret", "jqPathExpressions": []any{".spec.data[].remoteRef.conversionStrategy"}},
				map[string]any{"kind": "Secret", "name": "creds-1", "jsonPointers": []any{"/data/URL"}},
			}
		}
		status, syncRev := "Synced", rev
		if i%20 == 0 {
			status, syncRev = "OutOfSync", fmt.Sprintf("%040x", 900000+i)
		}
		c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name, "namespace": "argocd", "uid": "uid-a-" + name, "generation": int64(3),
				"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
				"labels":     map[string]any{"team": fmt.Sprintf("t%d", i%10)}},
			"spec": spec,
			"status": map[string]any{
				"sync":      map[string]any{"status": status, "revision": syncRev, "comparedTo": map[string]any{"source": spec["source"], "destination": spec["destination"]}},
				"health":    map[string]any{"status": "Healthy", "lastTransitionTime": ts(0)},
				"resources": resources, "reconciledAt": ts(50 * time.Minute), "sourceType": "Directory",
				"summary": map[string]any{"images": []any{"registry.example.com/" + name + ":1.0"}},
				"history": []any{map[string]any{"id": int64(1), "revision": rev, "deployedAt": ts(time.Minute), "deployStartedAt": ts(0),
					"source": spec["source"]}},
				"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)",
					"startedAt": ts(0), "finishedAt": ts(time.Minute),
					"operation": map[string]any{"sync": map[string]any{"revision": rev}, "initiatedBy": map[string]any{"automated": true},
						"retry": map[string]any{"limit": int64(5)}},
					"syncResult": map[string]any{"revision": rev, "source": spec["source"], "resources": synced}},
			},
		}})
	}
	c.vault()
	return c
}

// startGitOpsAgent runs the agent's informers over c (the scrape bench's
// kinds plus Flux's and Argo CD's) until synced, and, with flux, the Flux
// artifact poller until every Kustomization has a judged build.
func startGitOpsAgent(b *testing.B, c *gitopsCluster, flux bool) (*agent.Agent, func()) {
	b.Helper()
	cs := fake.NewClientset(c.core...)
	fd := cs.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "secrets", Namespaced: true, Kind: "Secret"},
			{Name: "pods", Namespaced: true, Kind: "Pod"}, {Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount"}}},
		{GroupVersion: "external-secrets.io/v1", APIResources: []metav1.APIResource{
			{Name: "externalsecrets", Namespaced: true, Kind: "ExternalSecret"},
			{Name: "secretstores", Namespaced: true, Kind: "SecretStore"},
			{Name: "clustersecretstores", Namespaced: false, Kind: "ClusterSecretStore"}}},
		{GroupVersion: "kustomize.toolkit.fluxcd.io/v1", APIResources: []metav1.APIResource{
			{Name: "kustomizations", Namespaced: true, Kind: "Kustomization"}}},
		{GroupVersion: "source.toolkit.fluxcd.io/v1", APIResources: []metav1.APIResource{
			{Name: "gitrepositories", Namespaced: true, Kind: "GitRepository"}}},
		{GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "applications", Namespaced: true, Kind: "Application"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}:        "ExternalSecretList",
		{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}:           "SecretStoreList",
		{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}:    "ClusterSecretStoreList",
		{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}: "KustomizationList",
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}:   "GitRepositoryList",
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}:             "ApplicationList",
	}, c.dyn...)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := agent.Config{Logger: log, DiscoveryInterval: time.Hour}
	a := agent.New(agent.Clients{Core: cs, Dynamic: dyn, Discovery: cs.Discovery()}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	deadline := time.Now().Add(5 * time.Minute)
	for !a.Manager.Ready() {
		if time.Now().After(deadline) {
			stop()
			b.Fatal("fake cluster did not sync")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !flux {
		return a, stop
	}
	if err := a.StartFlux(ctx, agent.FluxConfig{Artifacts: true, Namespace: "flux-system", PollInterval: 200 * time.Millisecond,
		BuildTimeout: 5 * time.Minute, Logger: log, Transport: c}); err != nil {
		stop()
		b.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Minute)
	for {
		total, judged, unjudged := 0, 0, 0
		a.Store.Read(func(v model.View) {
			for _, k := range v.Kustomizations() {
				total++
				if d, ok := v.FluxDesiredOf(k.Namespace, k.Name); ok {
					if d.Judged() {
						judged++
					} else {
						unjudged++
					}
				}
			}
		})
		if total > 0 && judged == total {
			return a, stop
		}
		if unjudged > 0 || time.Now().After(deadline) {
			stop()
			b.Fatalf("flux builds: %d of %d judged, %d unjudged", judged, total, unjudged)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchScrapeGitOps times GET /metrics of a synced agent and reports the
// series, the seconds the setup took to sync (and build) and the live heap
// of the agent after GC.
func benchScrapeGitOps(b *testing.B, n int, unit string, c *gitopsCluster, flux bool) {
	runtime.GC()
	start := time.Now()
	a, stop := startGitOpsAgent(b, c, flux)
	defer stop()
	setup := time.Since(start)
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	h := a.Handler()
	body := httptest.NewRecorder()
	h.ServeHTTP(body, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	series := countSeries(body.Body.String())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		scrape(b, h, false)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "scrape-ms")
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(setup.Seconds(), "setup-s")
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(m.HeapAlloc)/float64(n), "heap-B/"+unit)
}

// BenchmarkScrapeFlux: one GET /metrics with N Kustomizations' desired state
// (built by the agent's poller) in the model. heap-B/kustomization is the
// whole agent's live heap (fake clientsets included) over N.
func BenchmarkScrapeFlux(b *testing.B) {
	sizes := []int{10, 50}
	if gitopsScaled() {
		sizes = []int{100, 1000}
	}
	for _, n := range sizes {
		c := buildFluxCluster(b, n)
		b.Run("ks="+strconv.Itoa(n), func(b *testing.B) { benchScrapeGitOps(b, n, "kustomization", c, true) })
	}
}

// BenchmarkScrapeArgoCD: one GET /metrics with N Applications (and their
// managed Secrets and ExternalSecrets) in the model. heap-B/app is the whole
// agent's live heap (fake clientsets included) over N.
func BenchmarkScrapeArgoCD(b *testing.B) {
	sizes := []int{100, 1000}
	if gitopsScaled() {
		sizes = append(sizes, 2000)
	}
	for _, n := range sizes {
		c := buildArgoCluster(n)
		b.Run("apps="+strconv.Itoa(n), func(b *testing.B) { benchScrapeGitOps(b, n, "app", c, false) })
	}
}
