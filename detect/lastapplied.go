package detect

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Causes of a truncated last-applied record.
const (
	// CauseTruncatedPatch: the last-applied list is already shorter than the desired
	// one (Helm rendered manifest or Argo CD target state): what was applied was cut
	// short, e.g. by Argo CD rebuilding the list from live (RespectIgnoreDifferences).
	// The one cause that pages: entries added in Git never ship.
	CauseTruncatedPatch = "truncated_patch"
	// CauseRevertedAfterApply: last-applied holds every desired entry but the live
	// object lacks some: something removed them after the apply.
	CauseRevertedAfterApply = "reverted_after_apply"
	// Without a desired source, last-applied vs live only:
	CauseLiveShorter        = "live_shorter"         // live lacks entries last-applied has (the next apply restores them)
	CauseLastAppliedShorter = "last_applied_shorter" // an ExternalSecret's live list has entries last-applied lacks (the next apply drops them)
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
// three lists: desired (the Argo CD target state of the revision Argo CD says
// it delivered, when the Argo CD API source has it, else the latest deployed
// Helm release's rendered manifest), last-applied and live. A revision waiting
// for a sync is not desired state here: what was applied could not hold it.
//
//   - desired known: entries of desired missing from last-applied →
//     truncated_patch (Missing = that count); else entries of desired missing from
//     live → reverted_after_apply (Missing = that count); else nothing.
//   - no desired source: entries of last-applied missing from live → live_shorter;
//     else, for an ExternalSecret, entries of live missing from last-applied →
//     last_applied_shorter.
//
// The annotation is evidence only while the manager that wrote it still holds the
// newest write of the list (model.LastApplied.HoldsList, from managedFields):
// kubectl patch and kubectl edit change the list without updating the
// annotation, and after them, server-side apply, Helm or Argo CD it is frozen
// history. How client-side kubectl apply treats what is left (verified with the
// real kubectl v1.37.2, docs/design.md "Precision"): a Secret's data is a map
// merged per key, and keys only in live (the token controller's token, ca.crt and
// namespace; argocd-server's server.secretkey; a key added with kubectl patch)
// survive every later apply, so a Secret is never "last-applied shorter". An
// ExternalSecret's spec.data is an atomic list in a JSON merge patch: an apply
// whose list differs from live replaces the whole list.
//
// Lists are compared as multisets of names, so a reordering is not a finding.
// An annotation that failed to parse, or that describes another kind or name
// (ESO copies an ExternalSecret's annotation onto its target Secret), is skipped.
func LastAppliedTruncated(v model.View, avail model.Availability) []Truncation {
	var out []Truncation
	desired := newDesiredLists(v, avail)
	if avail[model.ResExternalSecrets] {
		for _, e := range v.ExternalSecrets() {
			la := e.LastApplied
			if e.DecodeErr != "" || !describes(la, "ExternalSecret", e.Name) || !la.HoldsList {
				continue
			}
			want, ok := desired.specData(e.Namespace, e.Name)
			if t, bad := classify(want, ok, la.SpecDataKeys, e.DataKeys, true); bad {
				t.Namespace, t.Kind, t.Name = e.Namespace, "ExternalSecret", e.Name
				out = append(out, t)
			}
		}
	}
	if avail[model.ResSecrets] {
		for _, s := range v.Secrets() {
			la := s.LastApplied
			if !describes(la, "Secret", s.Name) || !la.HoldsList {
				continue
			}
			live := make([]string, 0, s.Keys.Len())
			for k := range s.Keys.All() {
				live = append(live, k)
			}
			sort.Strings(live)
			want, ok := desired.secretKeys(s.Namespace, s.Name)
			if t, bad := classify(want, ok, la.DataKeys, live, false); bad {
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

// classify applies the table of LastAppliedTruncated. atomic says the live list
// is replaced as a whole by the next apply (an ExternalSecret's spec.data), so
// live entries the annotation lacks would be dropped.
func classify(desired []string, haveDesired bool, lastApplied, live []string, atomic bool) (Truncation, bool) {
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
	if !atomic {
		return Truncation{}, false
	}
	if n := missingFrom(live, lastApplied); n > 0 {
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

// desiredLists answers "what is the desired list of this object": the
// revision a GitOps tool says it delivered first (a pending revision is not
// what was applied: GitOpsDesired), else the latest deployed Helm release that
// renders it.
//
// The lists are built at the first question: most namespaces hold no object
// with a last-applied list and ask none (built for every namespace, they were
// 60 % of a scrape's CPU after a GitOps change at 1,000 Kustomizations).
type desiredLists struct {
	v      model.View
	avail  model.Availability
	built  bool
	gitops map[objKey]*model.Declared
	helm   map[objKey]model.Declared
}

func newDesiredLists(v model.View, avail model.Availability) *desiredLists {
	return &desiredLists{v: v, avail: avail}
}

func (d *desiredLists) build() {
	if d.built {
		return
	}
	d.built = true
	v, avail := d.v, d.avail
	d.gitops = map[objKey]*model.Declared{}
	desired := GitOpsDesired(v)
	for i := range desired {
		x := &desired[i]
		k := objKey{x.Object.Kind, x.Object.Namespace, x.Object.Name}
		if _, dup := d.gitops[k]; !dup && x.Delivery == Delivered {
			d.gitops[k] = &x.Object
		}
	}
	if !avail[model.ResHelmReleases] {
		return
	}
	d.helm = map[objKey]model.Declared{}
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
}

// specData returns the desired spec.data secretKeys of ExternalSecret ns/name.
func (d *desiredLists) specData(ns, name string) ([]string, bool) {
	d.build()
	if o, ok := d.gitops[objKey{"ExternalSecret", ns, name}]; ok && o.ES != nil {
		return o.ES.DataKeys, true
	}
	if x, ok := d.helm[objKey{"ExternalSecret", ns, name}]; ok && x.ES != nil {
		return x.ES.DataKeys, true
	}
	return nil, false
}

// secretKeys returns the desired key names of Secret ns/name.
func (d *desiredLists) secretKeys(ns, name string) ([]string, bool) {
	d.build()
	if o, ok := d.gitops[objKey{"Secret", ns, name}]; ok {
		return o.Keys, true
	}
	if x, ok := d.helm[objKey{"Secret", ns, name}]; ok {
		return x.Keys, true
	}
	return nil, false
}
