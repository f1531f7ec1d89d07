package model

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Records go through client-go informers: cache keys, meta.Accessor and
// DeletedFinalStateUnknown must work on them as on API objects.
func TestRecordsAreMetaObjects(t *testing.T) {
	om := ObjectMeta{Namespace: "ns", Name: "n", UID: "u", ResourceVersion: "7",
		Annotations: map[string]string{"a": "b"}}
	for _, rec := range []runtime.Object{&Secret{ObjectMeta: om}, &Pod{ObjectMeta: om}, &ServiceAccount{ObjectMeta: om},
		&ExternalSecret{ObjectMeta: om}, &SecretStore{ObjectMeta: om}, &HelmRelease{ObjectMeta: om}, &ArgoApp{ObjectMeta: om}} {
		m, err := meta.Accessor(rec)
		if err != nil {
			t.Fatalf("%T: meta.Accessor: %v", rec, err)
		}
		if m.GetNamespace() != "ns" || m.GetName() != "n" || m.GetUID() != "u" || m.GetResourceVersion() != "7" ||
			m.GetAnnotations()["a"] != "b" {
			t.Fatalf("%T: accessor reads %s/%s %s %s", rec, m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion())
		}
		for _, obj := range []any{rec, cache.DeletedFinalStateUnknown{Key: "ns/n", Obj: rec}} {
			if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err != nil || k != "ns/n" {
				t.Fatalf("%T: key %q, %v", obj, k, err)
			}
		}
		if k, err := cache.MetaNamespaceKeyFunc(rec); err != nil || k != "ns/n" {
			t.Fatalf("%T: MetaNamespaceKeyFunc %q, %v", rec, k, err)
		}
		if idx, err := cache.MetaNamespaceIndexFunc(rec); err != nil || !slices.Equal(idx, []string{"ns"}) {
			t.Fatalf("%T: MetaNamespaceIndexFunc %q, %v", rec, idx, err)
		}
		// Setters of fields not kept do nothing; the others set.
		m.SetResourceVersion("8")
		m.SetGeneration(3)
		m.SetFinalizers([]string{"x"})
		m.SetDeletionTimestamp(&metav1.Time{})
		if m.GetResourceVersion() != "8" || m.GetGeneration() != 0 || m.GetFinalizers() != nil || m.GetDeletionTimestamp() != nil {
			t.Fatalf("%T: setters misbehave", rec)
		}
	}
}

func TestKeySet(t *testing.T) {
	m := map[string]KeyInfo{"b": {Len: 2}, "a": {Len: 1}, "c": {Len: 3}}
	ks := NewKeySet(m)
	if ks.Len() != 3 || !slices.Equal(ks.Names(), []string{"a", "b", "c"}) {
		t.Fatalf("NewKeySet: %v", ks)
	}
	if ki, ok := ks.Get("b"); !ok || ki.Len != 2 {
		t.Fatalf("Get(b) = %v, %v", ki, ok)
	}
	if _, ok := ks.Get("z"); ok || ks.Has("z") || !ks.Has("c") {
		t.Fatal("Has/Get of an absent key")
	}
	if got := maps.Collect(ks.All()); !maps.Equal(got, m) {
		t.Fatalf("All = %v", got)
	}
	ks.Set("0", KeyInfo{Len: 9})
	ks.Set("b", KeyInfo{Len: 20})
	if !slices.Equal(ks.Names(), []string{"0", "a", "b", "c"}) || must(ks.Get("b")).Len != 20 {
		t.Fatalf("Set: %v", ks)
	}
	var empty KeySet
	if empty.Len() != 0 || empty.Has("a") || NewKeySet(nil).Len() != 0 {
		t.Fatal("empty KeySet")
	}
	for range empty.All() {
		t.Fatal("All of an empty set yields")
	}

	// TrimFP is kept apart only when it differs; every combination reads back.
	fa, fb := Fingerprint{1}, Fingerprint{2}
	m2 := map[string]KeyInfo{"k1": {Len: 1, FP: fa, TrimFP: fa}, "k2": {Len: 2, FP: fa, TrimFP: fb},
		"k3": {Len: 3, FP: fa}, "k4": {Len: 4}, "k5": {Len: 5, TrimFP: fb}}
	ks2 := NewKeySet(m2)
	if got := maps.Collect(ks2.All()); !maps.Equal(got, m2) || ks2.Len() != 5 {
		t.Fatalf("with trims: %v", got)
	}
	for k, v := range m2 {
		if got, ok := ks2.Get(k); !ok || got != v {
			t.Fatalf("Get(%s) = %v, want %v", k, got, v)
		}
	}
	ks2.Set("k0", KeyInfo{Len: 7, TrimFP: fa})
	ks2.Set("k2", KeyInfo{Len: 8, FP: fb, TrimFP: fb})
	m2["k0"], m2["k2"] = KeyInfo{Len: 7, TrimFP: fa}, KeyInfo{Len: 8, FP: fb, TrimFP: fb}
	if got := maps.Collect(ks2.All()); !maps.Equal(got, m2) || ks2.Len() != 6 || ks2.Names()[0] != "k0" {
		t.Fatalf("Set with trims: %v", got)
	}
	// Of two entries with the same name the later wins (stringData over data).
	dup := NewKeySetOf([]KeyEntry{{Name: "b", KeyInfo: KeyInfo{Len: 1}}, {Name: "a"}, {Name: "b", KeyInfo: KeyInfo{Len: 2}}})
	if dup.Len() != 2 || must(dup.Get("b")).Len != 2 {
		t.Fatalf("duplicates: %v", maps.Collect(dup.All()))
	}
	if s := ks.String(); s != "[0 a b c]" {
		t.Fatalf("String() = %q", s)
	}

	var l FPList
	l.Set("y", Fingerprint{2})
	l.Set("x", Fingerprint{1})
	l.Set("y", Fingerprint{3})
	if fp, ok := l.Get("y"); !ok || fp != (Fingerprint{3}) || len(l) != 2 || l[0].Name != "x" {
		t.Fatalf("FPList: %v", l)
	}
	if got := maps.Collect(NewFPList(map[string]Fingerprint{"x": {1}, "y": {3}}).All()); !maps.Equal(got, maps.Collect(l.All())) {
		t.Fatalf("NewFPList: %v", got)
	}
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("absent")
	}
	return v
}
