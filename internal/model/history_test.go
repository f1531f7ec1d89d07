package model

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func fp(s string) Fingerprint {
	var f Fingerprint
	copy(f[:], s)
	return f
}

// rec builds a Secret record; keys maps key → a value label turned into a
// fingerprint ("" values are skipped).
func rec(uid string, keys map[string]string, mf ...ManagedField) *Secret {
	s := &Secret{ObjectMeta: ObjectMeta{Namespace: "ns", Name: "s", UID: types.UID(uid)}, Keys: KeySet{}, Managers: mf}
	for k, v := range keys {
		s.Keys.Set(k, KeyInfo{Len: len(v), FP: fp(v), TrimFP: fp(v)})
	}
	return s
}

func k1(v string) map[string]string { return map[string]string{"k": v} }

var refS = Ref{Namespace: "ns", Name: "s"}

// step is one observed record at a time offset.
type step struct {
	at  time.Duration
	sec *Secret
}

func run(h *History, steps []step) {
	var prev *Secret
	for _, s := range steps {
		h.Observe(refS, prev, s.sec, t0.Add(s.at))
		prev = s.sec
	}
}

func TestHistoryFlips(t *testing.T) {
	dataBy := func(m string, at time.Duration) ManagedField {
		return ManagedField{Manager: m, Operation: "Update", Time: t0.Add(at), OwnsData: true}
	}
	labelBy := func(m string, at time.Duration) ManagedField {
		return ManagedField{Manager: m, Operation: "Update", Time: t0.Add(at)}
	}
	tests := []struct {
		name        string
		opts        HistoryOptions
		steps       []step
		at          time.Duration // when Flips is asked
		wantChanged bool
		wantChange  time.Duration
		want        FlipStats
	}{
		{name: "add only is not a change", steps: []step{{0, rec("u", k1("A"))}}},
		{name: "relist of the same data is not a change",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("A"))}}},
		{name: "rotation A→B is not a flip",
			steps:       []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}},
			wantChanged: true, wantChange: time.Minute},
		{name: "A→B→A is a flip",
			steps:       []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("A"))}},
			wantChanged: true, wantChange: 2 * time.Minute, want: FlipStats{InWindow: 1, Total: 1}},
		{name: "A→B→C→A is a flip",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("C"))},
				{3 * time.Minute, rec("u", k1("A"))}},
			wantChanged: true, wantChange: 3 * time.Minute, want: FlipStats{InWindow: 1, Total: 1}},
		{name: "A→B→C→D rotations are not flips",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("C"))},
				{3 * time.Minute, rec("u", k1("D"))}},
			wantChanged: true, wantChange: 3 * time.Minute},
		{name: "A→B→A→B→A is three flips",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("A"))},
				{3 * time.Minute, rec("u", k1("B"))}, {4 * time.Minute, rec("u", k1("A"))}},
			wantChanged: true, wantChange: 4 * time.Minute, want: FlipStats{InWindow: 3, Total: 3}},
		{name: "metadata-only updates are not data changes",
			steps: []step{
				{0, rec("u", k1("A"), dataBy("eso", 0))},
				{time.Minute, func() *Secret {
					s := rec("u", k1("A"), dataBy("eso", 0), labelBy("kubectl-label", time.Minute))
					s.Labels = map[string]string{"team": "a"}
					s.Annotations = map[string]string{"note": "x"}
					return s
				}()},
				{2 * time.Minute, rec("u", k1("A"), dataBy("eso", 2*time.Minute))},
			}},
		{name: "two keys: one flips while the other rotates",
			steps: []step{
				{0, rec("u", map[string]string{"a": "A", "b": "X"})},
				{time.Minute, rec("u", map[string]string{"a": "B", "b": "Y"})},
				{2 * time.Minute, rec("u", map[string]string{"a": "A", "b": "Z"})},
			},
			wantChanged: true, wantChange: 2 * time.Minute, want: FlipStats{InWindow: 1, Total: 1}},
		{name: "two keys flipping in one update are one flip of the Secret",
			steps: []step{
				{0, rec("u", map[string]string{"a": "A", "b": "X"})},
				{time.Minute, rec("u", map[string]string{"a": "B", "b": "Y"})},
				{2 * time.Minute, rec("u", map[string]string{"a": "A", "b": "X"})},
			},
			wantChanged: true, wantChange: 2 * time.Minute, want: FlipStats{InWindow: 1, Total: 1}},
		{name: "a key added or removed is a data change, not a flip",
			steps: []step{
				{0, rec("u", map[string]string{"a": "A"})},
				{time.Minute, rec("u", map[string]string{"a": "A", "b": "X"})},
				{2 * time.Minute, rec("u", map[string]string{"a": "A"})},
			},
			wantChanged: true, wantChange: 2 * time.Minute},
		{name: "entries per key bound: the earlier value is forgotten",
			opts: HistoryOptions{EntriesPerKey: 2},
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("C"))},
				{3 * time.Minute, rec("u", k1("A"))}},
			wantChanged: true, wantChange: 3 * time.Minute},
		{name: "keys per Secret bound: an untracked key's return is not seen",
			opts: HistoryOptions{KeysPerSecret: 1},
			steps: []step{
				{0, rec("u", map[string]string{"a": "A", "b": "X"})},
				{time.Minute, rec("u", map[string]string{"a": "B", "b": "X"})},
				{2 * time.Minute, rec("u", map[string]string{"a": "B", "b": "Y"})},
				{3 * time.Minute, rec("u", map[string]string{"a": "B", "b": "X"})},
			},
			wantChanged: true, wantChange: 3 * time.Minute},
		{name: "window: a value replaced before the window is not a flip",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {3 * time.Hour, rec("u", k1("A"))}},
			at:    3 * time.Hour, wantChanged: true, wantChange: 3 * time.Hour},
		{name: "window: a value current until recently counts however old it is",
			steps: []step{{0, rec("u", k1("X"))}, {time.Minute, rec("u", k1("A"))}, {5 * time.Hour, rec("u", k1("B"))},
				{5*time.Hour + time.Minute, rec("u", k1("A"))}},
			at: 5*time.Hour + time.Minute, wantChanged: true, wantChange: 5*time.Hour + time.Minute,
			want: FlipStats{InWindow: 1, Total: 1}},
		{name: "window: flips expire from the window but stay in the total",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("A"))}},
			at:    2 * time.Hour, wantChanged: true, wantChange: 2 * time.Minute, want: FlipStats{Total: 1}},
		{name: "events per Secret bound the window count, not the total",
			opts: HistoryOptions{EventsPerSecret: 2},
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", k1("B"))}, {2 * time.Minute, rec("u", k1("A"))},
				{3 * time.Minute, rec("u", k1("B"))}, {4 * time.Minute, rec("u", k1("A"))}, {5 * time.Minute, rec("u", k1("B"))}},
			wantChanged: true, wantChange: 5 * time.Minute, want: FlipStats{InWindow: 2, Total: 4}},
		{name: "writers: data writers in the window, sorted; metadata-only managers are not writers",
			steps: []step{
				{0, rec("u", k1("A"), dataBy("externalsecrets.external-secrets.io/db", 0))},
				{time.Minute, rec("u", k1("B"), dataBy("externalsecrets.external-secrets.io/db", 0),
					dataBy("kubectl-client-side-apply", time.Minute), labelBy("kubectl-label", time.Minute))},
				{2 * time.Minute, rec("u", k1("A"), dataBy("externalsecrets.external-secrets.io/db", 2*time.Minute),
					labelBy("kubectl-label", 2*time.Minute))},
			},
			wantChanged: true, wantChange: 2 * time.Minute,
			want: FlipStats{InWindow: 1, Total: 1, Writers: []string{"externalsecrets.external-secrets.io/db", "kubectl-client-side-apply"}}},
		// The delete was missed (a relist shows a new UID): compared with what the
		// deleted object held, like a watched delete and re-create.
		{name: "delete and re-create (new UID) between events with the same data is not a change",
			steps:       []step{{0, rec("u1", k1("A"))}, {time.Minute, rec("u1", k1("B"))}, {2 * time.Minute, rec("u2", k1("B"))}},
			wantChanged: true, wantChange: time.Minute},
		{name: "delete and re-create (new UID) with an earlier value is a change back: a flip",
			steps:       []step{{0, rec("u1", k1("A"))}, {time.Minute, rec("u1", k1("B"))}, {2 * time.Minute, rec("u2", k1("A"))}},
			wantChanged: true, wantChange: 2 * time.Minute, want: FlipStats{InWindow: 1, Total: 1}},
		{name: "a key added is a change of that key, not a flip; removed and re-added with its value neither",
			steps: []step{{0, rec("u", k1("A"))}, {time.Minute, rec("u", map[string]string{"k": "A", "n": "N"})},
				{2 * time.Minute, rec("u", k1("A"))}, {3 * time.Minute, rec("u", map[string]string{"k": "A", "n": "N"})}},
			wantChanged: true, wantChange: 3 * time.Minute},
		// A change first seen late (a relist after a missed watch event) is
		// stamped with the managedFields time of the data write, not the arrival.
		{name: "a change seen late is stamped no later than its managedFields time",
			steps:       []step{{0, rec("u", k1("A"), dataBy("eso", -time.Hour))}, {10 * time.Minute, rec("u", k1("B"), dataBy("eso", time.Minute))}},
			wantChanged: true, wantChange: time.Minute, want: FlipStats{Writers: []string{"eso"}}},
		{name: "a change seen at once keeps its arrival time (managedFields have one-second resolution)",
			steps:       []step{{0, rec("u", k1("A"), dataBy("eso", -time.Hour))}, {time.Minute, rec("u", k1("B"), dataBy("eso", time.Minute-time.Second))}},
			wantChanged: true, wantChange: time.Minute, want: FlipStats{Writers: []string{"eso"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory(tc.opts)
			run(h, tc.steps)
			at, ok := h.LastObservedChange(refS)
			if ok != tc.wantChanged || (ok && !at.Equal(t0.Add(tc.wantChange))) {
				t.Errorf("LastObservedChange = %v, %v; want %v, %v", at, ok, t0.Add(tc.wantChange), tc.wantChanged)
			}
			askAt := tc.at
			if askAt == 0 && len(tc.steps) > 0 {
				askAt = tc.steps[len(tc.steps)-1].at
			}
			got := h.Flips(refS, t0.Add(askAt))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Flips = %+v, want %+v", got, tc.want)
			}
			flipped := h.Flipped()
			if (tc.want.Total > 0) != (len(flipped) == 1) {
				t.Errorf("Flipped = %v", flipped)
			}
		})
	}
}

