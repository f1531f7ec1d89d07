package detect

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Ready-but-short reasons.
const (
	ShortMissingKeys = "missing_keys"
	ShortEmpty       = "empty"
	ShortAbsent      = "absent"
)

// ReadyButShort is an ExternalSecret that reports Ready=True while the Secret it
// writes is absent, empty, or lacks keys it should hold.
type ReadyButShort struct {
	Namespace      string
	ExternalSecret string
	Secret         string
	Reason         string
	// Missing is the number of expected keys the Secret lacks (at least 1).
	Missing int
	// ReadyReason is the condition's reason (SecretSynced, SecretMissing, ...).
	ReadyReason string
	// Expected are the keys the ExternalSecret says its target holds, and
	// MissingKeys those the Secret lacks (missing_keys only).
	Expected    []string
	MissingKeys []string
}

// ReadyButShortES finds ExternalSecrets whose Ready=True is not backed by their Secret.
func ReadyButShortES(v model.View, avail model.Availability) []ReadyButShort {
	if !avail.All(model.ResSecrets, model.ResExternalSecrets) {
		return nil
	}
	var out []ReadyButShort
	for _, e := range v.ExternalSecrets() {
		if e.DecodeErr != "" || e.Ready.Status != "True" || !e.WritesTarget() || e.Deleting || ESEmptiedOnPurpose(v, e) {
			// creationPolicy None: Ready says nothing about a Secret ESO never
			// writes; one being deleted expects nothing; a target ESO deleted or
			// emptied as its deletionPolicy says is not short.
			continue
		}
		if esSyncUnsettled(v, e) {
			continue // ESO has not acted on the spec's last change yet
		}
		expected := unionKeys(e.WrittenKeys(), e.ExpectedKeys)
		atLeastOne := func(n int) int {
			if n < 1 {
				return 1
			}
			return n
		}
		r := ReadyButShort{Namespace: e.Namespace, ExternalSecret: e.Name, Secret: e.Target, ReadyReason: e.Ready.Reason}
		s, ok := v.Secret(e.Namespace, e.Target)
		switch {
		case !ok:
			if targetUnsettled(v, e) {
				continue
			}
			r.Reason, r.Missing = ShortAbsent, atLeastOne(len(expected))
		case s.Keys.Len() == 0:
			r.Reason, r.Missing = ShortEmpty, atLeastOne(len(expected))
		default:
			for _, k := range expected {
				if _, has := s.Keys.Get(k); !has {
					r.MissingKeys = append(r.MissingKeys, k)
				}
			}
			if len(r.MissingKeys) == 0 {
				continue
			}
			r.Reason, r.Missing, r.Expected = ShortMissingKeys, len(r.MissingKeys), expected
		}
		out = append(out, r)
	}
	return out
}

func unionKeys(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, l := range [][]string{a, b} {
		for _, k := range l {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// TargetGrace is how long an absent target is not yet judged after either of
// two moments the watch streams disagree for a while:
//   - the ExternalSecret's Ready condition last changed (not at all when ESO's
//     reason is SecretMissing: it says so itself). ESO writes the Secret and
//     then the status, but the two reach driftwatch on separate watch streams in
//     either order: for a moment after a sync the ExternalSecret can say Ready
//     while its Secret's create event is still in flight;
//   - this process saw the target deleted. Deleting an ExternalSecret (or its
//     CRD) garbage-collects the Secret it owns, and the Secret's delete event
//     can arrive before the ExternalSecret's; deleting a Secret to make ESO
//     write it afresh is everyday practice, and ESO re-creates it within
//     moments.
//
// A target still absent after the grace is reported (the pages wait minutes
// anyway).
const TargetGrace = 15 * time.Second

// targetUnsettled reports whether e's target was seen deleted, or e's Ready
// condition changed, less than TargetGrace before the view's evaluation time,
// and asks for a recheck when the grace ends. A view without an evaluation time
// (model.View.At) applies no grace.
func targetUnsettled(v model.View, e *model.ExternalSecret) bool {
	now := v.Now()
	if now.IsZero() {
		return false
	}
	if h := v.History(); h != nil {
		if at, ok := h.DeletedAt(model.Ref{Namespace: e.Namespace, Name: e.Target}); ok && now.Sub(at) < TargetGrace {
			v.RecheckAt(at.Add(TargetGrace))
			return true
		}
	}
	if e.Ready.Reason == "SecretMissing" {
		return false // ESO itself says the target is missing: no event in flight
	}
	// The Ready condition's transition, not refreshTime: a refresh that keeps
	// failing to find the target must not renew the grace forever.
	last := e.Ready.LastTransitionTime
	if last.IsZero() || now.Sub(last) >= TargetGrace {
		return false
	}
	v.RecheckAt(last.Add(TargetGrace))
	return true
}

// ESPendingGrace is how long an ExternalSecret whose spec changed is not
// judged while ESO has not synced the change (model.ExternalSecret.SyncPending:
// status.syncedResourceVersion names an older generation). Until ESO syncs,
// the status, Ready included, speaks of the spec before the change, and a key
// the change added is short of the Secret for as long as ESO takes: a
// reconcile, at most its queue's backoff, well within two minutes when ESO
// runs. Still pending after that, ESO is not acting on it (stopped, stuck), and
// the keys missing are reported as before.
const ESPendingGrace = 2 * time.Minute

// esSyncUnsettled reports whether e's spec changed less than ESPendingGrace
// ago and ESO has not synced it yet, or ESO synced a change less than
// TargetGrace ago (its status and the Secret it wrote reach driftwatch on
// separate watch streams, in either order), and asks for a recheck when the
// grace ends. A view without an evaluation time applies no grace.
func esSyncUnsettled(v model.View, e *model.ExternalSecret) bool {
	now := v.Now()
	if now.IsZero() {
		return false
	}
	since, ok := v.ExternalSecretSyncSeen(e)
	if !ok {
		return false
	}
	grace := TargetGrace
	if e.SyncPending() {
		grace = ESPendingGrace
	}
	if now.Sub(since) >= grace {
		return false
	}
	v.RecheckAt(since.Add(grace))
	return true
}
