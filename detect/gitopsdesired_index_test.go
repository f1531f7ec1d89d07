package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// GitOpsDesired on a namespace's view is the cluster's list restricted to that
// namespace, in the same order, built once per model read: Argo CD and Flux
// desired objects over several namespaces, an object declared twice.
func TestGitOpsDesiredByNamespace(t *testing.T) {
	ks := mt.Kustomization(fluxNS, "apps", mt.KSManages("", "Secret", "shop", "db"), mt.KSManages("", "Secret", "billing", "db"),
		mt.KSManages("external-secrets.io", "ExternalSecret", "shop", "api"))
	build := mt.Build(fluxNS, "apps", mt.FluxSecret("shop", "db", "A"), mt.FluxSecret("billing", "db", "B"), mt.FluxES("shop", "api", "X"))
	app := mt.App("argocd", "web")
	argo := mt.Desired{App: model.Ref{Namespace: "argocd", Name: "web"}, Objects: []model.Declared{
		{Kind: "Secret", Namespace: "web", Name: "tls", Keys: []string{"crt"}},
		{Kind: "Secret", Namespace: "shop", Name: "db", Keys: []string{"A", "C"}},
	}}
	s := mt.NewStore(t, ks, mt.GitRepository(fluxNS, "apps"), build, app, argo)
	s.Read(func(v model.View) {
		all := GitOpsDesired(v)
		if len(all) != 5 {
			t.Fatalf("cluster list: %d objects, want 5: %+v", len(all), all)
		}
		if again := GitOpsDesired(v); &again[0] != &all[0] {
			t.Error("built again within one read")
		}
		seen := 0
		for _, ns := range []string{"shop", "billing", "web", "nothing-here"} {
			var want []Desired
			for _, d := range all {
				if d.Object.Namespace == ns {
					want = append(want, d)
				}
			}
			got := GitOpsDesired(v.InNamespace(ns))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", ns, got, want)
			}
			seen += len(got)
		}
		if seen != len(all) {
			t.Errorf("the namespaces' lists hold %d objects, the cluster's %d", seen, len(all))
		}
	})
}