func TestHistoryStoreDeleteRecreate(t *testing.T) {
	owner := func(at time.Duration) ManagedField {
		return ManagedField{Manager: "kubectl-client-side-apply", Operation: "Update", Time: t0.Add(at), OwnsData: true}
	}
	// Deleted and re-created with the same data while watched (kubectl replace
	// --force, a prune and re-create): not a data change; the estimate from
	// before the delete stays, though the new object's managedFields are new.
	s := NewStore(nil)
	s.UpsertSecret(rec("u1", k1("A"), owner(-time.Hour)), t0)
	s.DeleteSecret("ns", "s", t0.Add(time.Minute))
	s.UpsertSecret(rec("u2", k1("A"), owner(2*time.Minute)), t0.Add(2*time.Minute))
	s.Read(func(v View) {
		h := v.History()
		if _, ok := h.LastObservedChange(refS); ok {
			t.Error("re-created with the same data: observed a change")
		}
		if at, ok := h.PinnedDataWrite(refS); !ok || !at.Equal(t0.Add(-time.Hour)) {
			t.Errorf("estimate after re-create: %v %v, want the deleted object's", at, ok)
		}
	})

	// With flips, then re-created with other data: a change, and the history
	// (flips) goes on.
	s = NewStore(nil)
	s.UpsertSecret(rec("u1", k1("A")), t0)
	s.UpsertSecret(rec("u1", k1("B")), t0.Add(time.Minute))
	s.UpsertSecret(rec("u1", k1("A")), t0.Add(2*time.Minute))
	s.DeleteSecret("ns", "s", t0.Add(150*time.Second))
	s.Read(func(v View) {
		if n := len(v.History().Flipped()); n != 0 {
			t.Errorf("a deleted Secret still listed as flipped")
		}
	})
	s.UpsertSecret(rec("u2", k1("C")), t0.Add(3*time.Minute))
	s.Read(func(v View) {
		h := v.History()
		if at, ok := h.LastObservedChange(refS); !ok || !at.Equal(t0.Add(3*time.Minute)) {
			t.Errorf("re-created with other data: %v %v", at, ok)
		}
		if st := h.Flips(refS, t0.Add(3*time.Minute)); st.Total != 1 {
			t.Errorf("flips after re-create = %+v", st)
		}
	})

	// A re-create after the window is a new object.
	s = NewStore(NewHistory(HistoryOptions{Window: time.Minute}))
	s.UpsertSecret(rec("u1", k1("A")), t0)
	s.DeleteSecret("ns", "s", t0)
	s.UpsertSecret(rec("u2", k1("B")), t0.Add(2*time.Minute))
	s.Read(func(v View) {
		if _, ok := v.History().LastObservedChange(refS); ok {
			t.Error("re-created after the window: observed a change")
		}
	})
}

