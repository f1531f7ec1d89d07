package model

import (
	"sort"
	"time"
)

// HistoryOptions bounds the observed-change history.
type HistoryOptions struct {
	// EntriesPerKey is how many fingerprints are kept per key (default 4).
	EntriesPerKey int
	// KeysPerSecret caps how many keys of one Secret are tracked (default 64).
	KeysPerSecret int
	// Window is how long a change is remembered for flip detection (default 1h).
	Window time.Duration
	// EventsPerSecret caps the flip and writer events kept per Secret (default 32).
	EventsPerSecret int
}

func (o *HistoryOptions) defaults() {
	if o.EntriesPerKey <= 1 {
		o.EntriesPerKey = 4
	}
	if o.KeysPerSecret <= 0 {
		o.KeysPerSecret = 64
	}
	if o.Window <= 0 {
		o.Window = time.Hour
	}
	if o.EventsPerSecret <= 0 {
		o.EventsPerSecret = 32
	}
}

// History is what only a watch can see: per Secret, the time of the last observed
// data change, a short fingerprint history per key, and the flips (a key returning
// to an earlier fingerprint) with the writers that made them. It is bounded: a few
// entries per key, a capped number of keys and events per Secret, and entries
// older than the window are dropped. It is guarded by the Store's lock.
type History struct {
	opts    HistoryOptions
	secrets map[Ref]*secretHistory
}

type fpAt struct {
	fp Fingerprint
	at time.Time
}

type writerAt struct {
	manager string
	at      time.Time
}

type secretHistory struct {
	lastChange time.Time
	keys       map[string][]fpAt
	flips      []time.Time
	flipsTotal uint64
	writers    []writerAt
}

// NewHistory makes an empty history.
func NewHistory(o HistoryOptions) *History {
	o.defaults()
	return &History{opts: o, secrets: map[Ref]*secretHistory{}}
}

// Observe compares an old and a new record of the same Secret. An add (old nil) is
// not a change: the initial list and a relist must never look like one.
func (h *History) Observe(r Ref, old, cur *Secret, now time.Time) {
	if old == nil || cur == nil || old == cur {
		return
	}
	if old.UID != cur.UID && old.UID != "" && cur.UID != "" {
		// Deleted and re-created between two events: a new object, not a change.
		delete(h.secrets, r)
		return
	}
	changed := false
	for k, ok := range old.Keys {
		if nk, found := cur.Keys[k]; !found || nk.FP != ok.FP {
			changed = true
			break
		}
	}
	if !changed {
		for k := range cur.Keys {
			if _, found := old.Keys[k]; !found {
				changed = true
				break
			}
		}
	}
	if !changed {
		return
	}
	sh := h.secrets[r]
	if sh == nil {
		sh = &secretHistory{keys: map[string][]fpAt{}}
		h.secrets[r] = sh
	}
	sh.lastChange = now
	cutoff := now.Add(-h.opts.Window)
	if w := latestDataWriter(cur.Managers); w != "" {
		sh.writers = appendBounded(sh.writers, writerAt{manager: w, at: now}, h.opts.EventsPerSecret)
	}
	flipped := false
	for k, nk := range cur.Keys {
		ok, had := old.Keys[k]
		if !had || ok.FP == nk.FP {
			continue
		}
		entries, tracked := sh.keys[k]
		if !tracked {
			if len(sh.keys) >= h.opts.KeysPerSecret {
				continue
			}
			// The old value was current until now; its real start is unknown.
			entries = []fpAt{{fp: ok.FP, at: now}}
		}
		// Drop entries that fell out of the window, but keep the current one.
		kept := entries[:0]
		for i, e := range entries {
			if e.at.After(cutoff) || i == len(entries)-1 {
				kept = append(kept, e)
			}
		}
		entries = kept
		// A return to any earlier fingerprint but the current one is a flip.
		for i := 0; i < len(entries)-1; i++ {
			if entries[i].fp == nk.FP {
				flipped = true
				break
			}
		}
		entries = appendBounded(entries, fpAt{fp: nk.FP, at: now}, h.opts.EntriesPerKey)
		sh.keys[k] = entries
	}
	if flipped {
		sh.flipsTotal++
		sh.flips = appendBounded(sh.flips, now, h.opts.EventsPerSecret)
	}
}

func appendBounded[T any](xs []T, x T, max int) []T {
	if len(xs) >= max {
		copy(xs, xs[1:])
		xs = xs[:len(xs)-1]
	}
	return append(xs, x)
}

func latestDataWriter(ms []ManagedField) string {
	var best ManagedField
	for _, m := range ms {
		if m.OwnsData && !m.Time.Before(best.Time) {
			best = m
		}
	}
	return best.Manager
}

// Forget drops a deleted Secret's history.
func (h *History) Forget(r Ref) { delete(h.secrets, r) }

// LastObservedChange is the time of the last data change this process saw.
func (h *History) LastObservedChange(r Ref) (time.Time, bool) {
	sh := h.secrets[r]
	if sh == nil || sh.lastChange.IsZero() {
		return time.Time{}, false
	}
	return sh.lastChange, true
}

// FlipStats says how often Secret r flipped: within the window ending at now, and
// since this process started; writers are the managers of the data writes seen in
// the window, sorted and de-duplicated.
type FlipStats struct {
	InWindow int
	Total    uint64
	Writers  []string
}

// Flips returns r's flip statistics.
func (h *History) Flips(r Ref, now time.Time) FlipStats {
	sh := h.secrets[r]
	if sh == nil {
		return FlipStats{}
	}
	cutoff := now.Add(-h.opts.Window)
	st := FlipStats{Total: sh.flipsTotal}
	for _, t := range sh.flips {
		if t.After(cutoff) {
			st.InWindow++
		}
	}
	seen := map[string]bool{}
	for _, w := range sh.writers {
		if w.at.After(cutoff) && !seen[w.manager] {
			seen[w.manager] = true
			st.Writers = append(st.Writers, w.manager)
		}
	}
	sort.Strings(st.Writers)
	return st
}

// Flipped lists the Secrets with at least one flip since start, sorted.
func (h *History) Flipped() []Ref {
	var out []Ref
	for r, sh := range h.secrets {
		if sh.flipsTotal > 0 {
			out = append(out, r)
		}
	}
	sortRefs(out)
	return out
}

// Len is the number of Secrets with history, for self-metrics.
func (h *History) Len() int { return len(h.secrets) }
