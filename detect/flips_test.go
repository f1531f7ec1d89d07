package detect

import (
	"reflect"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// flUpdate is one informer event: a Secret record seen at an offset from mt.T0.
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
		return mt.WithManagers(mt.SecretValues("shop", "session-key", "KEY", val), mt.Write(writer, mt.T0.Add(at)))
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
					mt.Label(s, "rev", "1")
					s.Managers = append(s.Managers, mt.MetaWrite("kubectl-label", mt.T0.Add(time.Minute)))
					return s
				}()},
				{2 * time.Minute, func() *model.Secret {
					s := v("A", eso, 0)
					mt.Label(s, "rev", "2")
					s.Managers = append(s.Managers, mt.MetaWrite("kubectl-label", mt.T0.Add(2*time.Minute)))
					return s
				}()},
			}},
		{name: "secrets cache not available: nothing",
			avail:   mt.Only(model.ResPods),
			updates: []flUpdate{{0, v("A", eso, 0)}, {time.Minute, v("B", kcsa, time.Minute)}, {2 * time.Minute, v("A", eso, 2*time.Minute)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(nil)
			for _, u := range tc.updates {
				st.UpsertSecret(u.sec, mt.T0.Add(u.at))
			}
			avail := tc.avail
			if avail == nil {
				avail = mt.Only(model.ResSecrets)
			}
			at := tc.at
			if at == 0 {
				at = tc.updates[len(tc.updates)-1].at
			}
			var got []Flap
			st.Read(func(v model.View) { got = Flapping(v, avail, mt.T0.Add(at), tc.threshold) })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Flapping =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

func TestFlappingDeleteRecreate(t *testing.T) {
	st := model.NewStore(nil)
	a := mt.WithUID(mt.SecretValues("shop", "s", "K", "A"), "u1")
	st.UpsertSecret(a, mt.T0)
	st.UpsertSecret(mt.WithUID(mt.SecretValues("shop", "s", "K", "B"), "u1"), mt.T0.Add(time.Minute))
	// Re-created with a new UID and the first value, the delete missed (relist):
	// compared with the deleted object, the data went back to A: a flip.
	st.UpsertSecret(mt.WithUID(mt.SecretValues("shop", "s", "K", "A"), "u2"), mt.T0.Add(2*time.Minute))
	st.Read(func(v model.View) {
		if got := Flapping(v, mt.Only(model.ResSecrets), mt.T0.Add(2*time.Minute), 1); len(got) != 1 || got[0].Total != 1 {
			t.Errorf("Flapping = %+v", got)
		}
	})
	// A deleted Secret's flips are forgotten with it.
	st.UpsertSecret(mt.WithUID(mt.SecretValues("shop", "s", "K", "B"), "u2"), mt.T0.Add(3*time.Minute))
	st.UpsertSecret(mt.WithUID(mt.SecretValues("shop", "s", "K", "A"), "u2"), mt.T0.Add(4*time.Minute))
	st.DeleteSecret("shop", "s", mt.T0.Add(4*time.Minute))
	st.Read(func(v model.View) {
		if got := Flapping(v, mt.Only(model.ResSecrets), mt.T0.Add(4*time.Minute), 1); len(got) != 0 {
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
