package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// The seed failure under a server-side apply sync (issue 22): Argo CD says
// it delivered r2, whose ExternalSecret declares NEW, and the live
// ExternalSecret lacks it; no last-applied annotation exists. A pending
// revision, an absent object and a complete one are not reported.
func TestSyncedEntriesMissing(t *testing.T) {
	trap := mt.DesiredES("shop", "trap", "", "OLD", "NEW")
	full := mt.DesiredES("shop", "full", "", "A")
	sec := mt.DesiredSecret("shop", "db", "a", "b")
	gone := mt.DesiredES("shop", "gone", "", "A")
	pending := mt.DesiredES("pend", "api", "", "OLD", "NEW")
	kubectl := mt.DesiredES("shop", "kubectl", "", "OLD", "NEW")
	delivered := []model.Declared{trap, full, sec, gone, kubectl}
	s := mt.NewStore(t,
		[]*model.ExternalSecret{mt.ES("shop", "trap", mt.ESData("OLD")), mt.ES("shop", "full", mt.ESData("A")),
			mt.ES("pend", "api", mt.ESData("OLD")),
			mt.ES("shop", "kubectl", mt.ESData("OLD"), mt.ESLastApplied(mt.LastAppliedES("OLD")))},
		mt.Secret("shop", "db", "a"),
		mt.App("argocd", "shop", mt.AppDelivered("r2", delivered...)),
		mt.Desired{App: shopApp, Revision: "r2", Objects: delivered},
		mt.App("argocd", "pend", mt.AppBehind("r1", "r2", pending)),
		mt.Desired{App: model.Ref{Namespace: "argocd", Name: "pend"}, Revision: "r2", Objects: []model.Declared{pending}},
	)
	got := mt.Read(s, func(v model.View) []SyncedEntriesMissing { return SyncedEntries(v, mt.All()) })
	app := SyncObject{Kind: "Application", Namespace: "argocd", Name: "shop"}
	want := []SyncedEntriesMissing{
		{Namespace: "shop", Kind: "ExternalSecret", Name: "kubectl", Source: SourceArgoCD, Sync: app, Revision: "r2", Missing: []string{"NEW"}, LastApplied: LastAppliedLacks},
		{Namespace: "shop", Kind: "ExternalSecret", Name: "trap", Source: SourceArgoCD, Sync: app, Revision: "r2", Missing: []string{"NEW"}, LastApplied: LastAppliedNone},
		{Namespace: "shop", Kind: "Secret", Name: "db", Source: SourceArgoCD, Sync: app, Revision: "r2", Missing: []string{"b"}, LastApplied: LastAppliedNone},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if got := mt.Read(s, func(v model.View) []SyncedEntriesMissing {
		return SyncedEntries(v, mt.AllBut(model.ResExternalSecrets))
	}); len(got) != 1 || got[0].Kind != "Secret" {
		t.Fatalf("without the ExternalSecrets cache: %+v", got)
	}
}

// SyncedEntries, one object at a time: Application argocd/shop says it
// delivered r2 (AppDelivered) to the desired objects of its target state at
// r2 unless the case says otherwise.
func TestSyncedEntriesCases(t *testing.T) {
	app := SyncObject{Kind: "Application", Namespace: "argocd", Name: "shop"}
	found := func(kind, name, lastApplied string, missing ...string) SyncedEntriesMissing {
		return SyncedEntriesMissing{Namespace: "shop", Kind: kind, Name: name, Source: SourceArgoCD, Sync: app, Revision: "r2",
			Missing: missing, LastApplied: lastApplied}
	}
	es := mt.DesiredES("shop", "api", "", "OLD", "NEW")
	db := mt.DesiredSecret("shop", "db", "a", "b")
	tpl := mt.DesiredES("shop", "api", "", "A")
	tpl.ES.HasTemplate, tpl.ES.TemplateKeys = true, []string{"DSN", "URL"}
	dup := mt.DesiredES("shop", "api", "", "A", "A", "", "B")
	withName := func(la *model.LastApplied, name string) *model.LastApplied { la.Name = name; return la }
	withErr := func(la *model.LastApplied) *model.LastApplied { la.Err = "too large"; return la }
	cases := []struct {
		name    string
		obj     model.Declared
		appOpts []mt.AppOption // nil: AppDelivered("r2", obj)
		live    []any
		avail   model.Availability // nil: every resource
		scope   string
		want    []SyncedEntriesMissing
	}{
		// ExternalSecrets: spec.data secretKeys and template.data keys.
		{name: "ExternalSecret, no last-applied", obj: es, live: []any{mt.ES("shop", "api", mt.ESData("OLD"))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "NEW")}},
		{name: "ExternalSecret, last-applied lacks them too", obj: es,
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESLastApplied(mt.LastAppliedES("OLD")))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedLacks, "NEW")}},
		{name: "ExternalSecret, last-applied holds them", obj: es,
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESLastApplied(mt.LastAppliedES("OLD", "NEW")))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedHolds, "NEW")}},
		{name: "ExternalSecret, last-applied frozen (another writer holds the list)", obj: es,
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESLastApplied(mt.Frozen(mt.LastAppliedES("OLD"))))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "NEW")}},
		{name: "ExternalSecret, last-applied of another object", obj: es,
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESLastApplied(withName(mt.LastAppliedES("OLD"), "other")))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "NEW")}},
		{name: "ExternalSecret, last-applied of another kind", obj: es,
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESLastApplied(mt.LastAppliedSecret("OLD")))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "NEW")}},
		{name: "ExternalSecret, last-applied that did not parse", obj: es,
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESLastApplied(withErr(mt.LastAppliedES("OLD"))))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "NEW")}},
		{name: "ExternalSecret, spec.data and template.data entries", obj: tpl,
			live: []any{mt.ES("shop", "api", mt.ESTemplate("", "URL"))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "A", "DSN")}},
		// The record holds no template keys: a missing template.data key with
		// every spec.data entry in live and in the record is neither "lacks"
		// nor "holds"; with a spec.data entry missing too, the record judges
		// that one only.
		{name: "ExternalSecret, only a template key missing, full last-applied", obj: tpl,
			live: []any{mt.ES("shop", "api", mt.ESData("A"), mt.ESTemplate("", "URL"), mt.ESLastApplied(mt.LastAppliedES("A")))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "DSN")}},
		{name: "ExternalSecret, a template key and a spec.data entry missing, the record holds the entry", obj: tpl,
			live: []any{mt.ES("shop", "api", mt.ESTemplate("", "URL"), mt.ESLastApplied(mt.LastAppliedES("A")))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedHolds, "A", "DSN")}},
		// Multisets: a duplicate declared twice and present once is one
		// missing entry; entries without a secretKey are skipped.
		{name: "ExternalSecret, duplicates and empty entries", obj: dup, live: []any{mt.ES("shop", "api", mt.ESData("A", "B"))},
			want: []SyncedEntriesMissing{found("ExternalSecret", "api", LastAppliedNone, "A")}},
		{name: "ExternalSecret complete", obj: es, live: []any{mt.ES("shop", "api", mt.ESData("NEW", "OLD", "EXTRA"))}},
		{name: "ExternalSecret absent", obj: es},
		{name: "ExternalSecret that did not decode", obj: es, live: []any{mt.ES("shop", "api", mt.ESData("OLD"), mt.ESDecodeErr("decode: x"))}},
		{name: "ExternalSecret being deleted", obj: es, live: []any{mt.ES("shop", "api", mt.ESData("OLD"), func(e *model.ExternalSecret) { e.Deleting = true })}},
		{name: "ExternalSecret without the ExternalSecrets cache", obj: es, live: []any{mt.ES("shop", "api", mt.ESData("OLD"))},
			avail: mt.AllBut(model.ResExternalSecrets)},
		{name: "ExternalSecret the target state could not read", obj: model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api"},
			live: []any{mt.ES("shop", "api", mt.ESData("OLD"))}},

		// Secrets: key names.
		{name: "Secret, no last-applied", obj: db, live: []any{mt.Secret("shop", "db", "a")},
			want: []SyncedEntriesMissing{found("Secret", "db", LastAppliedNone, "b")}},
		{name: "Secret, last-applied lacks them too", obj: db, live: []any{mt.WithLastApplied(mt.Secret("shop", "db", "a"), mt.LastAppliedSecret("a"))},
			want: []SyncedEntriesMissing{found("Secret", "db", LastAppliedLacks, "b")}},
		{name: "Secret, last-applied holds them", obj: db, live: []any{mt.WithLastApplied(mt.Secret("shop", "db", "a"), mt.LastAppliedSecret("a", "b"))},
			want: []SyncedEntriesMissing{found("Secret", "db", LastAppliedHolds, "b")}},
		{name: "Secret, last-applied of another object", obj: db,
			live: []any{mt.WithLastApplied(mt.Secret("shop", "db", "a"), withName(mt.LastAppliedSecret("a", "b"), "other"))},
			want: []SyncedEntriesMissing{found("Secret", "db", LastAppliedNone, "b")}},
		{name: "Secret holding every key and more", obj: db, live: []any{mt.Secret("shop", "db", "a", "b", "c")}},
		{name: "Secret absent (secret_absent's)", obj: db},
		{name: "Secret without the Secrets cache", obj: db, live: []any{mt.Secret("shop", "db", "a")}, avail: mt.AllBut(model.ResSecrets)},
		{name: "a ConfigMap", obj: model.Declared{Kind: "ConfigMap", Namespace: "shop", Name: "db", Keys: []string{"a", "b"}},
			live: []any{mt.Secret("shop", "db", "a")}},

		// What the Application says.
		{name: "pending: not evidence", obj: db, appOpts: []mt.AppOption{mt.AppBehind("r1", "r2", db)}, live: []any{mt.Secret("shop", "db", "a")}},
		{name: "the Application being deleted", obj: db, appOpts: []mt.AppOption{mt.AppDelivered("r2", db), func(a *model.ArgoApp) { a.Deleting = true }},
			live: []any{mt.Secret("shop", "db", "a")}},
		{name: "without the Applications cache", obj: db, live: []any{mt.Secret("shop", "db", "a")}, avail: mt.AllBut(model.ResApplications)},
		{name: "in the view's namespace", obj: db, live: []any{mt.Secret("shop", "db", "a")}, scope: "shop",
			want: []SyncedEntriesMissing{found("Secret", "db", LastAppliedNone, "b")}},
		{name: "another namespace's view", obj: db, live: []any{mt.Secret("shop", "db", "a")}, scope: "other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.appOpts
			if opts == nil {
				opts = []mt.AppOption{mt.AppDelivered("r2", c.obj)}
			}
			s := mt.NewStore(t, append([]any{mt.App("argocd", "shop", opts...),
				mt.Desired{App: shopApp, Revision: "r2", Objects: []model.Declared{c.obj}}}, c.live...)...)
			avail := c.avail
			if avail == nil {
				avail = mt.All()
			}
			got := mt.Read(s, func(v model.View) []SyncedEntriesMissing {
				if c.scope != "" {
					v = v.InNamespace(c.scope)
				}
				return SyncedEntries(v, avail)
			})
			checkSlice(t, "synced entries missing", got, c.want)
		})
	}
}

