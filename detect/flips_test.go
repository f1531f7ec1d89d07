package detect

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Fixtures of the flips and stale-pods tests (prefixed fl/sp so they never clash
// with other detectors' fixtures).

var flT0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func flAvail(rs ...model.Resource) model.Availability {
	a := model.Availability{}
	for _, r := range rs {
		a[r] = true
	}
	return a
}

// flSecret builds a Secret record whose keys map key → value label; each label
// becomes a distinct fingerprint.
func flSecret(ns, name, uid string, keys map[string]string, mf ...model.ManagedField) *model.Secret {
	s := &model.Secret{ObjectMeta: model.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Type: "Opaque", Keys: model.KeySet{}, Managers: mf}
	for k, v := range keys {
		var fp model.Fingerprint
		copy(fp[:], v)
		s.Keys.Set(k, model.KeyInfo{Len: len(v), FP: fp, TrimFP: fp})
	}
	return s
}

func flWrite(manager string, at time.Time) model.ManagedField {
	return model.ManagedField{Manager: manager, Operation: "Update", Time: at, OwnsData: true}
}

func flMeta(manager string, at time.Time) model.ManagedField {
	return model.ManagedField{Manager: manager, Operation: "Update", Time: at}
}

// flUpdate is one informer event: a Secret record seen at an offset from flT0.
type flUpdate struct {
	at  time.Duration
	sec *model.Secret
}

func TestFlapping(t *testing.T) {
	const (
		eso  = "externalsecrets.external-secrets.io/session-key"
		kcsa = "kubectl-client-side-apply"
	)
	v := func(val, writer string, at time.Duration) *model.Secret {
		return flSecret("shop", "session-key", "u1", map[string]string{"KEY": val}, flWrite(writer, flT0.Add(at)))
	}
	tests := []struct {
		name      string
		updates   []flUpdate
		avail     model.Availability
		threshold int
		at        time.Duration
		want      []Flap
	}{
		{name: "rotation A→B is no flip",
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", eso, time.Minute)}}},
		{name: "one flip A→B→A is below the default threshold",
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", kcsa, time.Minute)}, {2 * time.Minute, v("A", eso, 2*time.Minute)}},
			want:    []Flap{{Namespace: "shop", Secret: "session-key", FlipsInWindow: 1, Total: 1, Writers: []string{eso, kcsa}}}},
		{name: "two writers fighting: flapping at the default threshold",
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", kcsa, time.Minute)}, {2 * time.Minute, v("A", eso, 2*time.Minute)},
				{3 * time.Minute, v("B", kcsa, 3*time.Minute)}},
			want: []Flap{{Namespace: "shop", Secret: "session-key", FlipsInWindow: 2, Total: 2, Writers: []string{eso, kcsa}, Flapping: true}}},
		{name: "threshold 1",
			threshold: 1,
			updates:   []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", kcsa, time.Minute)}, {2 * time.Minute, v("A", eso, 2*time.Minute)}},
			want:      []Flap{{Namespace: "shop", Secret: "session-key", FlipsInWindow: 1, Total: 1, Writers: []string{eso, kcsa}, Flapping: true}}},
		{name: "A→B→C→A is a flip",
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", eso, time.Minute)}, {2 * time.Minute, v("C", eso, 2*time.Minute)},
				{3 * time.Minute, v("A", eso, 3*time.Minute)}},
			want: []Flap{{Namespace: "shop", Secret: "session-key", FlipsInWindow: 1, Total: 1, Writers: []string{eso}}}},
		{name: "flips leave the window, the total stays; writers outside the window are not named",
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", kcsa, time.Minute)}, {2 * time.Minute, v("A", eso, 2*time.Minute)},
				{3 * time.Minute, v("B", kcsa, 3*time.Minute)}},
			at:   3 * time.Hour,
			want: []Flap{{Namespace: "shop", Secret: "session-key", Total: 2}}},
		{name: "metadata-only updates never flip",
			updates: []flUpdate{
				{0, v("A", eso, 0)},
				{time.Minute, func() *model.Secret {
					s := v("A", eso, 0)
					s.Labels = map[string]string{"rev": "1"}
					s.Managers = append(s.Managers, flMeta("kubectl-label", flT0.Add(time.Minute)))
					return s
				}()},
				{2 * time.Minute, func() *model.Secret {
					s := v("A", eso, 0)
					s.Labels = map[string]string{"rev": "2"}
					s.Managers = append(s.Managers, flMeta("kubectl-label", flT0.Add(2*time.Minute)))
					return s
				}()},
			}},
		{name: "secrets cache not available: nothing",
			avail:   flAvail(model.ResPods),
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", kcsa, time.Minute)}, {2 * time.Minute, v("A", eso, 2*time.Minute)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(nil)
			for _, u := range tc.updates {
				st.UpsertSecret(u.sec, flT0.Add(u.at))
			}
			avail := tc.avail
			if avail == nil {
				avail = flAvail(model.ResSecrets)
			}
			at := tc.at
			if at == 0 {
				at = tc.updates[len(tc.updates)-1].at
			}
			var got []Flap
			st.Read(func(v model.View) { got = Flapping(v, avail, flT0.Add(at), tc.threshold) })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Flapping =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

func TestFlappingDeleteRecreate(t *testing.T) {
	st := model.NewStore(nil)
	a := flSecret("shop", "s", "u1", map[string]string{"K": "A"})
	st.UpsertSecret(a, flT0)
	st.UpsertSecret(flSecret("shop", "s", "u1", map[string]string{"K": "B"}), flT0.Add(time.Minute))
	// Re-created with a new UID and the first value, the delete missed (relist):
	// compared with the deleted object, the data went back to A: a flip.
	st.UpsertSecret(flSecret("shop", "s", "u2", map[string]string{"K": "A"}), flT0.Add(2*time.Minute))
	st.Read(func(v model.View) {
		if got := Flapping(v, flAvail(model.ResSecrets), flT0.Add(2*time.Minute), 1); len(got) != 1 || got[0].Total != 1 {
			t.Errorf("Flapping = %+v", got)
		}
	})
	// A deleted Secret's flips are forgotten with it.
	st.UpsertSecret(flSecret("shop", "s", "u2", map[string]string{"K": "B"}), flT0.Add(3*time.Minute))
	st.UpsertSecret(flSecret("shop", "s", "u2", map[string]string{"K": "A"}), flT0.Add(4*time.Minute))
	st.DeleteSecret("shop", "s", flT0.Add(4*time.Minute))
	st.Read(func(v model.View) {
		if got := Flapping(v, flAvail(model.ResSecrets), flT0.Add(4*time.Minute), 1); len(got) != 0 {
			t.Errorf("Flapping after delete = %+v", got)
		}
	})
}

func TestSortedUnique(t *testing.T) {
	got := sortedUnique([]string{"b", "", "a", "b", "a", "c"})
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sortedUnique = %v", got)
	}
	if sortedUnique(nil) != nil {
		t.Error("nil")
	}
}
