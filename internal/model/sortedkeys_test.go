package model

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func sec(ns, name, rv string) *Secret {
	return &Secret{ObjectMeta: ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

func names[T named](xs []T) string {
	out := ""
	for _, x := range xs {
		out += x.GetNamespace() + "/" + x.GetName() + " "
	}
	return out
}

// The cached order follows inserts and deletes, and an update returns the new
// record in the old place.
func TestSortedListsFollowInsertsUpdatesDeletes(t *testing.T) {
	s := NewStore(nil)
	now := time.Now()
	s.UpsertSecret(sec("b", "x", "1"), now)
	s.UpsertSecret(sec("a", "y", "1"), now)
	s.UpsertPod(&Pod{ObjectMeta: ObjectMeta{Namespace: "b", Name: "p"}})
	s.UpsertExternalSecret(&ExternalSecret{ObjectMeta: ObjectMeta{Namespace: "c", Name: "e"}}, time.Time{})
	check := func(want string) {
		t.Helper()
		s.Read(func(v View) {
			if got := names(v.Secrets()); got != want {
				t.Fatalf("Secrets() = %q, want %q", got, want)
			}
		})
	}
	check("a/y b/x ")
	s.UpsertSecret(sec("a", "a", "1"), now)
	check("a/a a/y b/x ")
	s.UpsertSecret(sec("a", "y", "2"), now)
	check("a/a a/y b/x ")
	s.Read(func(v View) {
		if rv := v.Secrets()[1].ResourceVersion; rv != "2" {
			t.Fatalf("after an update Secrets() holds resourceVersion %s, want 2", rv)
		}
	})
	s.DeleteSecret("a", "a", time.Time{})
	check("a/y b/x ")
	s.UpsertPod(&Pod{ObjectMeta: ObjectMeta{Namespace: "a", Name: "q"}})
	s.UpsertExternalSecret(&ExternalSecret{ObjectMeta: ObjectMeta{Namespace: "a", Name: "f"}}, time.Time{})
	s.Read(func(v View) {
		if got := names(v.Pods()); got != "a/q b/p " {
			t.Fatalf("Pods() = %q", got)
		}
		if got := names(v.ExternalSecrets()); got != "a/f c/e " {
			t.Fatalf("ExternalSecrets() = %q", got)
		}
	})
	s.DeletePod("b", "p")
	s.DeleteExternalSecret("c", "e")
	s.Read(func(v View) {
		if got := names(v.Pods()); got != "a/q " {
			t.Fatalf("Pods() = %q", got)
		}
		if got := names(v.ExternalSecrets()); got != "a/f " {
			t.Fatalf("ExternalSecrets() = %q", got)
		}
	})
	s.ClearResource(ResExternalSecrets)
	s.Read(func(v View) {
		if got := names(v.ExternalSecrets()); got != "" {
			t.Fatalf("ExternalSecrets() after clear = %q", got)
		}
	})
}

// Concurrent readers and writers (run with -race).
func TestSortedListsConcurrentReaders(t *testing.T) {
	s := NewStore(nil)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s.UpsertSecret(sec("ns", fmt.Sprintf("s%d-%d", w, i%50), fmt.Sprint(i)), time.Now())
				if i%7 == 0 {
					s.DeleteSecret("ns", fmt.Sprintf("s%d-%d", w, (i+3)%50), time.Time{})
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s.Read(func(v View) {
					xs := v.Secrets()
					for j := 1; j < len(xs); j++ {
						if xs[j-1].Name >= xs[j].Name {
							t.Errorf("unsorted: %s before %s", xs[j-1].Name, xs[j].Name)
						}
					}
					_, n, _ := v.Sizes()
					if n != len(xs) {
						t.Errorf("Secrets() has %d, the map %d", len(xs), n)
					}
				})
			}
		}()
	}
	wg.Wait()
}

func BenchmarkSecretsUnchanged(b *testing.B) {
	s := NewStore(nil)
	for i := 0; i < 20000; i++ {
		s.UpsertSecret(sec(fmt.Sprintf("ns-%03d", i%200), fmt.Sprintf("app-%05d", i), "1"), time.Now())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Read(func(v View) { _ = v.Secrets() })
	}
}

func BenchmarkSecretsAfterUpdate(b *testing.B) {
	s := NewStore(nil)
	for i := 0; i < 20000; i++ {
		s.UpsertSecret(sec(fmt.Sprintf("ns-%03d", i%200), fmt.Sprintf("app-%05d", i), "1"), time.Now())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.UpsertSecret(sec("ns-000", "app-00000", fmt.Sprint(i)), time.Now())
		s.Read(func(v View) { _ = v.Secrets() })
	}
}

// What every Secrets() call cost before the cached order: a full sort.
func BenchmarkSecretsSortEachCall(b *testing.B) {
	s := NewStore(nil)
	for i := 0; i < 20000; i++ {
		s.UpsertSecret(sec(fmt.Sprintf("ns-%03d", i%200), fmt.Sprintf("app-%05d", i), "1"), time.Now())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Read(func(v View) { _ = sortedValues(v.s.secrets) })
	}
}