// Flux: what a Kustomization claims it applied (its inventory lists the
// object) is evidence; a commit it has not applied yet is pending
// (TestPendingSyncFlux), not this.
func TestSyncedEntriesFlux(t *testing.T) {
	manages := []mt.KSOption{mt.KSManages("", "Secret", appNS, "db"), mt.KSManages("external-secrets.io", "ExternalSecret", appNS, "api")}
	build := mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B"), mt.FluxES(appNS, "api", "X", "Y"))
	live := []any{mt.Secret(appNS, "db", "A"), mt.ES(appNS, "api", mt.ESData("X")), mt.Secret(appNS, "api", "X")}
	ks := SyncObject{Kind: "Kustomization", Namespace: fluxNS, Name: "apps"}
	synced := func(s *model.Store, avail model.Availability) []SyncedEntriesMissing {
		return mt.Read(s, func(v model.View) []SyncedEntriesMissing { return SyncedEntries(v, avail) })
	}

	claimed := fluxStore(t, mt.Kustomization(fluxNS, "apps", manages...), mt.GitRepository(fluxNS, "apps"), build, live...)
	checkSlice(t, "claimed", synced(claimed, mt.All()), []SyncedEntriesMissing{
		{Namespace: appNS, Kind: "ExternalSecret", Name: "api", Source: SourceFlux, Sync: ks, Revision: mt.Revision1, Missing: []string{"Y"}, LastApplied: LastAppliedNone},
		{Namespace: appNS, Kind: "Secret", Name: "db", Source: SourceFlux, Sync: ks, Revision: mt.Revision1, Missing: []string{"B"}, LastApplied: LastAppliedNone},
	})
	checkSlice(t, "claimed, without the Kustomizations cache", synced(claimed, mt.AllBut(model.ResKustomizations)), nil)

	behind := fluxStore(t, mt.Kustomization(fluxNS, "apps", append(manages, mt.KSApplied("main@sha1:0000"))...),
		mt.GitRepository(fluxNS, "apps"), build, live...)
	checkSlice(t, "behind", synced(behind, mt.All()), nil)
}