func TestHistoryTombstonesBounded(t *testing.T) {
	h := NewHistory(HistoryOptions{Tombstones: 3})
	for i := 0; i < 10; i++ {
		r := Ref{Namespace: "ns", Name: string(rune('a' + i))}
		h.Deleted(r, rec("u", k1("A")), t0.Add(time.Duration(i)*time.Second))
	}
	if len(h.tombs) != 3 {
		t.Fatalf("%d tombstones, want 3", len(h.tombs))
	}
	for _, n := range []string{"h", "i", "j"} {
		if _, ok := h.tombs[Ref{Namespace: "ns", Name: n}]; !ok {
			t.Errorf("newest tombstone %s evicted", n)
		}
	}
}

func TestHistoryKeyLastChange(t *testing.T) {
	h := NewHistory(HistoryOptions{KeysPerSecret: 2})
	if at, known := h.KeyLastChange(refS, "a"); !known || !at.IsZero() {
		t.Fatalf("no history: %v %v", at, known)
	}
	run(h, []step{
		{0, rec("u", map[string]string{"a": "A", "b": "X", "c": "P"})},
		{time.Minute, rec("u", map[string]string{"a": "B", "b": "X", "c": "P"})},
		{2 * time.Minute, rec("u", map[string]string{"a": "B", "b": "Y", "c": "P"})},
	})
	for _, c := range []struct {
		key   string
		at    time.Duration
		zero  bool
		known bool
	}{
		{key: "a", at: time.Minute, known: true},
		{key: "b", at: 2 * time.Minute, known: true},
		{key: "c", zero: true, known: true}, // never changed
	} {
		at, known := h.KeyLastChange(refS, c.key)
		if known != c.known || at.IsZero() != c.zero || (!c.zero && !at.Equal(t0.Add(c.at))) {
			t.Errorf("key %s: %v %v", c.key, at, known)
		}
	}
	// A third key changes over the cap: the history can no longer tell unchanged keys.
	h.Observe(refS, rec("u", map[string]string{"a": "B", "b": "Y", "c": "P"}), rec("u", map[string]string{"a": "B", "b": "Y", "c": "Q"}), t0.Add(3*time.Minute))
	if _, known := h.KeyLastChange(refS, "c"); known {
		t.Error("untracked key reported as known")
	}
	if at, known := h.KeyLastChange(refS, "a"); !known || !at.Equal(t0.Add(time.Minute)) {
		t.Errorf("tracked key a: %v %v", at, known)
	}
}

