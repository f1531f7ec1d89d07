package detect

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// model.AnnCompareWith declares a compare pair: a Secret or an ExternalSecret annotated
// driftwatch.io/compare-with: NAME is compared key by key with Secret NAME of the

// Compare verdicts (label values of driftwatch_compare_mismatch).
const (
	VerdictMatch            = "match"
	VerdictMismatch         = "mismatch"
	VerdictMissingFromStore = "missing_from_store" // the key is only in the live Secret
	VerdictOnlyInStore      = "only_in_store"      // the key is only in the store's copy
	// A whole side is absent: the key label is empty.
	VerdictLiveAbsent  = "live_secret_absent"
	VerdictStoreAbsent = "store_secret_absent"
)

// HintWhitespace says two values differ only in surrounding white space or CRLF
// line endings (equal TrimFP, different FP). Fingerprints cannot tell a trailing
// newline from a leading space, and cannot tell that one value is the base64 of
// the other (that needs the values): the `agent compare` CLI, which reads both
// values in-process, gives those finer hints.
const HintWhitespace = "whitespace"

// ComparePair is one declared compare pair and its per-key result.
type ComparePair struct {
	Namespace string
	// Secret is the object the annotation sits on: the annotated Secret, or the
	// target of the annotated ExternalSecret.
	Secret string
	// CompareWith is the annotation's value.
	CompareWith string
	// Live and Store name the two sides: the store side is the Secret that ESO
	// writes from the store (see ComparePairs); the other one is live.
	Live, Store string
	// Keys holds one entry per non-matching key (and one with Key "" when a side
	// is absent). Ready is true when both Secrets exist and every key matches.
	Keys  []KeyVerdict
	Ready bool
}

// KeyVerdict is the comparison of one key.
type KeyVerdict struct {
	Key     string
	Verdict string
	Hint    string
	// LiveLen and StoreLen are byte lengths (0 when the key is absent on that side).
	LiveLen, StoreLen int
}

// CompareKeys compares two Secrets' keys by length and fingerprint. Its result
// has one entry per key of either side, sorted by key, including matches.
func CompareKeys(live, store model.KeySet) []KeyVerdict {
	keys := make([]string, 0, live.Len()+store.Len())
	for k := range live.All() {
		keys = append(keys, k)
	}
	for k := range store.All() {
		if _, ok := live.Get(k); !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]KeyVerdict, 0, len(keys))
	for _, k := range keys {
		l, inLive := live.Get(k)
		s, inStore := store.Get(k)
		kv := KeyVerdict{Key: k, LiveLen: l.Len, StoreLen: s.Len}
		switch {
		case !inStore:
			kv.Verdict = VerdictMissingFromStore
		case !inLive:
			kv.Verdict = VerdictOnlyInStore
		case l.Len == s.Len && l.FP == s.FP:
			kv.Verdict = VerdictMatch
		default:
			kv.Verdict = VerdictMismatch
			if !l.TrimFP.IsZero() && l.TrimFP == s.TrimFP {
				kv.Hint = HintWhitespace
			}
		}
		out = append(out, kv)
	}
	return out
}

// storeSide reports whether Secret ns/name is written by ESO: an ExternalSecret
// targets it, or it carries ESO's managed label.
func storeSide(v model.View, avail model.Availability, ns, name string) bool {
	if avail[model.ResExternalSecrets] && len(v.ExternalSecretsTargeting(ns, name)) > 0 {
		return true
	}
	if s, ok := v.Secret(ns, name); ok && s.Labels["reconcile.external-secrets.io/managed"] == "true" {
		return true
	}
	return false
}

// ComparePairs evaluates every declared compare pair. Pairs come from Secrets
// annotated driftwatch.io/compare-with and, when ExternalSecrets are available,
// from annotated ExternalSecrets (the pair is then the ES's target and NAME). ESO
// copies an ExternalSecret's annotations onto its target when it has no template,
// so the same pair is often declared twice: pairs are deduplicated by
// (namespace, secret, compare_with).
//
// Direction: the store side is the Secret ESO writes. For an ExternalSecret's
// annotation that is its target, and NAME is live. For a Secret's annotation, the
// annotated Secret is the store side when an ExternalSecret targets it or it
// carries ESO's managed label and NAME does not; otherwise the annotated Secret is
// live and NAME is the store's copy (the seed technique: an ExternalSecret syncs a
// throwaway Secret that is compared with the live one before adoption).
func ComparePairs(v model.View, avail model.Availability) []ComparePair {
	if !avail[model.ResSecrets] {
		return nil
	}
	type pk struct{ ns, secret, with string }
	seen := map[pk]bool{}
	var out []ComparePair
	add := func(ns, secret, with string, annotatedIsStore bool) {
		if with == "" || with == secret {
			return
		}
		k := pk{ns, secret, with}
		if seen[k] {
			return
		}
		seen[k] = true
		p := ComparePair{Namespace: ns, Secret: secret, CompareWith: with}
		if annotatedIsStore {
			p.Store, p.Live = secret, with
		} else {
			p.Live, p.Store = secret, with
		}
		evalPair(v, &p)
		out = append(out, p)
	}
	// ExternalSecrets first: their direction is certain, and the copy of their
	// annotation on the target Secret then deduplicates into the same pair.
	if avail[model.ResExternalSecrets] {
		for _, e := range v.ExternalSecrets() {
			if with := e.Annotations[model.AnnCompareWith]; with != "" {
				add(e.Namespace, e.Target, with, true)
			}
		}
	}
	for _, s := range v.Secrets() {
		with := s.Annotations[model.AnnCompareWith]
		if with == "" {
			continue
		}
		isStore := storeSide(v, avail, s.Namespace, s.Name) && !storeSide(v, avail, s.Namespace, with)
		add(s.Namespace, s.Name, with, isStore)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		return a.CompareWith < b.CompareWith
	})
	return out
}

func evalPair(v model.View, p *ComparePair) {
	live, okL := v.Secret(p.Namespace, p.Live)
	store, okS := v.Secret(p.Namespace, p.Store)
	if !okL {
		p.Keys = append(p.Keys, KeyVerdict{Verdict: VerdictLiveAbsent})
	}
	if !okS {
		p.Keys = append(p.Keys, KeyVerdict{Verdict: VerdictStoreAbsent})
	}
	if !okL || !okS {
		return
	}
	p.Ready = true
	for _, kv := range CompareKeys(live.Keys, store.Keys) {
		if kv.Verdict != VerdictMatch {
			p.Ready = false
			p.Keys = append(p.Keys, kv)
		}
	}
}
