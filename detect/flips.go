package detect

import (
	"sort"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// DefaultFlapThreshold is how many flips within the history window mark a Secret
// as flapping when the caller passes no threshold.
const DefaultFlapThreshold = 2

// Flap is a Secret whose data returned to an earlier value (A→B→A) at least once
// since this process started. A single rotation (A→B) is never a flip.
type Flap struct {
	Namespace string
	Secret    string
	// FlipsInWindow counts the flips within the history window ending now.
	FlipsInWindow int
	// Total counts the flips since this process started (a counter).
	Total uint64
	// Writers are the managedFields managers that wrote data within the window,
	// sorted and de-duplicated: who is fighting.
	Writers []string
	// Flapping is set when FlipsInWindow reaches the threshold.
	Flapping bool
}

// Flapping lists every Secret that flipped at least once since start, sorted by
// namespace and name, with Flapping set on those with at least threshold flips in
// the window (DefaultFlapThreshold when threshold < 1). Flips are only seen by
// watching, so the result depends on the observed history, not on the Secret
// records alone; it still needs the Secret cache, without which nothing is judged.
func Flapping(v model.View, avail model.Availability, now time.Time, threshold int) []Flap {
	if !avail[model.ResSecrets] {
		return nil
	}
	if threshold < 1 {
		threshold = DefaultFlapThreshold
	}
	h := v.History()
	if h == nil {
		return nil
	}
	var out []Flap
	for _, r := range h.Flipped() {
		if _, ok := v.Secret(r.Namespace, r.Name); !ok {
			continue
		}
		st := h.Flips(r, now)
		if st.Total == 0 {
			continue
		}
		out = append(out, Flap{
			Namespace:     r.Namespace,
			Secret:        r.Name,
			FlipsInWindow: st.InWindow,
			Total:         st.Total,
			Writers:       sortedUnique(st.Writers),
			Flapping:      st.InWindow >= threshold,
		})
	}
	return out
}

func sortedUnique(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	out := append([]string(nil), xs...)
	sort.Strings(out)
	j := 0
	for _, x := range out {
		if x == "" || (j > 0 && x == out[j-1]) {
			continue
		}
		out[j] = x
		j++
	}
	return out[:j]
}
