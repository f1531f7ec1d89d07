package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// A store ESO cannot read (issue 32): one finding for the store, whose
// evidence says what ESO says of the store; each ExternalSecret's not-ready
// evidence names its store and its last successful sync.
func TestStoreReadFailingEvidence(t *testing.T) {
	now := mt.T0.Add(time.Hour)
	failed := func(e *model.ExternalSecret) {
		e.Ready = model.Condition{Status: "False", Reason: "SecretSyncedError"}
		e.ProviderReadFailed = true
	}
	s := mt.NewStore(t,
		mt.ES("app", "db", mt.ESStore("SecretStore", "remote"), failed, mt.ESRefreshed(now.Add(-90*time.Second), time.Minute, true)),
		mt.ES("app", "api", mt.ESStore("SecretStore", "remote"), failed, mt.ESRefreshed(now.Add(-30*time.Second), time.Minute, true)),
		mt.ES("app", "ok", mt.ESStore("SecretStore", "remote"), mt.ESRefreshed(now, time.Minute, true)),
		mt.SecretStore("app", "remote", mt.StoreReady("True", "ValidationUnknown")),
	)
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	ev := c.Run()
	fs := ev.Findings
	if len(ev.Failed) > 0 {
		t.Fatal(ev.Failed)
	}
	var store, notReady string
	for _, f := range fs {
		switch {
		case f.Metric == "driftwatch_secretstore_read_failing":
			if f.Value != 2 || f.Labels["store"] != "remote" || f.Labels["kind"] != "SecretStore" || f.Labels["namespace"] != "app" {
				t.Errorf("store finding %v = %g", f.Labels, f.Value)
			}
			store = f.Evidence
		case f.Metric == "driftwatch_externalsecret_not_ready" && f.Labels["externalsecret"] == "db":
			notReady = f.Evidence
		}
	}
	for _, want := range []string{"2 of the 3 ExternalSecrets using it", "oldest last successful sync was 1m30s ago", "ESO says the store is Ready (reason ValidationUnknown)"} {
		if !strings.Contains(store, want) {
			t.Errorf("store evidence %q lacks %q", store, want)
		}
	}
	for _, want := range []string{"could not get its data from the provider (SecretStore remote)", "last successful sync 1m30s ago"} {
		if !strings.Contains(notReady, want) {
			t.Errorf("not-ready evidence %q lacks %q", notReady, want)
		}
	}
}

// driftwatch.io/ignore on an ExternalSecret keeps its overdue finding and its
// age out (emitSyncHealth hands the emitter the ExternalSecret's metadata
// instead of a lookup per series), and the finding is counted as silenced.
func TestSyncAgeHonoursIgnore(t *testing.T) {
	now := mt.T0.Add(time.Hour)
	ignored := func(e *model.ExternalSecret) { e.Annotations = map[string]string{model.AnnIgnore: "sync_health"} }
	other := func(e *model.ExternalSecret) { e.Annotations = map[string]string{model.AnnIgnore: "missing_keys"} }
	old := mt.ESRefreshed(now.Add(-time.Hour), time.Minute, true)
	s := mt.NewStore(t, mt.ES("app", "quiet", old, ignored), mt.ES("app", "loud", old, other))
	text := gatherText(t, NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }}))
	for _, want := range []string{
		`driftwatch_externalsecret_sync_overdue{externalsecret="loud",namespace="app"} 1`,
		`driftwatch_externalsecret_sync_age_seconds{externalsecret="loud",namespace="app"} 3600`,
		`driftwatch_findings_silenced{detector="sync_health",namespace="app"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "driftwatch_externalsecret_sync_") && strings.Contains(l, `externalsecret="quiet"`) {
			t.Errorf("an ExternalSecret ignoring sync_health exported %s", l)
		}
	}
}
