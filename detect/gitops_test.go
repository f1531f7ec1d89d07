package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

var shopApp = model.Ref{Namespace: "argocd", Name: "shop"}

// gitopsExps returns the expectations of source argocd.
func gitopsExps(s *model.Store) []Expectation {
	var out []Expectation
	for _, e := range mt.Read(s, func(v model.View) []Expectation { return Expectations(v, mt.All()) }) {
		if e.Source == SourceArgoCD {
			out = append(out, e)
		}
	}
	return out
}

func TestGitOpsExpectationsOfADeliveredRevision(t *testing.T) {
	tpl := mt.DesiredES("shop", "tpl", "")
	tpl.ES.DataKeys = []string{"raw"}
	tpl.ES.HasTemplate, tpl.ES.TemplateRendersData, tpl.ES.TemplateKeys = true, true, []string{"DSN"}
	objs := []model.Declared{
		mt.DesiredSecret("shop", "db", "password", "user"),
		mt.DesiredES("shop", "api", "api-creds", "KEY", ""),
		tpl,
		mt.DesiredES("shop", "bulk", ""),
		{Kind: "ConfigMap", Namespace: "shop", Name: "ignored"},
	}
	s := mt.NewStore(t, mt.App("argocd", "shop", mt.AppDelivered(mt.Rev, objs...)), mt.Desired{App: shopApp, Objects: objs})
	c := []Consumer{{Kind: "Application", Name: "shop"}}
	want := []Expectation{
		{Namespace: "shop", Secret: "api-creds", Key: "KEY", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "bulk", Key: "", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "db", Key: "password", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "db", Key: "user", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "tpl", Key: "DSN", Source: SourceArgoCD, Consumers: c},
	}
	if got := gitopsExps(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	// Deleted (Argo CD's resources finalizer deletes what it manages first):
	// the target state expects nothing any more.
	s.UpsertApp(mt.App("argocd", "shop", mt.AppDelivered(mt.Rev, objs...), func(a *model.ArgoApp) { a.Deleting = true }))
	if got := gitopsExps(s); len(got) != 0 {
		t.Fatalf("an Application being deleted still expects %+v", got)
	}
}

// The everyday GitOps state that paged (issue 22): a manual-sync
// Application one commit behind. Argo CD compares the new revision (its
// target state adds key NEW) and waits for someone to sync: the target state
// is no expectation, only a pending key.
func TestPendingRevisionIsNoExpectation(t *testing.T) {
	es := mt.DesiredES("shop", "api", "", "OLD", "NEW")
	sec := mt.DesiredSecret("shop", "db", "a", "b")
	live := []any{
		mt.Secret("shop", "api", "OLD"), mt.Secret("shop", "db", "a"),
		mt.ES("shop", "api", mt.ESData("OLD")),
	}
	s := mt.NewStore(t, live, mt.App("argocd", "shop", mt.AppBehind("r1", "r2", es, sec)),
		mt.Desired{App: shopApp, Revision: "r2", Objects: []model.Declared{es, sec}})
	if got := gitopsExps(s); len(got) != 0 {
		t.Fatalf("a pending revision is expected: %+v", got)
	}
	app := SyncObject{Kind: "Application", Namespace: "argocd", Name: "shop"}
	wantPending := []PendingKey{
		{Namespace: "shop", Secret: "api", Key: "NEW", Source: SourceArgoCD, Sync: app, Revision: "r2"},
		{Namespace: "shop", Secret: "db", Key: "b", Source: SourceArgoCD, Sync: app, Revision: "r2"},
	}
	if got := mt.Read(s, func(v model.View) []PendingKey { return PendingSync(v, mt.All()) }); !reflect.DeepEqual(got, wantPending) {
		t.Fatalf("pending:\n got %+v\nwant %+v", got, wantPending)
	}
	mk := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	if len(mk.Missing) != 0 || len(mk.Absent) != 0 {
		t.Fatalf("missing keys from a pending revision: %+v", mk)
	}
	// Someone syncs: Argo CD says it delivered r2. The keys it declares are
	// now expectations and no longer pending.
	s.UpsertApp(mt.App("argocd", "shop", mt.AppDelivered("r2", es, sec)))
	if got := mt.Read(s, func(v model.View) []PendingKey { return PendingSync(v, mt.All()) }); len(got) != 0 {
		t.Fatalf("pending after the sync: %+v", got)
	}
	mk = mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	if len(mk.Missing) != 2 || mk.Missing[0].Key != "NEW" || mk.Missing[1].Key != "b" {
		t.Fatalf("after the sync: %+v", mk.Missing)
	}
}

func TestArgoDelivery(t *testing.T) {
	obj := mt.DesiredSecret("shop", "db", "k")
	other := mt.DesiredSecret("shop", "other", "k")
	at := func(rev string) *model.Declared { o := obj; o.Revision = rev; return &o }
	resStatus := func(st string) mt.AppOption {
		return mt.AppResources(model.ArgoResource{Kind: "Secret", Namespace: "shop", Name: "db", Status: st})
	}
	for _, tc := range []struct {
		name string
		app  *model.ArgoApp
		d    *model.Declared
		want Delivery
	}{
		{"synced at r1", mt.App("argocd", "a", mt.AppDelivered("r1", obj)), at("r1"), Delivered},
		{"revision unknown (it moved while read)", mt.App("argocd", "a", mt.AppDelivered("r1", obj)), at(""), Unjudged},
		{"behind: compares r2, synced r1", mt.App("argocd", "a", mt.AppBehind("r1", "r2", obj)), at("r2"), Pending},
		{"read at r1, the Application moved on", mt.App("argocd", "a", mt.AppBehind("r1", "r2", obj)), at("r1"), Delivered},
		{"read at r0: neither", mt.App("argocd", "a", mt.AppBehind("r1", "r2", obj)), at("r0"), Unjudged},
		{"sync running at r2", mt.App("argocd", "a", mt.AppDelivered("r2", obj), func(a *model.ArgoApp) { a.OperationPhase = "Running" }), at("r2"), Pending},
		{"sync failed at r2", mt.App("argocd", "a", mt.AppDelivered("r2", obj), func(a *model.ArgoApp) { a.OperationPhase = "Failed" }), at("r2"), Pending},
		{"selective sync of another object", mt.App("argocd", "a", mt.AppDelivered("r2", other)), at("r2"), Pending},
		{"not in the sync, but Synced itself (ApplyOutOfSyncOnly)", mt.App("argocd", "a", mt.AppDelivered("r2", other), resStatus("Synced")), at("r2"), Delivered},
		{"not in the sync and OutOfSync", mt.App("argocd", "a", mt.AppDelivered("r2", other), resStatus("OutOfSync")), at("r2"), Pending},
		{"multi-source", mt.App("argocd", "a", func(a *model.ArgoApp) {
			a.SyncRevisions, a.OperationRevisions, a.OperationPhase = []string{"x", "y"}, []string{"x", "y"}, "Succeeded"
			a.OperationSynced = []model.ArgoObject{{Kind: "Secret", Namespace: "shop", Name: "db"}}
		}), at("x,y"), Delivered},
		{"being deleted", mt.App("argocd", "a", mt.AppDelivered("r1", obj), func(a *model.ArgoApp) { a.Deleting = true }), at("r1"), Unjudged},
	} {
		if got := argoDelivery(tc.app, tc.d); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// One template rule for live, Helm and Argo CD ExternalSecrets (issue 22): a
// templateFrom whose keys driftwatch cannot name expects no spec.data key
// (ESO writes only what the template renders), and creationPolicy None
// expects nothing at all.
func TestDesiredExternalSecretsFollowTheLiveRules(t *testing.T) {
	literal := mt.DesiredES("shop", "lit", "", "password")
	literal.ES.HasTemplate, literal.ES.TemplateRendersData, literal.ES.TemplateOpen = true, true, model.TemplateOpenLiteral
	none := mt.DesiredES("shop", "none", "", "password")
	none.ES.CreationPolicy = "None"
	objs := []model.Declared{literal, none}
	helm := mt.HelmRelease("shop", "rel", 1, "deployed",
		model.Declared{Kind: "ExternalSecret", Namespace: "shop", Name: "lit", ES: literal.ES},
		model.Declared{Kind: "ExternalSecret", Namespace: "shop", Name: "none", ES: none.ES})
	s := mt.NewStore(t, mt.Secret("shop", "lit", "rendered"), helm,
		mt.App("argocd", "shop", mt.AppDelivered(mt.Rev, objs...)), mt.Desired{App: shopApp, Objects: objs})
	mk := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	if len(mk.Missing) != 0 || len(mk.Absent) != 0 {
		t.Fatalf("findings: %+v", mk)
	}
}

// ESO's own "deleted on purpose" (ESO v0.20.4, an empty provider result):
// deletionPolicy Delete deletes the target and says Ready=True
// SecretDeleted; Merge removes the keys it manages. Neither is short, for the
// ExternalSecret itself nor for the Helm release or Application declaring it;
// a pod still reading the Secret is reported through its own source.
func TestESEmptiedOnPurpose(t *testing.T) {
	del := mt.ES("shop", "gone", mt.ESData("k"), mt.ESDeletion("Delete"), mt.ESReady("True", "SecretDeleted"))
	merge := mt.ES("shop", "merged", mt.ESData("k"), mt.ESCreation("Merge"), mt.ESDeletion("Merge"))
	partial := mt.ES("shop", "partial", mt.ESData("k", "j"), mt.ESDeletion("Delete"))
	helm := mt.HelmRelease("shop", "rel", 1, "deployed", mt.HelmES("shop", "gone", "", "k"), mt.HelmES("shop", "merged", "", "k"))
	s := mt.NewStore(t, []*model.ExternalSecret{del, merge, partial},
		mt.Secret("shop", "merged", "other"), mt.Secret("shop", "partial", "k"), helm,
		mt.WithWorkload(mt.Pod("shop", "api-1", mt.Env("gone", "k")), "Deployment", "api"))
	mk := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	var got []string
	for _, m := range mk.Missing {
		got = append(got, string(m.Source)+":"+m.Secret+"/"+m.Key)
	}
	for _, a := range mk.Absent {
		got = append(got, string(a.Source)+":"+a.Secret)
	}
	want := []string{"externalsecret:partial/j", "pod:gone"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	rbs := mt.Read(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, mt.All()) })
	if len(rbs) != 1 || rbs[0].ExternalSecret != "partial" {
		t.Fatalf("ready but short: %+v", rbs)
	}
}

// An Application and a Kustomization may share a namespace and name: the
// order of their findings is still total (kind breaks the tie).
func TestSyncLessIsTotal(t *testing.T) {
	app := SyncObject{Kind: "Application", Namespace: "ops", Name: "apps"}
	ks := SyncObject{Kind: "Kustomization", Namespace: "ops", Name: "apps"}
	other := SyncObject{Kind: "Application", Namespace: "ops", Name: "zz"}
	if !syncLess(app, ks) || syncLess(ks, app) || syncLess(app, app) || !syncLess(ks, other) {
		t.Fatal("syncLess is not a total order by namespace, name, kind")
	}
}