// One object two sync objects say they delivered: one entry each, ordered
// by the sync object's namespace and name, whatever the source (the desired
// state lists Argo CD's before Flux's).
func TestSyncedEntriesSeveralSyncObjects(t *testing.T) {
	db := mt.DesiredSecret("shop", "db", "a", "b")
	s := mt.NewStore(t, mt.Secret("shop", "db", "a"),
		mt.App("argocd", "shop", mt.AppDelivered("r2", db)), mt.Desired{App: shopApp, Revision: "r2", Objects: []model.Declared{db}},
		mt.Kustomization("aaa", "apps", mt.KSManages("", "Secret", "shop", "db")),
		mt.GitRepository("aaa", "apps"), mt.Build("aaa", "apps", mt.FluxSecret("shop", "db", "a", "b")))
	got := mt.Read(s, func(v model.View) []SyncedEntriesMissing { return SyncedEntries(v, mt.All()) })
	want := []SyncedEntriesMissing{
		{Namespace: "shop", Kind: "Secret", Name: "db", Source: SourceFlux, Sync: SyncObject{Kind: "Kustomization", Namespace: "aaa", Name: "apps"},
			Revision: mt.Revision1, Missing: []string{"b"}, LastApplied: LastAppliedNone},
		{Namespace: "shop", Kind: "Secret", Name: "db", Source: SourceArgoCD, Sync: SyncObject{Kind: "Application", Namespace: "argocd", Name: "shop"},
			Revision: "r2", Missing: []string{"b"}, LastApplied: LastAppliedNone},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}
