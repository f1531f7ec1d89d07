package detect

import (
	"reflect"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// NotConvergingApps: an Application OutOfSync at the very revision its last
// sync applied with phase Succeeded, longer than the threshold after that
// sync finished. Each case is one Application "argocd/app"; every look-alike
// differs from "stuck" in one thing.
func TestNotConvergingApps(t *testing.T) {
	now := mt.T0
	const threshold = 10 * time.Minute
	long := now.Add(-20 * time.Minute) // 1200 s ago
	// stuck: OutOfSync at r2, the last sync Succeeded at r2 twenty minutes ago.
	stuck := func(opts ...mt.AppOption) *model.ArgoApp {
		return mt.App("argocd", "app", append([]mt.AppOption{mt.AppSync("OutOfSync", "r2"), mt.AppOperation("Succeeded", long, "r2")}, opts...)...)
	}
	multi := func(revs, opRevs []string) mt.AppOption {
		return func(a *model.ArgoApp) {
			a.SyncRevision, a.OperationRevision = "", ""
			a.SyncRevisions, a.OperationRevisions = revs, opRevs
		}
	}
	reported := func(seconds float64, automated bool) []NotConverging {
		return []NotConverging{{Namespace: "argocd", Application: "app", Seconds: seconds, Automated: automated}}
	}
	cases := []struct {
		name string
		app  *model.ArgoApp
		want []NotConverging
	}{
		{"automated, stuck", stuck(mt.AppAutomated()), reported(1200, true)},
		// Someone synced it by hand, and it did not converge either.
		{"manual, synced and stuck", stuck(), reported(1200, false)},
		{"multi-source, same revisions", stuck(mt.AppAutomated(), multi([]string{"a", "b"}, []string{"a", "b"})), reported(1200, true)},
		{"just over the threshold", stuck(mt.AppOperation("Succeeded", now.Add(-threshold-time.Second), "r2")), reported(601, false)},

		// Behind a newer commit: a manual app waits for a sync, an automated
		// one is about to get it.
		{"manual, behind", stuck(mt.AppSync("OutOfSync", "r3")), nil},
		{"automated, behind", stuck(mt.AppAutomated(), mt.AppSync("OutOfSync", "r3")), nil},
		{"multi-source, behind", stuck(mt.AppAutomated(), multi([]string{"a", "c"}, []string{"a", "b"})), nil},
		{"multi-source, synced revisions unknown", stuck(multi([]string{"a", "b"}, nil)), nil},
		{"multi-source, compared revisions unknown", stuck(multi(nil, []string{"a", "b"})), nil},
		// Without the synced revision, nothing to compare.
		{"synced revision unknown", stuck(mt.AppOperation("Succeeded", long, "")), nil},
		{"neither revision known", stuck(mt.AppSync("OutOfSync", ""), mt.AppOperation("Succeeded", long, "")), nil},

		{"within the threshold", stuck(mt.AppAutomated(), mt.AppOperation("Succeeded", now.Add(-2*time.Minute), "r2")), nil},
		{"exactly at the threshold", stuck(mt.AppOperation("Succeeded", now.Add(-threshold), "r2")), nil},
		{"finish time unknown", stuck(mt.AppOperation("Succeeded", time.Time{}, "r2")), nil},

		{"Synced", stuck(mt.AppSync("Synced", "r2")), nil},
		{"sync status Unknown", stuck(mt.AppSync("Unknown", "r2")), nil},
		{"last sync failed", stuck(mt.AppOperation("Failed", long, "r2")), nil},
		{"sync running", stuck(mt.AppOperation("Running", time.Time{}, "r2")), nil},
		{"never synced", stuck(mt.AppOperation("", time.Time{}, "")), nil},
		{"did not decode", stuck(func(a *model.ArgoApp) { a.DecodeErr = "decode: bad status" }), nil},
		// Argo CD deletes what the Application manages first (its resources
		// finalizer): OutOfSync while deleting is the deletion, not a sync that
		// does not converge.
		{"being deleted", stuck(func(a *model.ArgoApp) { a.Deleting = true }), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mt.NewStore(t, c.app)
			got := mt.Read(s, func(v model.View) []NotConverging { return NotConvergingApps(v, mt.All(), now, threshold) })
			checkSlice(t, "not converging", got, c.want)
		})
	}
}

// Every Application is judged on its own, in the view's order (namespace,
// name); without the Applications cache the detector says nothing.
func TestNotConvergingAppsSeveral(t *testing.T) {
	now := mt.T0
	op := func(ago time.Duration) mt.AppOption { return mt.AppOperation("Succeeded", now.Add(-ago), "r2") }
	s := mt.NewStore(t, []*model.ArgoApp{
		mt.App("team-b", "api", mt.AppSync("OutOfSync", "r2"), op(time.Hour), mt.AppAutomated()),
		mt.App("argocd", "web", mt.AppSync("OutOfSync", "r2"), op(30*time.Minute)),
		mt.App("argocd", "fine", mt.AppSync("Synced", "r2"), op(time.Hour)),
		mt.App("argocd", "db", mt.AppSync("OutOfSync", "r2"), op(15*time.Minute), mt.AppAutomated()),
	})
	got := mt.Read(s, func(v model.View) []NotConverging { return NotConvergingApps(v, mt.All(), now, 10*time.Minute) })
	want := []NotConverging{
		{Namespace: "argocd", Application: "db", Seconds: 900, Automated: true},
		{Namespace: "argocd", Application: "web", Seconds: 1800, Automated: false},
		{Namespace: "team-b", Application: "api", Seconds: 3600, Automated: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got := mt.Read(s, func(v model.View) []NotConverging {
		return NotConvergingApps(v, mt.AllBut(model.ResApplications), now, 10*time.Minute)
	}); got != nil {
		t.Fatalf("without the Applications cache: %+v", got)
	}
}
