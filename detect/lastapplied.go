package detect

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Causes of a truncated last-applied record.
const (
	// CauseTruncatedPatch: the last-applied list is already shorter than the desired
	// one (Helm rendered manifest or Argo CD target state): what was applied was cut
	// short, e.g. by a list-replacing patch or Argo CD rebuilding the list from live
	// (RespectIgnoreDifferences).
	CauseTruncatedPatch = "truncated_patch"
	// CauseRevertedAfterApply: last-applied holds every desired entry but the live
	// object lacks some: something removed them after the apply.
	CauseRevertedAfterApply = "reverted_after_apply"
	// Without a desired source, last-applied vs live only:
	CauseLiveShorter        = "live_shorter"         // live lacks entries last-applied has
	CauseLastAppliedShorter = "last_applied_shorter" // live has entries last-applied lacks (the next apply drops them)
)

// Truncation is an object whose last-applied record, live state and desired state
// disagree on the entries of a list: spec.data secretKeys for ExternalSecrets, key
// names of data/stringData for Secrets.
type Truncation struct {
	Namespace string
	Kind      string // ExternalSecret or Secret
	Name      string
	Cause     string
	// Missing is how many entries are missing (see the causes).
	Missing int
}

// LastAppliedTruncated compares, per ExternalSecret and Secret that carries a
// kubectl.kubernetes.io/last-applied-configuration annotation describing itself,
// three lists: desired (the Argo CD target state when the Argo CD API source has
// it, else the latest deployed Helm release's rendered manifest), last-applied and
// live.
//
//   - desired known: entries of desired missing from last-applied →
//     truncated_patch (Missing = that count); else entries of desired missing from
//     live → reverted_after_apply (Missing = that count); else nothing.
//   - no desired source: entries of last-applied missing from live → live_shorter;
//     else entries of live missing from last-applied → last_applied_shorter.
//
// Lists are compared as multisets of names, so a reordering is not a finding.
// An annotation that failed to parse, or that describes another kind or name
// (ESO copies an ExternalSecret's annotation onto its target Secret), is skipped.
// For Secrets, keys that an ExternalSecret writes into the Secret are not counted
// as "live has more than last-applied": ESO merging into an applied Secret is the
// intended setup.
func LastAppliedTruncated(v model.View, avail model.Availability) []Truncation {
	var out []Truncation
	desired := newDesiredLists(v, avail)
	if avail[model.ResExternalSecrets] {
		for _, e := range v.ExternalSecrets() {
			la := e.LastApplied
			if e.DecodeErr != "" || !describes(la, "ExternalSecret", e.Name) {
				continue
			}
			want, ok := desired.specData(e.Namespace, e.Name)
			if t, bad := classify(want, ok, la.SpecDataKeys, e.DataKeys, nil); bad {
				t.Namespace, t.Kind, t.Name = e.Namespace, "ExternalSecret", e.Name
				out = append(out, t)
			}
		}
	}
	if avail[model.ResSecrets] {
		for _, s := range v.Secrets() {
			la := s.LastApplied
			if !describes(la, "Secret", s.Name) {
				continue
			}
			live := make([]string, 0, s.Keys.Len())
			for k := range s.Keys.All() {
				live = append(live, k)
			}
			sort.Strings(live)
			var esoKeys map[string]bool
			if avail[model.ResExternalSecrets] {
				for _, e := range v.ExternalSecretsTargeting(s.Namespace, s.Name) {
					for _, k := range ESExpectedKeys(e) {
						if esoKeys == nil {
							esoKeys = map[string]bool{}
						}
						esoKeys[k] = true
					}
				}
			} else if s.Labels["reconcile.external-secrets.io/managed"] == "true" {
				// ESO writes this Secret but which keys is unknown: extra live keys
				// are not judged.
				esoKeys = map[string]bool{"*": true}
			}
			want, ok := desired.secretKeys(s.Namespace, s.Name)
			if t, bad := classify(want, ok, la.DataKeys, live, esoKeys); bad {
				t.Namespace, t.Kind, t.Name = s.Namespace, "Secret", s.Name
				out = append(out, t)
			}
		}
	}
	return out
}

