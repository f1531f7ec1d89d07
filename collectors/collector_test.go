package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// testStore: Secret db lacks the key password that the ExternalSecret db (an
// hour late: refreshed 4h ago every 1h) and, optionally, the two api pods
// expect; the pods also read the absent Secret gone whole.
func testStore() *model.Store {
	now := time.Unix(10000, 0)
	s := model.NewStore(nil)
	s.UpsertSecret(mt.Secret("app", "db", "user"), now)
	s.UpsertSecret(mt.Secret("app", "ok", "a"), now)
	for _, n := range []string{"api-1", "api-2"} {
		s.UpsertPod(mt.WithWorkload(mt.Pod("app", n, mt.OptEnv("db", "password"), mt.Env("ok", "a"), mt.EnvFrom("gone")), "Deployment", "api"))
	}
	s.UpsertExternalSecret(mt.BareES("app", "db", mt.ESData("user", "password"), mt.ESStore("SecretStore", "vault"),
		mt.ESReady("True", "SecretSynced"), mt.ESRefreshed(now.Add(-4*time.Hour), time.Hour, true)), time.Time{})
	return s
}

const findingsHelp = `
# HELP driftwatch_secret_missing_key 1 for each key an expectation names that the Secret lacks; optional="true" when only optional references (secretKeyRef or volume items with optional: true) name it.
# TYPE driftwatch_secret_missing_key gauge
driftwatch_secret_missing_key{key="password",namespace="app",optional="false",secret="db",source="externalsecret"} 1
driftwatch_secret_missing_key{key="password",namespace="app",optional="true",secret="db",source="pod"} 1
# HELP driftwatch_secret_absent 1 when a Secret that an expectation names does not exist.
# TYPE driftwatch_secret_absent gauge
driftwatch_secret_absent{namespace="app",secret="gone",source="pod"} 1
# HELP driftwatch_externalsecret_ready_but_short Expected keys missing from the target of an ExternalSecret that reports Ready=True.
# TYPE driftwatch_externalsecret_ready_but_short gauge
driftwatch_externalsecret_ready_but_short{externalsecret="db",namespace="app",reason="missing_keys",secret="db"} 1
# HELP driftwatch_externalsecret_sync_overdue 1 when the sync age exceeds the configured multiple of refreshInterval.
# TYPE driftwatch_externalsecret_sync_overdue gauge
driftwatch_externalsecret_sync_overdue{externalsecret="db",namespace="app"} 1
# HELP driftwatch_secret_missing_key_consumer_pods Pods of a workload that expect keys the Secret lacks (or the Secret itself, when absent).
# TYPE driftwatch_secret_missing_key_consumer_pods gauge
driftwatch_secret_missing_key_consumer_pods{namespace="app",secret="db",workload="api",workload_kind="Deployment"} 2
driftwatch_secret_missing_key_consumer_pods{namespace="app",secret="gone",workload="api",workload_kind="Deployment"} 2
`

func TestFindingsCollector(t *testing.T) {
	c := NewFindings(testStore(), mt.HealthAll(), Config{Inventory: true, Now: func() time.Time { return time.Unix(10000, 0) }})
	if err := testutil.CollectAndCompare(c, strings.NewReader(findingsHelp),
		"driftwatch_secret_missing_key", "driftwatch_secret_absent", "driftwatch_externalsecret_ready_but_short",
		"driftwatch_externalsecret_sync_overdue", "driftwatch_secret_missing_key_consumer_pods"); err != nil {
		t.Fatal(err)
	}
	// Every metric the collector emits is consistent with its descriptors.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestNoKeyLabel(t *testing.T) {
	c := NewFindings(testStore(), mt.HealthAll(), Config{NoKeyLabel: true, Now: func() time.Time { return time.Unix(10000, 0) }})
	if n := testutil.CollectAndCount(c, "driftwatch_secret_missing_key"); n != 0 {
		t.Fatalf("with NoKeyLabel no series may carry a key: %d", n)
	}
	want := `
# HELP driftwatch_secret_missing_keys Number of expected keys the Secret lacks, per expectation source and optionality.
# TYPE driftwatch_secret_missing_keys gauge
driftwatch_secret_missing_keys{namespace="app",optional="false",secret="db",source="externalsecret"} 1
driftwatch_secret_missing_keys{namespace="app",optional="true",secret="db",source="pod"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "driftwatch_secret_missing_keys"); err != nil {
		t.Fatal(err)
	}
}

// Before the Secret cache syncs, nothing may be reported: every Secret would look absent.
func TestNothingBeforeSync(t *testing.T) {
	h := mt.HealthAll()
	h[model.ResSecrets] = false
	c := NewFindings(testStore(), h, Config{Inventory: true})
	for _, m := range []string{"driftwatch_secret_missing_key", "driftwatch_secret_absent", "driftwatch_externalsecret_ready_but_short"} {
		if n := testutil.CollectAndCount(c, m); n != 0 {
			t.Fatalf("%s: %d series before sync", m, n)
		}
	}
	got := prometheus.NewRegistry()
	got.MustRegister(c)
	mfs, err := got.Gather()
	if err != nil {
		t.Fatal(err)
	}
	enabled := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "driftwatch_detector_enabled" {
			for _, m := range mf.Metric {
				enabled[m.Label[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if enabled["missing_keys"] != 0 || enabled["ready_but_short"] != 0 {
		t.Fatalf("detectors that need Secrets must be disabled: %v", enabled)
	}
	if enabled["sync_health"] != 1 {
		t.Fatalf("sync_health does not need Secrets and must keep running: %v", enabled)
	}
}

// Missing ESO CRDs disable the ESO detectors but not the pod-based ones.
func TestMissingCRDDegradesPerDetector(t *testing.T) {
	h := mt.HealthAll()
	h[model.ResExternalSecrets] = false
	c := NewFindings(testStore(), h, Config{})
	if n := testutil.CollectAndCount(c, "driftwatch_externalsecret_ready_but_short"); n != 0 {
		t.Fatal("ready_but_short must be silent without ExternalSecrets")
	}
	want := `
# HELP driftwatch_secret_missing_key 1 for each key an expectation names that the Secret lacks; optional="true" when only optional references (secretKeyRef or volume items with optional: true) name it.
# TYPE driftwatch_secret_missing_key gauge
driftwatch_secret_missing_key{key="password",namespace="app",optional="true",secret="db",source="pod"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "driftwatch_secret_missing_key"); err != nil {
		t.Fatal(err)
	}
}

func TestJoinBounded(t *testing.T) {
	if got := joinBounded([]string{"a", "bb", "ccc"}, 100); got != "a,bb,ccc" {
		t.Fatal(got)
	}
	if got := joinBounded([]string{"aaaa", "bbbb", "cccc"}, 10); got != "aaaa,bbbb" {
		t.Fatalf("cut on a name boundary: %q", got)
	}
	if got := joinBounded([]string{"aaaa", "bbbb", "cccc"}, 13); len(got) > 13 {
		t.Fatalf("too long: %q", got)
	}
}
