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