// Adding a key changes that key only: readers of the other keys are not made
// stale by it (the history used to fall back to the whole Secret's change).
func TestHistoryKeyAdded(t *testing.T) {
	h := NewHistory(HistoryOptions{})
	run(h, []step{
		{0, rec("u", map[string]string{"a": "A"})},
		{time.Minute, rec("u", map[string]string{"a": "A", "new": "N"})},
		{2 * time.Minute, rec("u", map[string]string{"a": "A"})},
	})
	if at, known := h.KeyLastChange(refS, "a"); !known || !at.IsZero() {
		t.Errorf("unchanged key a: %v %v", at, known)
	}
	if at, known := h.KeyLastChange(refS, "new"); !known || !at.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("added then removed key: %v %v", at, known)
	}
	if at, ok := h.LastObservedChange(refS); !ok || !at.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("the Secret's data changed (envFrom readers): %v %v", at, ok)
	}
}

func TestHistoryPinnedDataWrite(t *testing.T) {
	owner := func(at time.Duration) ManagedField {
		return ManagedField{Manager: "helm", Operation: "Update", Time: t0.Add(at), OwnsData: true}
	}
	// A data owner edits only labels: its managedFields time moves, the data does not.
	h := NewHistory(HistoryOptions{})
	run(h, []step{{0, rec("u", k1("A"), owner(-time.Hour))}, {time.Minute, rec("u", k1("A"), owner(time.Minute))}})
	if at, ok := h.PinnedDataWrite(refS); !ok || !at.Equal(t0.Add(-time.Hour)) {
		t.Errorf("after metadata-only edit: %v %v", at, ok)
	}
	if _, ok := h.LastObservedChange(refS); ok {
		t.Error("metadata-only edit observed as a data change")
	}
	// A data change pins the estimate from before it; observed times take over.
	h = NewHistory(HistoryOptions{})
	run(h, []step{{0, rec("u", k1("A"), owner(-time.Hour))}, {time.Minute, rec("u", k1("B"), owner(time.Minute))}})
	if at, ok := h.PinnedDataWrite(refS); !ok || !at.Equal(t0.Add(-time.Hour)) {
		t.Errorf("after data change: %v %v", at, ok)
	}
	// Nothing seen: the live managedFields hold.
	h = NewHistory(HistoryOptions{})
	run(h, []step{{0, rec("u", k1("A"), owner(-time.Hour))}})
	if _, ok := h.PinnedDataWrite(refS); ok {
		t.Error("pinned without any update")
	}
}

