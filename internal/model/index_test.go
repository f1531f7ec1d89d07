package model

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func podNames(ps []*Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// The Secret → pods and target → ExternalSecrets indexes follow adds, updates
// (a changed reference moves) and deletes, answer sorted, and count a pod using a
// Secret twice once.
func TestReferenceIndexes(t *testing.T) {
	s := NewStore(nil)
	pod := func(ns, name string, secrets ...string) *Pod {
		p := &Pod{ObjectMeta: ObjectMeta{Namespace: ns, Name: name}}
		for _, sec := range secrets {
			p.Uses = append(p.Uses, SecretUse{Secret: sec, Via: ViaEnv})
		}
		return p
	}
	s.UpsertPod(pod("a", "p2", "db", "db", "api"))
	s.UpsertPod(pod("a", "p1", "db"))
	s.UpsertPod(pod("b", "p0", "db"))
	s.UpsertPod(pod("a", "p3"))
	s.UpsertExternalSecret(&ExternalSecret{ObjectMeta: ObjectMeta{Namespace: "a", Name: "e2"}, ESWrites: ESWrites{Target: "db"}}, time.Time{})
	s.UpsertExternalSecret(&ExternalSecret{ObjectMeta: ObjectMeta{Namespace: "a", Name: "e1"}, ESWrites: ESWrites{Target: "db"}}, time.Time{})
	check := func(step string, db, api []string, consumed []Ref, esDB []string) {
		t.Helper()
		s.Read(func(v View) {
			if got := podNames(v.PodsUsing("a", "db")); !slices.Equal(got, db) {
				t.Fatalf("%s: PodsUsing(a/db) = %v, want %v", step, got, db)
			}
			if got := podNames(v.PodsUsing("a", "api")); !slices.Equal(got, api) {
				t.Fatalf("%s: PodsUsing(a/api) = %v, want %v", step, got, api)
			}
			if got := v.ConsumedSecrets(); !slices.Equal(got, consumed) {
				t.Fatalf("%s: ConsumedSecrets = %v, want %v", step, got, consumed)
			}
			var es []string
			for _, e := range v.ExternalSecretsTargeting("a", "db") {
				es = append(es, e.Name)
			}
			if !slices.Equal(es, esDB) {
				t.Fatalf("%s: ExternalSecretsTargeting(a/db) = %v, want %v", step, es, esDB)
			}
		})
	}
	check("added", []string{"a/p1", "a/p2"}, []string{"a/p2"}, []Ref{{"a", "api"}, {"a", "db"}, {"b", "db"}}, []string{"e1", "e2"})
	s.UpsertPod(pod("a", "p2", "api"))
	s.UpsertExternalSecret(&ExternalSecret{ObjectMeta: ObjectMeta{Namespace: "a", Name: "e2"}, ESWrites: ESWrites{Target: "other"}}, time.Time{})
	check("updated", []string{"a/p1"}, []string{"a/p2"}, []Ref{{"a", "api"}, {"a", "db"}, {"b", "db"}}, []string{"e1"})
	s.DeletePod("a", "p1")
	s.DeletePod("b", "p0")
	s.DeleteExternalSecret("a", "e1")
	check("deleted", nil, []string{"a/p2"}, []Ref{{"a", "api"}}, nil)

	// Many referrers, then few: the index gives the space back.
	for i := range 100 {
		s.UpsertPod(pod("a", fmt.Sprintf("q%03d", i), "big"))
	}
	for i := range 99 {
		s.DeletePod("a", fmt.Sprintf("q%03d", i))
	}
	if l := s.podsBySecret[Ref{"a", "big"}]; !slices.Equal(l, []string{"q099"}) || cap(l) > 16 {
		t.Fatalf("index after deletes: %v (cap %d)", l, cap(l))
	}
}
