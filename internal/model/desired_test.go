package model

import (
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"
)

func TestArgoDesired(t *testing.T) {
	s := NewStore(nil)
	app := Ref{Namespace: "argocd", Name: "shop"}
	items := []Declared{
		{Kind: "Secret", Namespace: "shop", Name: "db", Keys: []string{"password", "user"}},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api", ES: &ESWrites{DataKeys: []string{"A", "B"}, HasSpecData: true}},
	}
	s.SetArgoDesired(app, items)
	items[0].Keys[0] = "mutated" // the store keeps its own copy

	s.Read(func(v View) {
		got, ok := v.ArgoDesired("shop", "Secret", "db")
		if !ok || got.Source.Ref() != app || !reflect.DeepEqual(got.Keys, []string{"password", "user"}) {
			t.Fatalf("Secret: %+v %v", got, ok)
		}
		es, ok := v.ArgoDesired("shop", "ExternalSecret", "api")
		if !ok || es.ES.Target != "api" {
			t.Fatalf("ExternalSecret target defaults to its name: %+v", es)
		}
		if _, ok := v.ArgoDesired("shop", "Secret", "api"); ok {
			t.Fatal("kind is part of the key")
		}
		if all := v.ArgoDesiredAll(); len(all) != 2 || all[0].Kind != "ExternalSecret" {
			t.Fatalf("all: %+v", all)
		}
	})

	// Replacing an Application's list drops what it no longer declares.
	s.SetArgoDesired(app, items[1:])
	s.Read(func(v View) {
		if _, ok := v.ArgoDesired("shop", "Secret", "db"); ok {
			t.Fatal("db is no longer desired")
		}
	})

	// Two Applications declaring one object: the first by name wins; forgetting it
	// falls back to the other.
	other := Ref{Namespace: "argocd", Name: "aaa"}
	s.SetArgoDesired(other, []Declared{{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api", ES: &ESWrites{Target: "t"}}})
	s.Read(func(v View) {
		if got, _ := v.ArgoDesired("shop", "ExternalSecret", "api"); got.Source.Ref() != other {
			t.Fatalf("want %v, got %v", other, got.Source.Ref())
		}
	})
	s.ForgetArgoApp(other)
	s.Read(func(v View) {
		if got, _ := v.ArgoDesired("shop", "ExternalSecret", "api"); got.Source.Ref() != app {
			t.Fatalf("want %v, got %v", app, got.Source.Ref())
		}
	})
	if apps := s.ArgoDesiredApps(); !reflect.DeepEqual(apps, []Ref{app}) {
		t.Fatalf("apps: %v", apps)
	}
	s.ForgetArgoApp(app)
	s.Read(func(v View) {
		if len(v.ArgoDesiredAll()) != 0 {
			t.Fatal("forgotten")
		}
	})
}

// Two stores never share desired state.
func TestArgoDesiredPerStore(t *testing.T) {
	a, b := NewStore(nil), NewStore(nil)
	a.SetArgoDesired(Ref{Namespace: "x", Name: "app"}, []Declared{{Kind: "Secret", Namespace: "x", Name: "s"}})
	b.Read(func(v View) {
		if _, ok := v.ArgoDesired("x", "Secret", "s"); ok {
			t.Fatal("leaked across stores")
		}
	})
}

// Concurrent writers and readers (run with -race).
func TestArgoDesiredConcurrent(t *testing.T) {
	s := NewStore(nil)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				s.SetArgoDesired(Ref{Namespace: "a", Name: "app"}, []Declared{{Kind: "Secret", Namespace: "n", Name: "s", Keys: []string{"k"}}})
				s.ForgetArgoApp(Ref{Namespace: "a", Name: "app"})
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				s.Read(func(v View) { v.ArgoDesired("n", "Secret", "s"); v.ArgoDesiredAll() })
			}
		}()
	}
	wg.Wait()
}

// The desired-state table, a field of the Store, does not keep it alive.
func TestArgoDesiredReleased(t *testing.T) {
	s := NewStore(nil)
	s.SetArgoDesired(Ref{Namespace: "a", Name: "b"}, nil)
	k := weak.Make(s)
	s = nil
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		if k.Value() == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("a Store with desired state was not collected")
}

// DesiredMemo builds once per Store.Read, unscoped, and again when the desired
// state changes in between (it is written without the store's lock, so a write
// can land between two namespaces' evaluations); a new Read builds afresh.
func TestDesiredMemo(t *testing.T) {
	s := NewStore(nil)
	app := Ref{Namespace: "argocd", Name: "shop"}
	s.SetArgoDesired(app, []Declared{{Kind: "Secret", Namespace: "shop", Name: "db", Keys: []string{"k"}}})
	builds := 0
	count := func(v View) any {
		builds++
		if _, scoped := v.Scope(); scoped || !v.Now().IsZero() {
			t.Error("build got a scoped or timed view")
		}
		return len(v.ArgoDesiredAll())
	}
	s.Read(func(v View) {
		for _, ns := range []string{"a", "b", "shop"} {
			if n := v.InNamespace(ns).At(time.Unix(1, 0), nil).DesiredMemo("k", count).(int); n != 1 {
				t.Fatalf("%s: %d", ns, n)
			}
		}
		if builds != 1 {
			t.Fatalf("built %d times in one read", builds)
		}
		if n := v.DesiredMemo("other", count).(int); n != 1 || builds != 2 {
			t.Fatalf("another key: %d, %d builds", n, builds)
		}
		s.SetArgoDesired(app, []Declared{{Kind: "Secret", Namespace: "shop", Name: "db"}, {Kind: "Secret", Namespace: "shop", Name: "api"}})
		if n := v.DesiredMemo("k", count).(int); n != 2 || builds != 3 {
			t.Fatalf("after a write in the read: %d, %d builds", n, builds)
		}
		s.SetFluxDesired(Ref{Namespace: "flux", Name: "apps"}, &FluxDesired{Revision: "main@sha1:1"})
		if v.DesiredMemo("k", count); builds != 4 {
			t.Fatalf("a Flux write did not rebuild: %d builds", builds)
		}
	})
	s.Read(func(v View) { v.DesiredMemo("k", count) })
	if builds != 5 {
		t.Fatalf("a new read reused the last one's value: %d builds", builds)
	}
}
