package model

import (
	"reflect"
	"testing"
)

// One desired-state store: an object an Application and a Kustomization both
// declare is indexed under both, each stamped with its source and revision;
// forgetting either source (the Application's state, the Kustomization, the
// Kustomization CRD) leaves the other; every write moves the one generation.
func TestOneDeclaredStoreForEverySource(t *testing.T) {
	s := NewStore(NewHistory(HistoryOptions{}))
	app, ks := Ref{Namespace: "argocd", Name: "shop"}, Ref{Namespace: "flux-system", Name: "apps"}
	obj := Declared{Kind: "Secret", Namespace: "shop", Name: "db", Keys: []string{"A"}}
	gen := func() uint64 { return s.declared().generation() }
	g0 := gen()
	s.SetArgoDesired(app, []Declared{func() Declared { o := obj; o.Revision = "r1"; return o }()})
	build := []Declared{obj}
	s.SetFluxDesired(ks, &FluxDesired{Revision: "main@sha1:1", Objects: build})
	if build[0].Source != (SourceRef{}) {
		t.Fatal("the caller's build was stamped: it may be shared by several Kustomizations")
	}
	if gen() != g0+2 {
		t.Fatalf("generation %d, want %d", gen(), g0+2)
	}
	want := []SourceRef{{Kind: SourceApplication, Namespace: "argocd", Name: "shop"}, {Kind: SourceKustomization, Namespace: "flux-system", Name: "apps"}}
	s.Read(func(v View) {
		if got := v.DeclaredBy("shop", "Secret", "db"); !reflect.DeepEqual(got, want) {
			t.Fatalf("declared by %+v, want %+v", got, want)
		}
		a, ok := v.ArgoDesired("shop", "Secret", "db")
		if !ok || a.Source != want[0] || a.Revision != "r1" {
			t.Fatalf("argo %+v %v", a, ok)
		}
		fd, ok := v.FluxDesiredOf("flux-system", "apps")
		if !ok || fd.Objects[0].Source != want[1] || fd.Objects[0].Revision != "main@sha1:1" {
			t.Fatalf("flux %+v %v", fd, ok)
		}
	})
	s.ForgetArgoApp(app)
	s.Read(func(v View) {
		if got := v.DeclaredBy("shop", "Secret", "db"); !reflect.DeepEqual(got, want[1:]) {
			t.Fatalf("after the Application: %+v", got)
		}
		if _, ok := v.ArgoDesired("shop", "Secret", "db"); ok {
			t.Fatal("Argo CD still declares it")
		}
	})
	s.DeleteKustomization("flux-system", "apps")
	s.Read(func(v View) {
		if got := v.DeclaredBy("shop", "Secret", "db"); len(got) != 0 {
			t.Fatalf("after the Kustomization: %+v", got)
		}
		if _, ok := v.FluxDesiredOf("flux-system", "apps"); ok {
			t.Fatal("the build outlived its Kustomization")
		}
	})
	s.SetFluxDesired(ks, &FluxDesired{Objects: build})
	s.ClearFlux(ResKustomizations)
	s.Read(func(v View) {
		if got := v.DeclaredBy("shop", "Secret", "db"); len(got) != 0 || len(v.FluxNamespaces()) != 0 {
			t.Fatalf("after the CRD went away: %+v %v", got, v.FluxNamespaces())
		}
	})
}
