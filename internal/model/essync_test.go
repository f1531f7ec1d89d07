package model

import (
	"testing"
	"time"
)

// SyncPending reads status.syncedResourceVersion as ESO writes it
// (ctrlutil.GetResourceVersion: "<generation>-<hash of labels and
// annotations>") and says nothing of what it cannot read.
func TestExternalSecretSyncPending(t *testing.T) {
	for _, c := range []struct {
		gen    int64
		synced string
		want   bool
	}{
		{2, "1-5d1c0e8f", true},
		{2, "2-5d1c0e8f", false},
		{3, "12-ab", true},
		{0, "1-ab", false},  // generation unknown
		{2, "", false},      // never synced
		{2, "abc", false},   // another form
		{2, "x-1", false},   // another form
		{2, "-1-ab", false}, // another form
	} {
		e := &ExternalSecret{Generation: c.gen, SyncedVersion: c.synced}
		if got := e.SyncPending(); got != c.want {
			t.Errorf("generation %d synced %q: %v, want %v", c.gen, c.synced, got, c.want)
		}
	}
}

// The store keeps when it saw a spec change or ESO's sync of one: a re-delivery
// keeps the instant, a label change synced moves nothing, a delete forgets it.
func TestExternalSecretSyncSeen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := NewStore(nil)
	es := func(gen int64, synced string) *ExternalSecret {
		return &ExternalSecret{ObjectMeta: ObjectMeta{Namespace: "a", Name: "e"}, Generation: gen, SyncedVersion: synced}
	}
	seen := func() (time.Time, bool) {
		var at time.Time
		var ok bool
		s.Read(func(v View) { at, ok = v.ExternalSecretSyncSeen(es(0, "")) })
		return at, ok
	}
	s.UpsertExternalSecret(es(1, "1-a"), t0)
	if _, ok := seen(); ok {
		t.Fatal("synced at first sight: an instant kept")
	}
	s.UpsertExternalSecret(es(2, "1-a"), t0.Add(time.Second))
	if at, ok := seen(); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("spec change: %v %v", at, ok)
	}
	s.UpsertExternalSecret(es(2, "1-a"), t0.Add(2*time.Second))
	if at, _ := seen(); !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("re-delivery moved the instant to %v", at)
	}
	s.UpsertExternalSecret(es(2, "2-a"), t0.Add(3*time.Second))
	if at, _ := seen(); !at.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("sync: %v", at)
	}
	s.UpsertExternalSecret(es(2, "2-b"), t0.Add(4*time.Second))
	if at, _ := seen(); !at.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("label change synced moved the instant to %v", at)
	}
	s.UpsertExternalSecret(es(3, "2-b"), time.Time{})
	if at, _ := seen(); !at.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("an upsert without a time moved the instant to %v", at)
	}
	s.DeleteExternalSecret("a", "e")
	if _, ok := seen(); ok {
		t.Fatal("kept after the delete")
	}
	s.UpsertExternalSecret(es(3, "2-b"), t0.Add(5*time.Second))
	if at, ok := seen(); !ok || !at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("pending at first sight: %v %v", at, ok)
	}
}
