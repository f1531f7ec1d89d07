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
