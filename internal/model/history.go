package model

import (
	"sort"
	"time"
)

// DefaultHistoryWindow is HistoryOptions.Window's default (--flip-window).
const DefaultHistoryWindow = time.Hour

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
	// Tombstones caps how many deleted Secrets are remembered, for Window, so a
	// Secret deleted and re-created is compared with what it held (default 4096).
	Tombstones int
}

func (o *HistoryOptions) defaults() {
	if o.EntriesPerKey <= 1 {
		o.EntriesPerKey = 4
	}
	if o.KeysPerSecret <= 0 {
		o.KeysPerSecret = 64
	}
	if o.Window <= 0 {
		o.Window = DefaultHistoryWindow
	}
	if o.EventsPerSecret <= 0 {
		o.EventsPerSecret = 32
	}
	if o.Tombstones <= 0 {
		o.Tombstones = 4096
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
	// tombs remembers deleted Secrets for a while: a delete and re-create with
	// the same data (kubectl replace --force, a restored backup, a GitOps
	// prune-and-create) is not a data change; with other data it is one.
	tombs map[Ref]tombstone
}

// tombstone is what a deleted Secret leaves: its value-free keys, the
// managedFields summary it had, and its history.
type tombstone struct {
	at       time.Time
	keys     KeySet
	managers []ManagedField
	hist     *secretHistory // nil when it had none
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
	// untracked is set when a data change touched a key whose history is not
	// kept (over KeysPerSecret). Added and removed keys are tracked: a removed
	// key's last entry has the zero fingerprint.
	untracked bool
	// pinned is set at the first observed update that makes the live managedFields
	// unreliable as a data-change estimate: a data change (observed times take
	// over), or a metadata-only edit by a manager that also owns data (its entry's
	// time moves without a data change). pinnedWrite is the estimate from before.
	pinned      bool
	pinnedWrite time.Time
}

// NewHistory makes an empty history.
func NewHistory(o HistoryOptions) *History {
	o.defaults()
	return &History{opts: o, secrets: map[Ref]*secretHistory{}, tombs: map[Ref]tombstone{}}
}

// Observe compares an old and a new record of the same Secret. An add (old nil) is
// not a change: the initial list and a relist must never look like one. An add of
// a Secret this process saw deleted is compared with what the deleted one held.
func (h *History) Observe(r Ref, old, cur *Secret, now time.Time) {
	if cur == nil || old == cur {
		return
	}
	if old == nil {
		h.recreated(r, cur, now)
		return
	}
	if old.UID != cur.UID && old.UID != "" && cur.UID != "" {
		// Deleted and re-created between two events: a delete and an add.
		h.Deleted(r, old, now)
		h.recreated(r, cur, now)
		return
	}
	h.observe(r, old, cur, now)
}

// observe records what changed between two records of one object.
func (h *History) observe(r Ref, old, cur *Secret, now time.Time) {
	changed := false
	for k, ok := range old.Keys.All() {
		if nk, found := cur.Keys.Get(k); !found || nk.FP != ok.FP {
			changed = true
			break
		}
	}
	if !changed {
		for k := range cur.Keys.All() {
			if !old.Keys.Has(k) {
				changed = true
				break
			}
		}
	}
	if !changed {
		// A metadata-only update by a manager that also owns data moves its
		// managedFields time: that time no longer says when the data changed.
		if ow, nw := lastDataWriteTime(old.Managers), lastDataWriteTime(cur.Managers); nw.After(ow) {
			if sh := h.get(r); !sh.pinned {
				sh.pinned, sh.pinnedWrite = true, ow
			}
		}
		return
	}
	sh := h.get(r)
	at := changeTime(sh, cur, now)
	sh.lastChange = at
	if !sh.pinned {
		sh.pinned, sh.pinnedWrite = true, lastDataWriteTime(old.Managers)
	}
	cutoff := now.Add(-h.opts.Window)
	if w := latestDataWriter(cur.Managers); w != "" {
		sh.writers = noteWriter(sh.writers, w, at, h.opts.EventsPerSecret)
	}
	flipped := false
	note := func(k string, before, after Fingerprint) {
		entries, tracked := sh.keys[k]
		if !tracked {
			if len(sh.keys) >= h.opts.KeysPerSecret {
				sh.untracked = true
				return
			}
			// The old value (or absence) was current until now; its real start
			// is unknown.
			entries = []fpAt{{fp: before, at: at}}
		}
		// Drop values replaced before the window began (entries[i+1].at is when
		// entries[i] stopped being current), but keep the current one.
		kept := entries[:0]
		for i, e := range entries {
			if i == len(entries)-1 || entries[i+1].at.After(cutoff) {
				kept = append(kept, e)
			}
		}
		entries = kept
		// A return to any earlier value but the current one is a flip. A key's
		// absence (the zero fingerprint) is not a value: adding, removing or
		// re-adding a key is a change, never a flip.
		if !after.IsZero() && !before.IsZero() {
			for i := 0; i < len(entries)-1; i++ {
				if entries[i].fp == after {
					flipped = true
					break
				}
			}
		}
		sh.keys[k] = appendBounded(entries, fpAt{fp: after, at: at}, h.opts.EntriesPerKey)
	}
	for k, ok := range old.Keys.All() {
		if !cur.Keys.Has(k) {
			note(k, ok.FP, Fingerprint{}) // removed
		}
	}
	for k, nk := range cur.Keys.All() {
		ok, had := old.Keys.Get(k)
		switch {
		case !had:
			note(k, Fingerprint{}, nk.FP) // added
		case ok.FP != nk.FP:
			note(k, ok.FP, nk.FP)
		}
	}
	if flipped {
		sh.flipsTotal++
		sh.flips = appendBounded(sh.flips, at, h.opts.EventsPerSecret)
	}
}

// lateObservation is how much older than the event's arrival a data write's
// managedFields time must be for the write to be stamped with it rather than
// with the arrival: managedFields have a resolution of one second, and a change
// seen late (a relist after a missed watch event, a watch that lagged) happened
// no later than the write that made it.
const lateObservation = 2 * time.Second

// changeTime is the time to stamp an observed data change with: now, or the
// newest managedFields time of a data write when that is clearly earlier (a
// change first seen on a relist), never before the previous observed change.
func changeTime(sh *secretHistory, cur *Secret, now time.Time) time.Time {
	at := now
	if t := lastDataWriteTime(cur.Managers); !t.IsZero() && now.Sub(t) > lateObservation {
		at = t
	}
	if at.Before(sh.lastChange) {
		at = sh.lastChange
	}
	return at
}

// Deleted remembers a deleted Secret for the window (see tombstone) and drops its
// history.
func (h *History) Deleted(r Ref, old *Secret, now time.Time) {
	sh := h.secrets[r]
	delete(h.secrets, r)
	if old == nil {
		return
	}
	cutoff := now.Add(-h.opts.Window)
	for k, t := range h.tombs {
		if !t.at.After(cutoff) {
			delete(h.tombs, k)
		}
	}
	if len(h.tombs) >= h.opts.Tombstones {
		var oldest Ref
		first := true
		for k, t := range h.tombs {
			if first || t.at.Before(h.tombs[oldest].at) {
				oldest, first = k, false
			}
		}
		delete(h.tombs, oldest)
	}
	h.tombs[r] = tombstone{at: now, keys: old.Keys, managers: old.Managers, hist: sh}
}

// recreated handles the add of Secret r: when this process saw it deleted within
// the window, the new object is compared with the deleted one, as an update would
// be. Same data: no change, and the data-change estimate stays the deleted one's.
// Other data: an observed change.
func (h *History) recreated(r Ref, cur *Secret, now time.Time) {
	t, ok := h.tombs[r]
	if !ok {
		return
	}
	delete(h.tombs, r)
	if !t.at.After(now.Add(-h.opts.Window)) {
		return
	}
	if t.hist != nil {
		h.secrets[r] = t.hist
	}
	h.observe(r, &Secret{Keys: t.keys, Managers: t.managers}, cur, now)
}

func appendBounded[T any](xs []T, x T, max int) []T {
	if len(xs) >= max {
		copy(xs, xs[1:])
		xs = xs[:len(xs)-1]
	}
	return append(xs, x)
}

// noteWriter records manager m's data write at time at: one entry per manager
// (its latest write), at most max managers, the one that wrote longest ago evicted
// first, so a busy writer never pushes a rarer one out of the window.
func noteWriter(ws []writerAt, m string, at time.Time, max int) []writerAt {
	for i := range ws {
		if ws[i].manager == m {
			ws[i].at = at
			return ws
		}
	}
	if len(ws) >= max {
		oldest := 0
		for i := range ws {
			if ws[i].at.Before(ws[oldest].at) {
				oldest = i
			}
		}
		ws[oldest] = writerAt{manager: m, at: at}
		return ws
	}
	return append(ws, writerAt{manager: m, at: at})
}

func (h *History) get(r Ref) *secretHistory {
	sh := h.secrets[r]
	if sh == nil {
		sh = &secretHistory{keys: map[string][]fpAt{}}
		h.secrets[r] = sh
	}
	return sh
}

func lastDataWriteTime(ms []ManagedField) time.Time {
	var t time.Time
	for _, m := range ms {
		if m.OwnsData && m.Time.After(t) {
			t = m.Time
		}
	}
	return t
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

// Forget drops a Secret's history and any tombstone of it.
func (h *History) Forget(r Ref) {
	delete(h.secrets, r)
	delete(h.tombs, r)
}

// DeletedAt is when this process last saw Secret r deleted, while it is
// absent and within the window (a re-create drops the tombstone).
func (h *History) DeletedAt(r Ref) (time.Time, bool) {
	t, ok := h.tombs[r]
	if !ok {
		return time.Time{}, false
	}
	return t.at, true
}

// LastObservedChange is the time of the last data change this process saw.
func (h *History) LastObservedChange(r Ref) (time.Time, bool) {
	sh := h.secrets[r]
	if sh == nil || sh.lastChange.IsZero() {
		return time.Time{}, false
	}
	return sh.lastChange, true
}

// KeyLastChange says when key k of Secret r last changed value, appeared or
// disappeared, as observed. known is false when the observed history cannot tell
// (keys over the tracking cap): use LastObservedChange. A zero time with known
// true means no change of that key was observed.
func (h *History) KeyLastChange(r Ref, k string) (t time.Time, known bool) {
	sh := h.secrets[r]
	if sh == nil || sh.lastChange.IsZero() {
		return time.Time{}, true
	}
	if entries := sh.keys[k]; len(entries) > 0 {
		return entries[len(entries)-1].at, true
	}
	return time.Time{}, !sh.untracked
}

// KeyValueChangedSince says whether key k of Secret r holds, as observed, another
// value than it held at time t (a value, or its absence), and when it last
// changed. known is false when the history cannot tell: no change of the key was
// observed (use KeyLastChange), or its entries from before t were dropped.
// A key removed and re-added with its value, or a value that flipped back, is
// the same as at t: a container started then still holds the current value.
func (h *History) KeyValueChangedSince(r Ref, k string, t time.Time) (changed bool, at time.Time, known bool) {
	sh := h.secrets[r]
	if sh == nil {
		return false, time.Time{}, false
	}
	entries := sh.keys[k]
	if len(entries) == 0 {
		return false, time.Time{}, false
	}
	cur := entries[len(entries)-1]
	// entries[0] is the value from before the first observed change when it was
	// recorded together with the first change (same time); then it covers
	// every earlier time.
	var then Fingerprint
	found := false
	for i := len(entries) - 1; i >= 0; i-- {
		if !entries[i].at.After(t) {
			then, found = entries[i].fp, true
			break
		}
	}
	if !found {
		if len(entries) < 2 || !entries[0].at.Equal(entries[1].at) {
			return false, time.Time{}, false // the value at t was dropped
		}
		then = entries[0].fp
	}
	return then != cur.fp, cur.at, true
}

// PinnedDataWrite is the managedFields-derived estimate of r's last data change as
// it stood before the first observed data change or metadata-only edit by a data
// owner; ok is false when neither was seen and the live managedFields still hold.
// After a metadata-only edit the live time says when metadata changed, not data;
// after an observed change it says nothing about keys that did not change.
func (h *History) PinnedDataWrite(r Ref) (time.Time, bool) {
	sh := h.secrets[r]
	if sh == nil || !sh.pinned {
		return time.Time{}, false
	}
	return sh.pinnedWrite, true
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
