package collectors

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// The collector keeps findings compact between scrapes (stored) and rebuilds
// them for the page, the API and agent check: every finding the detectors
// make, with the evidence and consumers their emitters add, comes back equal,
// and the evaluation a scrape leaves reads, sorted, as the findings it made.
func TestStoredFindingsRoundTrip(t *testing.T) {
	now := time.Unix(10000, 0)
	cfg := Config{Inventory: true, Now: func() time.Time { return now }}
	namespaces := []string{"a", "b", "c"}
	r := rand.New(rand.NewPCG(11, 7))
	s := model.NewStore(nil)
	health := mt.HealthAll()
	families := map[string]bool{}
	total := 0
	for step := 0; step < 300; step++ {
		ns := namespaces[r.IntN(len(namespaces))]
		switch r.IntN(6) {
		case 0, 1:
			s.UpsertSecret(incSecret(r, ns, fmt.Sprintf("s%d", r.IntN(5))), now.Add(time.Duration(step)*time.Second))
		case 2, 3:
			s.UpsertPod(incPod(r, ns, fmt.Sprintf("p%d", r.IntN(6))))
		case 4:
			s.UpsertExternalSecret(incES(r, ns, fmt.Sprintf("e%d", r.IntN(4)), now), time.Time{})
		case 5:
			s.UpsertStore(mt.ClusterSecretStore("vault", mt.StoreProvider("vault"), mt.StoreReady([]string{"True", "False"}[r.IntN(2)], "")))
		}
		f := NewFindings(s, health, cfg)
		avail := model.AvailabilityOf(health.States())
		var made []finding.Finding
		s.Read(func(v model.View) {
			for _, d := range f.detectors {
				if !avail.All(d.requires...) {
					continue
				}
				e := &emitter{cfg: &f.cfg}
				if !f.run(e, d, v.At(now, nil), avail, now) {
					t.Fatalf("step %d: detector %s failed", step, d.name)
				}
				made = append(made, e.found...)
			}
		})
		for i, st := range compact(made) {
			if got := st.finding(); !reflect.DeepEqual(got, made[i]) {
				t.Fatalf("step %d: a stored finding reads back different:\n got %+v\nwant %+v", step, got, made[i])
			}
			families[made[i].Metric] = true
		}
		total += len(made)
		if err := f.WriteText(discard{}); err != nil {
			t.Fatal(err)
		}
		finding.Sort(made)
		if got := f.Latest(time.Hour).Findings; !reflect.DeepEqual(got, made) && (len(got) > 0 || len(made) > 0) {
			t.Fatalf("step %d: the scrape's evaluation reads %d findings, the detectors made %d (or they differ)", step, len(got), len(made))
		}
	}
	if total < 300 || len(families) < 4 {
		t.Fatalf("only %d findings of %d families over the run; the fixture does not exercise the detectors", total, len(families))
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
