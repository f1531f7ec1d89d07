package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// PendingSync: the keys a GitOps tool's current revision declares that the
// target Secret lacks while the tool has not delivered that revision (info).
// The Argo CD cases are Application argocd/shop, which compares r2 and last
// synced r1 (AppBehind), and its target state at r2.
func TestPendingSync(t *testing.T) {
	app := SyncObject{Kind: "Application", Namespace: "argocd", Name: "shop"}
	pending := func(secret, key string) PendingKey {
		return PendingKey{Namespace: "shop", Secret: secret, Key: key, Source: SourceArgoCD, Sync: app, Revision: "r2"}
	}
	// at returns the Application (made with opts) and its target state at r2.
	at := func(opts []mt.AppOption, objs ...model.Declared) []any {
		return []any{mt.App("argocd", "shop", opts...), mt.Desired{App: shopApp, Revision: "r2", Objects: objs}}
	}
	behind := func(objs ...model.Declared) []any {
		return at([]mt.AppOption{mt.AppBehind("r1", "r2", objs...)}, objs...)
	}
	db := mt.DesiredSecret("shop", "db", "a", "b")
	none := mt.DesiredES("shop", "api", "", "K")
	none.ES.CreationPolicy = "None"
	cases := []struct {
		name    string
		records []any
		avail   model.Availability // nil: every resource
		scope   string             // the view's namespace, "" for all
		want    []PendingKey
	}{
		{name: "a key the Secret lacks", records: append(behind(db), mt.Secret("shop", "db", "a")),
			want: []PendingKey{pending("db", "b")}},
		{name: "the Secret absent: every key", records: behind(db),
			want: []PendingKey{pending("db", "a"), pending("db", "b")}},
		{name: "the Secret absent, no key declared", records: behind(mt.DesiredSecret("shop", "db")),
			want: []PendingKey{pending("db", "")}},
		{name: "an empty key name is skipped", records: behind(mt.DesiredSecret("shop", "db", "", "a")),
			want: []PendingKey{pending("db", "a")}},
		{name: "an ExternalSecret's target", records: append(behind(mt.DesiredES("shop", "api", "api-creds", "K1", "K2")), mt.Secret("shop", "api-creds", "K1")),
			want: []PendingKey{pending("api-creds", "K2")}},
		// A Secret and an ExternalSecret of one revision declaring one key of
		// one Secret: one pending key.
		{name: "one key declared twice", records: behind(mt.DesiredSecret("shop", "api", "K"), mt.DesiredES("shop", "api", "", "K")),
			want: []PendingKey{pending("api", "K")}},
		{name: "sorted by Secret and key", records: append(behind(mt.DesiredSecret("shop", "zz", "b", "a"), mt.DesiredSecret("shop", "db", "c")),
			mt.Secret("shop", "zz")),
			want: []PendingKey{pending("db", "c"), pending("zz", "a"), pending("zz", "b")}},
		{name: "scoped to the target's namespace", records: behind(db), scope: "shop",
			want: []PendingKey{pending("db", "a"), pending("db", "b")}},

		{name: "the Secret holds every key", records: append(behind(db), mt.Secret("shop", "db", "a", "b"))},
		{name: "the Secret exists, no key declared", records: append(behind(mt.DesiredSecret("shop", "db")), mt.Secret("shop", "db"))},
		{name: "another namespace's view", records: behind(db), scope: "other"},
		// Expects nothing of a Secret (DesiredTarget).
		{name: "an ExternalSecret with creationPolicy None", records: behind(none)},
		{name: "an ExternalSecret being deleted", records: append(behind(mt.DesiredES("shop", "api", "", "K")),
			mt.ES("shop", "api", func(e *model.ExternalSecret) { e.Deleting = true }))},
		{name: "a ConfigMap", records: behind(model.Declared{Kind: "ConfigMap", Namespace: "shop", Name: "db", Keys: []string{"a"}})},
		// Not pending.
		{name: "delivered", records: at([]mt.AppOption{mt.AppDelivered("r2", db)}, db)},
		{name: "the Application being deleted", records: at([]mt.AppOption{mt.AppBehind("r1", "r2", db), func(a *model.ArgoApp) { a.Deleting = true }}, db)},
		{name: "read at a revision the Application neither compares nor synced",
			records: at([]mt.AppOption{mt.AppBehind("r1", "r3", db)}, db)},
		{name: "no Application", records: []any{mt.Desired{App: shopApp, Revision: "r2", Objects: []model.Declared{db}}}},
		// Availability.
		{name: "without the Applications cache", records: behind(db), avail: mt.AllBut(model.ResApplications)},
		{name: "without the Secrets cache", records: append(behind(db), mt.Secret("shop", "db", "a")), avail: mt.AllBut(model.ResSecrets)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mt.NewStore(t, c.records...)
			avail := c.avail
			if avail == nil {
				avail = mt.All()
			}
			got := mt.Read(s, func(v model.View) []PendingKey {
				if c.scope != "" {
					v = v.InNamespace(c.scope)
				}
				return PendingSync(v, avail)
			})
			checkSlice(t, "pending", got, c.want)
		})
	}
}

