package detect

import (
	"fmt"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// Benchmark scale: 10k Secrets with ~5 keys each in 100 namespaces, 20k pods in
// 5k Deployments of 4 replicas, every pod reading two Secrets (env secretKeyRef
// on one, envFrom on the other), 1% of the env references naming a key the
// Secret lacks, and 5k ExternalSecrets (1% of them expecting a key their target
// lacks).
const (
	benchSecrets    = 10000
	benchNamespaces = 100
	benchReplicas   = 4
	benchDeploys    = 5000 // × benchReplicas = 20k pods
	benchKeys       = 5
)

type benchWorld struct {
	store                 *model.Store
	pods, secrets, extsec int
	wantMissingPod        int
	wantMissingES         int
}

func benchSecretRef(i int) (ns, name string) {
	return fmt.Sprintf("ns-%03d", i/(benchSecrets/benchNamespaces)), fmt.Sprintf("secret-%05d", i)
}

func benchKey(k int) string { return fmt.Sprintf("KEY_%d", k) }

func buildBenchWorld(tb testing.TB) *benchWorld {
	tb.Helper()
	w := &benchWorld{store: model.NewStore(nil)}
	keys := make([]string, benchKeys)
	for k := range keys {
		keys[k] = benchKey(k)
	}
	for i := 0; i < benchSecrets; i++ {
		ns, name := benchSecretRef(i)
		w.store.UpsertSecret(mt.Secret(ns, name, keys...), mt.T0)
		w.secrets++
	}
	for d := 0; d < benchDeploys; d++ {
		// Deployment d reads Secret 2d by key and Secret 2d+1 whole; both live in the
		// same namespace (100 Secrets per namespace, an even number).
		ns, envSecret := benchSecretRef(2 * d)
		_, fromSecret := benchSecretRef(2*d + 1)
		key1, key2 := benchKey(d%benchKeys), benchKey((d+1)%benchKeys)
		if d%100 == 0 { // 1% of the workloads name a key their Secret lacks
			key2 = "MISSING_KEY"
			w.wantMissingPod++
		}
		uses := []model.SecretUse{mt.Env(envSecret, key1), mt.Env(envSecret, key2), mt.EnvFrom(fromSecret)}
		for r := 0; r < benchReplicas; r++ {
			p := mt.DeployPod(ns, fmt.Sprintf("deploy-%05d", d), r, uses...)
			w.store.UpsertPod(p)
			w.pods++
		}
	}
	for i := 0; i < benchSecrets; i += 2 { // an ExternalSecret for every other Secret
		ns, name := benchSecretRef(i)
		dk := keys
		if (i/2)%100 == 0 {
			dk = append(append([]string(nil), keys...), "ES_ONLY_KEY")
			w.wantMissingES++
		}
		w.store.UpsertExternalSecret(mt.ES(ns, name+"-es", mt.ESTarget(name), mt.ESData(dk...),
			mt.ESRefreshed(mt.T0.Add(-time.Duration(i%7200)*time.Second), time.Hour, true)), time.Time{})
		w.extsec++
	}
	w.store.UpsertStore(mt.SecretStore("", "vault"))
	if w.pods != benchDeploys*benchReplicas || w.secrets != benchSecrets || w.extsec != benchSecrets/2 {
		tb.Fatalf("bench world: %d pods, %d secrets, %d externalsecrets", w.pods, w.secrets, w.extsec)
	}
	return w
}

// Checks the world is what the benchmark claims before timing it.
func (w *benchWorld) check(tb testing.TB) {
	tb.Helper()
	res := mt.Read(w.store, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	var pod, ext int
	for _, m := range res.Missing {
		switch m.Source {
		case SourcePod:
			pod++
			if len(m.Consumers) != 1 || m.Consumers[0].Pods != benchReplicas {
				tb.Fatalf("pod finding %+v: want one Deployment consumer with %d pods", m, benchReplicas)
			}
		case SourceExternalSecret:
			ext++
		}
	}
	if pod != w.wantMissingPod || ext != w.wantMissingES || len(res.Absent) != 0 {
		tb.Fatalf("bench world: %d pod and %d ES missing keys, %d absent; want %d, %d, 0",
			pod, ext, len(res.Absent), w.wantMissingPod, w.wantMissingES)
	}
}

func TestBenchWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("large fixture")
	}
	buildBenchWorld(t).check(t)
}

var benchSink any

// BenchmarkExpectationJoin measures the missing-keys detector (expectations from
// every source joined with the Secrets) at 10k Secrets / 20k Pods / 5k ExternalSecrets.
func BenchmarkExpectationJoin(b *testing.B) {
	w := buildBenchWorld(b)
	w.check(b)
	avail := mt.All()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.store.Read(func(v model.View) { benchSink = MissingKeys(v, avail) })
	}
}

// BenchmarkExpectations isolates the expectation gathering (no Secret lookups).
func BenchmarkExpectations(b *testing.B) {
	w := buildBenchWorld(b)
	avail := mt.All()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.store.Read(func(v model.View) { benchSink = Expectations(v, avail) })
	}
}

// BenchmarkAllDetectors runs every detector of this package once, as one scrape does.
func BenchmarkAllDetectors(b *testing.B) {
	w := buildBenchWorld(b)
	avail := mt.All()
	now := mt.T0.Add(time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.store.Read(func(v model.View) {
			benchSink = MissingKeys(v, avail)
			benchSink = ReadyButShortES(v, avail)
			benchSink = SyncHealth(v, avail, now, 2)
			benchSink = Inventory(v, avail)
		})
	}
}
