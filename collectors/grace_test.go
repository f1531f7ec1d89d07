package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// ESO writes a target Secret and then the ExternalSecret's status; the two
// reach the agent on separate watch streams in either order. Right after a sync
// an absent target is not judged (found by the fault e2e: an ExternalSecret
// re-created with its CRD was briefly reported Ready-but-absent). Once the grace
// has passed the finding appears without any further write: the reused
// per-namespace result carries the time it must be evaluated again.
func TestAbsentTargetJudgedAfterTheGrace(t *testing.T) {
	synced := time.Unix(100000, 0)
	now := synced.Add(2 * time.Second)
	s := model.NewStore(nil)
	s.UpsertPod(mt.Pod("app", "p"))
	s.UpsertExternalSecret(mt.BareES("app", "tokens", mt.ESData("a"), mt.ESStore("SecretStore", "vault"),
		mt.ESRefreshed(synced, 0, false), mt.ESReadySince("True", "SecretSynced", synced)))
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	findings := func() string { return absentTargetSeries(t, c) }
	if got := findings(); got != "" {
		t.Fatalf("absent target judged %s after the sync:\n%s", now.Sub(synced), got)
	}
	now = synced.Add(detect.TargetGrace + time.Second) // no write in between
	if got := findings(); got != tokensAbsent {
		t.Fatalf("after the grace:\n got %s\nwant %s", got, tokensAbsent)
	}
}

// tokensAbsent is what app/tokens's absent target exports once judged.
const tokensAbsent = `driftwatch_externalsecret_ready_but_short{externalsecret="tokens",namespace="app",reason="absent",secret="tokens"} 1
driftwatch_secret_absent{namespace="app",secret="tokens",source="externalsecret"} 1`

// absentTargetSeries is the secret_absent and ready_but_short series c exports.
func absentTargetSeries(t *testing.T, c *Findings) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(gatherText(t, c), "\n") {
		if strings.HasPrefix(l, "driftwatch_secret_absent") || strings.HasPrefix(l, "driftwatch_externalsecret_ready_but_short") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// ESO's own SecretMissing (Merge without a target) is judged at once, and a
// refresh that renews refreshTime does not renew the grace.
func TestAbsentTargetGraceLimits(t *testing.T) {
	long := time.Unix(100000, 0)
	now := long.Add(time.Hour)
	s := model.NewStore(nil)
	s.UpsertExternalSecret(mt.BareES("app", "merge", mt.ESTarget("merge-target"), mt.ESData("a"), mt.ESCreation("Merge"),
		mt.ESStore("SecretStore", "vault"), mt.ESRefreshed(now.Add(-time.Second), 0, false),
		mt.ESReadySince("True", "SecretMissing", now.Add(-time.Second))))
	s.UpsertExternalSecret(mt.BareES("app", "old", mt.ESTarget("old-target"), mt.ESData("a"),
		mt.ESStore("SecretStore", "vault"), mt.ESRefreshed(now.Add(-time.Second), 0, false),
		mt.ESReadySince("True", "SecretSynced", long)))
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	text := gatherText(t, c)
	for _, want := range []string{
		`driftwatch_externalsecret_ready_but_short{externalsecret="merge",namespace="app",reason="absent",secret="merge-target"} 1`,
		`driftwatch_externalsecret_ready_but_short{externalsecret="old",namespace="app",reason="absent",secret="old-target"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
}

// Deleting an ExternalSecret garbage-collects the Secret it owns, and the two
// delete events reach the agent on separate watch streams in either order
// (found by the fault e2e: with the ESO CRDs deleted, the Secret's delete
// arrived first and "short" read as Ready-but-absent for one sample). A target
// seen deleted is not judged for the grace, however old the Ready condition;
// still absent after it, it is reported without any further event.
func TestDeletedTargetJudgedAfterTheGrace(t *testing.T) {
	long := time.Unix(100000, 0)
	deleted := long.Add(time.Hour)
	now := deleted.Add(200 * time.Millisecond)
	s := model.NewStore(nil)
	s.UpsertExternalSecret(mt.BareES("app", "tokens", mt.ESData("a"), mt.ESStore("SecretStore", "vault"),
		mt.ESRefreshed(long, 0, false), mt.ESReadySince("True", "SecretSynced", long)))
	s.UpsertSecret(mt.Secret("app", "tokens", "a"), long)
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	findings := func() string { return absentTargetSeries(t, c) }
	if got := findings(); got != "" {
		t.Fatalf("healthy target reported:\n%s", got)
	}
	s.DeleteSecret("app", "tokens", deleted)
	if got := findings(); got != "" {
		t.Fatalf("target judged %s after its delete was seen:\n%s", now.Sub(deleted), got)
	}
	now = deleted.Add(detect.TargetGrace + time.Second) // no event in between
	if got := findings(); got != tokensAbsent {
		t.Fatalf("after the grace:\n got %s\nwant %s", got, tokensAbsent)
	}
	// Re-created by ESO within the grace: nothing was ever reported, and the
	// tombstone is gone with the re-create.
	s.UpsertSecret(mt.Secret("app", "tokens", "a"), now)
	if got := findings(); got != "" {
		t.Fatalf("re-created target reported:\n%s", got)
	}
	s.Read(func(v model.View) {
		if _, ok := v.History().DeletedAt(model.Ref{Namespace: "app", Name: "tokens"}); ok {
			t.Error("tombstone kept after the re-create")
		}
	})
}
