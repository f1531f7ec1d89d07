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

// gitopsStore: an ExternalSecret and a Secret shorter than their last-applied
// annotations, an Application with an ignoreDifferences list trap, one that
// has not converged for 20 minutes (automated), one settling for 5, and a
// manual one behind a newer commit.
func gitopsStore(now time.Time) *model.Store {
	const esG, esK = "external-secrets.io", "ExternalSecret"
	s := model.NewStore(nil)
	s.UpsertExternalSecret(mt.BareES("gitops", "keys", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "B"))), time.Time{})
	s.UpsertSecret(mt.WithLastApplied(mt.Secret("gitops", "plain", "a", "b"), mt.LastAppliedSecret("a", "c")), now)
	s.UpsertApp(mt.App("argocd", "trap", mt.AppRespect(),
		mt.AppIgnore(mt.Ignore(esG, esK, []string{"/spec/data/0/remoteRef"}, []string{".spec.data[]"})),
		mt.AppResources(model.ArgoResource{Group: esG, Kind: esK, Namespace: "gitops", Name: "keys"})))
	s.UpsertApp(mt.App("argocd", "healthy", mt.AppIgnore(mt.Ignore("", "ConfigMap", []string{"/metadata/annotations/foo"}, nil))))
	s.UpsertApp(mt.App("argocd", "stuck", mt.AppSync("OutOfSync", "r2"), mt.AppOperation("Succeeded", now.Add(-20*time.Minute), "r2"), mt.AppAutomated()))
	s.UpsertApp(mt.App("argocd", "settling", mt.AppSync("OutOfSync", "r2"), mt.AppOperation("Succeeded", now.Add(-5*time.Minute), "r2")))
	// A manual Application behind a newer commit: not converging is not its problem.
	s.UpsertApp(mt.App("argocd", "behind", mt.AppSync("OutOfSync", "r3"), mt.AppOperation("Succeeded", now.Add(-time.Hour), "r2")))
	return s
}

const gitopsWant = `
# HELP driftwatch_last_applied_truncated Entries (ExternalSecret spec.data secretKeys, Secret key names) missing between the desired, last-applied and live lists; cause says which.
# TYPE driftwatch_last_applied_truncated gauge
driftwatch_last_applied_truncated{cause="live_shorter",kind="Secret",name="plain",namespace="gitops"} 1
driftwatch_last_applied_truncated{cause="live_shorter",kind="ExternalSecret",name="keys",namespace="gitops"} 1
# HELP driftwatch_argocd_ignore_list_trap 1 for each Argo CD ignoreDifferences path (or managedFieldsManagers entry) that keeps list entries added in Git from shipping to a managed object: effect rebuilds_list (every sync rebuilds the list from live), rebuilds_list_if_present (only when live has the ignored field), hides_new_entries (no RespectIgnoreDifferences: new entries do not make the Application OutOfSync).
# TYPE driftwatch_argocd_ignore_list_trap gauge
driftwatch_argocd_ignore_list_trap{application="trap",effect="rebuilds_list",group="external-secrets.io",kind="ExternalSecret",namespace="argocd",path="/spec/data/0/remoteRef",respect_ignore_differences="true"} 1
driftwatch_argocd_ignore_list_trap{application="trap",effect="rebuilds_list",group="external-secrets.io",kind="ExternalSecret",namespace="argocd",path=".spec.data[]",respect_ignore_differences="true"} 1
# HELP driftwatch_argocd_not_converging Seconds an Argo CD Application has stayed OutOfSync at the revision its last sync operation applied with phase Succeeded (reported above the threshold); automated says whether Argo CD syncs it by itself.
# TYPE driftwatch_argocd_not_converging gauge
driftwatch_argocd_not_converging{application="stuck",automated="true",namespace="argocd"} 1200
`

func TestGitOpsCollectors(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := NewFindings(gitopsStore(now), mt.HealthAll(), Config{Now: func() time.Time { return now }})
	if err := testutil.CollectAndCompare(c, strings.NewReader(gitopsWant),
		"driftwatch_last_applied_truncated", "driftwatch_argocd_ignore_list_trap", "driftwatch_argocd_not_converging"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestNotConvergingThreshold(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := NewFindings(gitopsStore(now), mt.HealthAll(), Config{Now: func() time.Time { return now }, NotConvergingThreshold: time.Minute})
	if n := testutil.CollectAndCount(c, "driftwatch_argocd_not_converging"); n != 2 {
		t.Fatalf("1m threshold: want stuck and settling, got %d", n)
	}
	c = NewFindings(gitopsStore(now), mt.HealthAll(), Config{Now: func() time.Time { return now }, NotConvergingThreshold: time.Hour})
	if n := testutil.CollectAndCount(c, "driftwatch_argocd_not_converging"); n != 0 {
		t.Fatalf("1h threshold: want none, got %d", n)
	}
}

// Without the Applications cache the Argo CD detectors are disabled and silent.
func TestGitOpsWithoutApplications(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := mt.HealthAll()
	h[model.ResApplications] = false
	c := NewFindings(gitopsStore(now), h, Config{Now: func() time.Time { return now }})
	for _, m := range []string{"driftwatch_argocd_ignore_list_trap", "driftwatch_argocd_not_converging"} {
		if n := testutil.CollectAndCount(c, m); n != 0 {
			t.Fatalf("%s: %d series without the Applications cache", m, n)
		}
	}
	if n := testutil.CollectAndCount(c, "driftwatch_last_applied_truncated"); n != 2 {
		t.Fatalf("last_applied does not need Applications: %d", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
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
	if enabled["argocd_ignore_list_trap"] != 0 || enabled["argocd_not_converging"] != 0 || enabled["last_applied"] != 1 {
		t.Fatalf("detector_enabled: %v", enabled)
	}
}
