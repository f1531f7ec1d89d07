package model

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// Namespaces follows the namespaces that exist (or that Helm and Argo CD expect
// Secrets in); an emptied namespace is forgotten with its generation, so the
// per-namespace state stays bounded under namespace churn (ephemeral CI
// namespaces). A write stamps its namespace; a delete-then-recreate never reuses
// a stamp.
func TestNamespacesFollowTheCluster(t *testing.T) {
	s := NewStore(nil)
	now := time.Unix(1000, 0)
	for i := 0; i < 1000; i++ {
		s.UpsertSecret(&Secret{ObjectMeta: ObjectMeta{Namespace: fmt.Sprintf("ci-%04d", i), Name: "s"}}, now)
	}
	s.UpsertPod(&Pod{ObjectMeta: ObjectMeta{Namespace: "app", Name: "p"}})
	var before Generation
	s.Read(func(v View) {
		if n := len(v.Namespaces()); n != 1001 {
			t.Fatalf("%d namespaces, want 1001", n)
		}
		before = v.Generation("ci-0000")
	})
	for i := 0; i < 1000; i++ {
		s.DeleteSecret(fmt.Sprintf("ci-%04d", i), "s", time.Time{})
	}
	s.UpsertHelmRelease(&HelmRelease{ObjectMeta: ObjectMeta{Namespace: "app", Name: "sh.helm.release.v1.r.v1"}, Release: "r",
		Revision: 1, Status: "deployed", Expectations: []Declared{{Kind: "Secret", Namespace: "elsewhere", Name: "x"}}})
	s.Read(func(v View) {
		if got, want := v.Namespaces(), []string{"app", "elsewhere"}; !slices.Equal(got, want) {
			t.Fatalf("namespaces %v, want %v", got, want)
		}
		if n := len(s.gens.ns); n > 1 {
			t.Fatalf("%d namespace generations kept after their namespaces emptied", n)
		}
	})
	s.UpsertSecret(&Secret{ObjectMeta: ObjectMeta{Namespace: "ci-0000", Name: "s"}}, now)
	s.Read(func(v View) {
		if !slices.Contains(v.Namespaces(), "ci-0000") {
			t.Fatal("a namespace that gets a record again is listed again")
		}
		if g := v.Generation("ci-0000"); g.Namespace <= before.Namespace {
			t.Fatalf("recreated namespace stamped %d, not after its earlier stamp %d", g.Namespace, before.Namespace)
		}
	})
}

// Argo CD writes an Application's status at every refresh (reconciledAt, which
// the record does not keep): such a write leaves every namespace's generation
// as it was, and any change the record keeps moves them all.
func TestUpsertAppInvalidatesOnlyOnChange(t *testing.T) {
	s := NewStore(nil)
	s.UpsertSecret(&Secret{ObjectMeta: ObjectMeta{Namespace: "web", Name: "s"}}, time.Now())
	app := func(rv, sync string) *ArgoApp {
		return &ArgoApp{ObjectMeta: ObjectMeta{Namespace: "argocd", Name: "shop", ResourceVersion: rv},
			SyncStatus: sync, SyncRevision: "abc", Resources: []ArgoResource{{Kind: "Secret", Namespace: "web", Name: "s", Status: "Synced"}}}
	}
	gen := func() Generation {
		var g Generation
		s.Read(func(v View) { g = v.Generation("web") })
		return g
	}
	s.UpsertApp(app("1", "Synced"))
	g1 := gen()
	s.UpsertApp(app("2", "Synced")) // a refresh: only the resourceVersion moved
	if g := gen(); g != g1 {
		t.Fatalf("a write that changed nothing the record keeps moved the generation: %+v -> %+v", g1, g)
	}
	var rv string
	s.Read(func(v View) {
		if a, ok := v.App("argocd", "shop"); ok {
			rv = a.ResourceVersion
		}
	})
	if rv != "2" {
		t.Fatalf("the store keeps resourceVersion %q, want the latest (2)", rv)
	}
	s.UpsertApp(app("3", "OutOfSync"))
	if g := gen(); g == g1 {
		t.Fatalf("a sync status change left the generation at %+v", g)
	}
}

// The same for Flux: kustomize-controller and source-controller write status
// at every reconcile; a write that changes nothing the records keep leaves the
// Flux generation, and a new artifact revision moves it.
func TestFluxUpsertsInvalidateOnlyOnChange(t *testing.T) {
	s := NewStore(nil)
	ks := func(rv string) *FluxKustomization {
		return &FluxKustomization{ObjectMeta: ObjectMeta{Namespace: "flux-system", Name: "apps", ResourceVersion: rv}, Generation: 1, ObservedGeneration: 1}
	}
	src := func(rv, rev string) *FluxSource {
		return &FluxSource{ObjectMeta: ObjectMeta{Namespace: "flux-system", Name: "repo", ResourceVersion: rv}, Kind: "GitRepository", ArtifactRevision: rev}
	}
	gen := func() uint64 {
		var g Generation
		s.Read(func(v View) { g = v.Generation("web") })
		return g.Flux
	}
	s.UpsertKustomization(ks("1"))
	s.UpsertFluxSource(src("1", "main@sha1:a"))
	g1 := gen()
	s.UpsertKustomization(ks("2"))
	s.UpsertFluxSource(src("2", "main@sha1:a"))
	if g := gen(); g != g1 {
		t.Fatalf("status writes that changed nothing kept moved the Flux generation %d -> %d", g1, g)
	}
	s.UpsertFluxSource(src("3", "main@sha1:b"))
	if g := gen(); g == g1 {
		t.Fatalf("a new artifact revision left the Flux generation at %d", g)
	}
}