// describes reports whether a parsed last-applied annotation describes an object of
// kind named name.
func describes(la *model.LastApplied, kind, name string) bool {
	if la == nil || la.Err != "" || la.Kind != kind {
		return false
	}
	return la.Name == "" || la.Name == name
}

// classify applies the table of LastAppliedTruncated. ignoreExtra names live
// entries that do not count as "last-applied shorter" ("*": none counts).
func classify(desired []string, haveDesired bool, lastApplied, live []string, ignoreExtra map[string]bool) (Truncation, bool) {
	if haveDesired {
		if n := missingFrom(desired, lastApplied); n > 0 {
			return Truncation{Cause: CauseTruncatedPatch, Missing: n}, true
		}
		if n := missingFrom(desired, live); n > 0 {
			return Truncation{Cause: CauseRevertedAfterApply, Missing: n}, true
		}
		return Truncation{}, false
	}
	if n := missingFrom(lastApplied, live); n > 0 {
		return Truncation{Cause: CauseLiveShorter, Missing: n}, true
	}
	if ignoreExtra["*"] {
		return Truncation{}, false
	}
	extra := live
	if len(ignoreExtra) > 0 {
		extra = nil
		for _, k := range live {
			if !ignoreExtra[k] {
				extra = append(extra, k)
			}
		}
	}
	if n := missingFrom(extra, lastApplied); n > 0 {
		return Truncation{Cause: CauseLastAppliedShorter, Missing: n}, true
	}
	return Truncation{}, false
}

// missingFrom counts the entries of want that have no counterpart in have,
// as multisets.
func missingFrom(want, have []string) int {
	if len(want) == 0 {
		return 0
	}
	count := make(map[string]int, len(have))
	for _, k := range have {
		count[k]++
	}
	n := 0
	for _, k := range want {
		if count[k] > 0 {
			count[k]--
		} else {
			n++
		}
	}
	return n
}

type objKey struct{ kind, ns, name string }

// desiredLists answers "what is the desired list of this object": the Argo CD
// target state first, else the latest deployed Helm release that renders it.
type desiredLists struct {
	v    model.View
	helm map[objKey]model.HelmExpectation
}

func newDesiredLists(v model.View, avail model.Availability) *desiredLists {
	d := &desiredLists{v: v}
	if !avail[model.ResHelmReleases] {
		return d
	}
	d.helm = map[objKey]model.HelmExpectation{}
	for _, h := range v.DeployedReleases() {
		for _, x := range h.Expectations {
			ns := x.Namespace
			if ns == "" {
				ns = h.Namespace
			}
			if !v.InScope(ns) {
				continue
			}
			k := objKey{x.Kind, ns, x.Name}
			if _, dup := d.helm[k]; !dup {
				d.helm[k] = x
			}
		}
	}
	return d
}

// specData returns the desired spec.data secretKeys of ExternalSecret ns/name.
func (d *desiredLists) specData(ns, name string) ([]string, bool) {
	if o, ok := d.v.ArgoDesired(ns, "ExternalSecret", name); ok {
		return o.SpecDataKeys, true
	}
	if x, ok := d.helm[objKey{"ExternalSecret", ns, name}]; ok {
		return x.SpecDataKeys, true
	}
	return nil, false
}

// secretKeys returns the desired key names of Secret ns/name.
func (d *desiredLists) secretKeys(ns, name string) ([]string, bool) {
	if o, ok := d.v.ArgoDesired(ns, "Secret", name); ok {
		return o.DataKeys, true
	}
	if x, ok := d.helm[objKey{"Secret", ns, name}]; ok {
		return x.Keys, true
	}
	return nil, false
}