func TestHistoryBusyWriterKeepsRareWriter(t *testing.T) {
	h := NewHistory(HistoryOptions{EventsPerSecret: 3})
	w := func(m string, at time.Duration) ManagedField {
		return ManagedField{Manager: m, Operation: "Update", Time: t0.Add(at), OwnsData: true}
	}
	steps := []step{{0, rec("u", k1("A"))}, {time.Second, rec("u", k1("B"), w("kubectl-client-side-apply", time.Second))}}
	for i := 2; i < 40; i++ { // a busy operator rewrites it 38 times
		steps = append(steps, step{time.Duration(i) * time.Second, rec("u", k1(string(rune('C'+i%2))), w("eso", time.Duration(i)*time.Second))})
	}
	run(h, steps)
	got := h.Flips(refS, t0.Add(time.Minute)).Writers
	if want := []string{"eso", "kubectl-client-side-apply"}; !reflect.DeepEqual(got, want) {
		t.Errorf("writers = %v, want %v", got, want)
	}
	if n := len(h.secrets[refS].writers); n != 2 {
		t.Errorf("%d writer entries, want 2", n)
	}
}

func TestHistoryKeyValueChangedSince(t *testing.T) {
	h := NewHistory(HistoryOptions{})
	run(h, []step{
		{0, rec("u", map[string]string{"a": "A", "p": "P1"})},
		{time.Minute, rec("u", map[string]string{"a": "A"})},                // p removed
		{2 * time.Minute, rec("u", map[string]string{"a": "A", "p": "P1"})}, // p restored, same value
		{3 * time.Minute, rec("u", map[string]string{"a": "B", "p": "P1"})},
		{4 * time.Minute, rec("u", map[string]string{"a": "A", "p": "P1"})}, // a flipped back
	})
	for _, c := range []struct {
		key     string
		at      time.Duration
		changed bool
		known   bool
	}{
		{"p", -time.Hour, false, true},       // started before: holds P1, as now
		{"p", 90 * time.Second, true, true},  // started while p was absent
		{"a", -time.Hour, false, true},       // A then, A now
		{"a", 210 * time.Second, true, true}, // started on B
		{"never", -time.Hour, false, false},  // no change observed: the caller asks KeyLastChange
	} {
		changed, _, known := h.KeyValueChangedSince(refS, c.key, t0.Add(c.at))
		if changed != c.changed || known != c.known {
			t.Errorf("%s at %v: changed %v known %v, want %v %v", c.key, c.at, changed, known, c.changed, c.known)
		}
	}
}
