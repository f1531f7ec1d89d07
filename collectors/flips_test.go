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

var flNow = time.Unix(1_800_000_000, 0).UTC()

// flPod is a Running pod of Deployment api in namespace shop whose pod and
// container "app" started at started.
func flPod(name string, started time.Time, uses ...model.SecretUse) *model.Pod {
	return mt.StartedAt(mt.WithWorkload(mt.Pod("shop", name, uses...), "Deployment", "api"), started, started)
}

// flStore: session-key flipped twice by two writers (flapping), cache-key once
// (below the threshold), api-creds rotated once an hour after two of three api
// pods started; web-config is read once and only known from managedFields;
// tls is mounted as a plain volume and changed (never stale, no timestamp).
func flStore() *model.Store {
	s := model.NewStore(nil)
	const eso = "externalsecrets.external-secrets.io/session-key"
	at := func(m int) time.Time { return flNow.Add(time.Duration(m-10) * time.Minute) }
	for i, w := range []struct{ val, mgr string }{{"A", eso}, {"B", "kubectl-client-side-apply"}, {"A", eso}, {"B", "kubectl-client-side-apply"}} {
		s.UpsertSecret(mt.WithManagers(mt.SecretValues("shop", "session-key", "KEY", w.val), mt.Write(w.mgr, at(i))), at(i))
	}
	for i, val := range []string{"X", "Y", "X"} {
		s.UpsertSecret(mt.WithManagers(mt.SecretValues("shop", "cache-key", "KEY", val), mt.Write("cache-operator", at(i))), at(i))
	}
	s.UpsertSecret(mt.SecretValues("shop", "api-creds", "pass", "P1"), flNow.Add(-2*time.Hour))
	s.UpsertSecret(mt.SecretValues("shop", "api-creds", "pass", "P2"), flNow.Add(-time.Hour))
	s.UpsertSecret(mt.SecretValues("shop", "tls", "crt", "C1"), flNow.Add(-2*time.Hour))
	s.UpsertSecret(mt.SecretValues("shop", "tls", "crt", "C2"), flNow.Add(-time.Hour))
	s.UpsertSecret(mt.WithManagers(mt.SecretValues("shop", "web-config", "A", "a"), mt.Write("helm", flNow.Add(-48*time.Hour))), flNow.Add(-2*time.Hour))
	uses := []model.SecretUse{mt.Env("api-creds", "pass"), mt.EnvFrom("web-config"), mt.Use("tls", "", model.ViaVolume)}
	s.UpsertPod(flPod("api-1", flNow.Add(-90*time.Minute), uses...))
	s.UpsertPod(flPod("api-2", flNow.Add(-100*time.Minute), uses...))
	s.UpsertPod(flPod("api-3", flNow.Add(-10*time.Minute), uses...)) // restarted after the change
	return s
}

var flipsMetrics = []string{"driftwatch_secret_flips_total", "driftwatch_secret_flapping", "driftwatch_pod_stale_secret_seconds",
	"driftwatch_workload_stale_pods", "driftwatch_secret_last_data_change_timestamp_seconds"}

const flipsHelp = `
# HELP driftwatch_secret_flips_total Times a key of the Secret returned to an earlier value (A→B→A) since driftwatch started; only Secrets that flipped.
# TYPE driftwatch_secret_flips_total counter
driftwatch_secret_flips_total{namespace="shop",secret="cache-key"} 1
driftwatch_secret_flips_total{namespace="shop",secret="session-key"} 2
`

const flappingHelp = `
# HELP driftwatch_secret_flapping Flips of the Secret within the history window, when at least the flapping threshold; writers are the managedFields managers that wrote its data in the window.
# TYPE driftwatch_secret_flapping gauge
driftwatch_secret_flapping{namespace="shop",secret="session-key",writers="externalsecrets.external-secrets.io/session-key,kubectl-client-side-apply"} 2
`