// Several sync objects waiting to deliver the same key: one entry each,
// ordered by the sync object's namespace and name, whatever the source (the
// desired state lists Argo CD's before Flux's).
func TestPendingSyncSeveralSyncObjects(t *testing.T) {
	db := mt.DesiredSecret("shop", "db", "a")
	other := model.Ref{Namespace: "argocd", Name: "web"}
	s := mt.NewStore(t,
		mt.App("argocd", "shop", mt.AppBehind("r1", "r2", db)), mt.Desired{App: shopApp, Revision: "r2", Objects: []model.Declared{db}},
		mt.App("argocd", "web", mt.AppBehind("r1", "r9", db)), mt.Desired{App: other, Revision: "r9", Objects: []model.Declared{db}},
		mt.Kustomization("aaa", "apps", mt.KSManages("", "Secret", "shop", "db"), mt.KSApplied("main@sha1:0000")),
		mt.GitRepository("aaa", "apps"), mt.Build("aaa", "apps", mt.FluxSecret("shop", "db", "a")))
	pending := func(src Source, kind, ns, name, rev string) PendingKey {
		return PendingKey{Namespace: "shop", Secret: "db", Key: "a", Source: src, Sync: SyncObject{Kind: kind, Namespace: ns, Name: name}, Revision: rev}
	}
	want := []PendingKey{
		pending(SourceFlux, "Kustomization", "aaa", "apps", mt.Revision1),
		pending(SourceArgoCD, "Application", "argocd", "shop", "r2"),
		pending(SourceArgoCD, "Application", "argocd", "web", "r9"),
	}
	checkSlice(t, "pending", mt.Read(s, func(v model.View) []PendingKey { return PendingSync(v, mt.All()) }), want)
}

// Flux: a commit the Kustomization has not applied yet (the source serves
// the built revision) is pending; the revision it claims applied is not
// (synced_entries_missing judges that one).
func TestPendingSyncFlux(t *testing.T) {
	manages := []mt.KSOption{mt.KSManages("", "Secret", appNS, "db"), mt.KSManages("external-secrets.io", "ExternalSecret", appNS, "api")}
	build := mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B"), mt.FluxES(appNS, "api", "X", "Y"))
	live := []any{mt.Secret(appNS, "db", "A"), mt.ES(appNS, "api", mt.ESData("X")), mt.Secret(appNS, "api", "X")}
	ks := SyncObject{Kind: "Kustomization", Namespace: fluxNS, Name: "apps"}
	pendingKeys := func(s *model.Store, avail model.Availability) []PendingKey {
		return mt.Read(s, func(v model.View) []PendingKey { return PendingSync(v, avail) })
	}

	behind := fluxStore(t, mt.Kustomization(fluxNS, "apps", append(manages, mt.KSApplied("main@sha1:0000"))...),
		mt.GitRepository(fluxNS, "apps"), build, live...)
	checkSlice(t, "pending while behind", pendingKeys(behind, mt.All()), []PendingKey{
		{Namespace: appNS, Secret: "api", Key: "Y", Source: SourceFlux, Sync: ks, Revision: mt.Revision1},
		{Namespace: appNS, Secret: "db", Key: "B", Source: SourceFlux, Sync: ks, Revision: mt.Revision1},
	})
	checkSlice(t, "pending without the Kustomizations cache", pendingKeys(behind, mt.AllBut(model.ResKustomizations)), nil)

	claimed := fluxStore(t, mt.Kustomization(fluxNS, "apps", manages...), mt.GitRepository(fluxNS, "apps"), build, live...)
	checkSlice(t, "pending while claimed", pendingKeys(claimed, mt.All()), nil)
}
