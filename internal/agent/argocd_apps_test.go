package agent

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// Only Applications that manage a Secret or an ExternalSecret as desired state
// are polled: a sync hook Secret (status.resources[].hook) is not desired state.
func TestAppsManagingSecretsSkipsHooks(t *testing.T) {
	s := model.NewStore(nil)
	app := func(name string, res ...model.ArgoResource) {
		s.UpsertApp(mt.App("argocd", name, mt.AppResources(res...)))
	}
	app("es", model.ArgoResource{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api"})
	app("secret", model.ArgoResource{Kind: "Secret", Namespace: "shop", Name: "db"})
	app("hook-only", model.ArgoResource{Kind: "Secret", Namespace: "shop", Name: "pre", Hook: true},
		model.ArgoResource{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"})
	app("none", model.ArgoResource{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"})
	got := AppsManagingSecrets(s)
	want := []model.Ref{{Namespace: "argocd", Name: "es"}, {Namespace: "argocd", Name: "secret"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

// A shard asks the Argo CD API for the Applications that manage Secrets or
// ExternalSecrets in its own namespaces, wherever the Application lives, and
// keeps of their desired state the objects of its namespaces: the other
// namespaces' objects are their shards' to compare.
func TestShardPollsAndKeepsOnlyItsNamespaces(t *testing.T) {
	s := model.NewStore(nil)
	mine := func(ns string) bool { return ns == "mine" }
	s.UpsertApp(&model.ArgoApp{ObjectMeta: model.ObjectMeta{Namespace: "argocd", Name: "both"}, Resources: []model.ArgoResource{
		{Kind: "Secret", Namespace: "mine", Name: "db"}, {Kind: "Secret", Namespace: "theirs", Name: "db"}}})
	s.UpsertApp(&model.ArgoApp{ObjectMeta: model.ObjectMeta{Namespace: "argocd", Name: "elsewhere"}, Resources: []model.ArgoResource{
		{Kind: "Secret", Namespace: "theirs", Name: "db"}}})
	if got, want := appsManagingSecrets(s, mine), []model.Ref{{Namespace: "argocd", Name: "both"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("polled %v, want %v", got, want)
	}
	if got := appsManagingSecrets(s, nil); len(got) != 2 {
		t.Fatalf("unsharded: polled %v, want both Applications", got)
	}
	sink := ownSink{Store: s, owns: mine}
	app := model.Ref{Namespace: "argocd", Name: "both"}
	sink.SetArgoDesired(app, []model.Declared{
		{Kind: "Secret", Namespace: "mine", Name: "db", Keys: []string{"A"}},
		{Kind: "Secret", Namespace: "theirs", Name: "db", Keys: []string{"B"}},
	})
	s.Read(func(v model.View) {
		all := v.ArgoDesiredAll()
		if len(all) != 1 || all[0].Namespace != "mine" {
			t.Fatalf("desired state kept: %+v, want only the Secret of namespace mine", all)
		}
	})
	if got := s.ArgoDesiredApps(); !reflect.DeepEqual(got, []model.Ref{app}) {
		t.Fatalf("known Applications %v", got)
	}
}