const staleHelp = `
# HELP driftwatch_pod_stale_secret_seconds Seconds after the container started that a Secret it read once at start (env, envFrom, subPath) changed: it still runs the old value. change_source: observed (the watch saw the change) or managed_fields (inferred at start-up; a metadata-only edit by a data owner also moves it).
# TYPE driftwatch_pod_stale_secret_seconds gauge
driftwatch_pod_stale_secret_seconds{change_source="observed",container="app",namespace="shop",pod="api-1",secret="api-creds",via="env"} 1800
driftwatch_pod_stale_secret_seconds{change_source="observed",container="app",namespace="shop",pod="api-2",secret="api-creds",via="env"} 2400
# HELP driftwatch_workload_stale_pods Running pods of a workload with a container older than the last data change of a Secret it read once at start. change_source: observed when the watch saw a change one of them missed, else managed_fields (inferred).
# TYPE driftwatch_workload_stale_pods gauge
driftwatch_workload_stale_pods{change_source="observed",namespace="shop",secret="api-creds",workload="api",workload_kind="Deployment"} 2
# HELP driftwatch_secret_last_data_change_timestamp_seconds Time of the Secret's last data change, for Secrets that running containers read once at start; source is observed (seen by the watch) or managed_fields (start-up estimate).
# TYPE driftwatch_secret_last_data_change_timestamp_seconds gauge
driftwatch_secret_last_data_change_timestamp_seconds{namespace="shop",secret="api-creds",source="observed"} 1.7999964e+09
driftwatch_secret_last_data_change_timestamp_seconds{namespace="shop",secret="web-config",source="managed_fields"} 1.7998272e+09
`

func TestFlipsAndStalePodsCollector(t *testing.T) {
	c := NewFindings(flStore(), mt.HealthOnly(model.ResSecrets, model.ResPods), Config{Now: func() time.Time { return flNow }})
	if err := testutil.CollectAndCompare(c, strings.NewReader(flipsHelp+flappingHelp+staleHelp), flipsMetrics...); err != nil {
		t.Fatal(err)
	}
}

func TestFlapThreshold(t *testing.T) {
	c := NewFindings(flStore(), mt.HealthOnly(model.ResSecrets), Config{Now: func() time.Time { return flNow }, FlapThreshold: 1})
	want := flappingHelp + `driftwatch_secret_flapping{namespace="shop",secret="cache-key",writers="cache-operator"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "driftwatch_secret_flapping"); err != nil {
		t.Fatal(err)
	}
	// Out of the window: flips stay counted, nothing flaps.
	c = NewFindings(flStore(), mt.HealthOnly(model.ResSecrets), Config{Now: func() time.Time { return flNow.Add(2 * time.Hour) }, FlapThreshold: 1})
	if err := testutil.CollectAndCompare(c, strings.NewReader(flipsHelp), "driftwatch_secret_flips_total", "driftwatch_secret_flapping"); err != nil {
		t.Fatal(err)
	}
}

func TestFlipsAndStalePodsNeedTheirCaches(t *testing.T) {
	// Pods not synced: the stale_pods detector is off, flips still run.
	c := NewFindings(flStore(), mt.HealthOnly(model.ResSecrets), Config{Now: func() time.Time { return flNow }})
	if err := testutil.CollectAndCompare(c, strings.NewReader(flipsHelp+flappingHelp), flipsMetrics...); err != nil {
		t.Fatal(err)
	}
	// Secrets not synced: nothing at all.
	c = NewFindings(flStore(), mt.HealthOnly(model.ResPods), Config{Now: func() time.Time { return flNow }})
	if err := testutil.CollectAndCompare(c, strings.NewReader(""), flipsMetrics...); err != nil {
		t.Fatal(err)
	}
	// driftwatch_detector_enabled says which of the two runs.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewFindings(flStore(), mt.HealthOnly(model.ResSecrets), Config{Now: func() time.Time { return flNow }}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "driftwatch_detector_enabled" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if got["flips"] != 1 || got["stale_pods"] != 0 {
		t.Errorf("detector_enabled = %v", got)
	}
}

func TestWritersLabelBounded(t *testing.T) {
	s := model.NewStore(nil)
	long := strings.Repeat("m", 90)
	// The first record is an add: its writer (a) wrote before anything was observed.
	for i := 0; i < 6; i++ {
		val := []string{"A", "B"}[i%2]
		s.UpsertSecret(mt.WithManagers(mt.SecretValues("ns", "s", "K", val), mt.Write(long+string(rune('a'+i)), flNow.Add(time.Duration(i)*time.Second))),
			flNow.Add(time.Duration(i)*time.Second))
	}
	c := NewFindings(s, mt.HealthOnly(model.ResSecrets), Config{Now: func() time.Time { return flNow.Add(10 * time.Second) }})
	want := flappingHelp[:strings.Index(flappingHelp, "driftwatch_secret_flapping{")] +
		`driftwatch_secret_flapping{namespace="ns",secret="s",writers="` + long + "b," + long + `c,..."} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "driftwatch_secret_flapping"); err != nil {
		t.Fatal(err)
	}
}
