package detect

// The synced_entries_missing detector: objects lacking what the revision a
// GitOps tool says it delivered declares.

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// DetectorSyncedEntriesMissing is the detector's name.
const DetectorSyncedEntriesMissing = "synced_entries_missing"

// Last-applied evidence of a SyncedEntriesMissing (LastApplied).
const (
	// LastAppliedNone: the object carries no client-side apply record that
	// describes it while its writer holds the list: a server-side apply sync
	// (Argo CD ServerSideApply=true writes none at all), or one kubectl patch
	// or edit made the record history. Also when only template.data keys are
	// missing: the record holds no template keys, so it says nothing of them.
	LastAppliedNone = "none"
	// LastAppliedLacks: the record also lacks the entries: what was applied
	// was cut short (the truncated_patch signature).
	LastAppliedLacks = "lacks"
	// LastAppliedHolds: the record holds them: something removed them from
	// the live object after the apply.
	LastAppliedHolds = "holds"
)

// SyncedEntriesMissing is a Secret or ExternalSecret that lacks entries the
// revision a GitOps tool says it delivered declares: for an ExternalSecret
// spec.data secretKeys and template.data keys, for a Secret its key names.
//
// The claim (Delivered: the last sync Succeeded at that revision and applied
// the object) contradicted by live state is the seed failure: an
// ignoreDifferences entry reaching into a list with RespectIgnoreDifferences
// rebuilds the list from live, so the sync reports Succeeded while entries
// added in Git never ship. With a server-side apply sync there is no
// last-applied annotation to compare (Argo CD v3.2.9 writes none), so this
// compares the delivered target state with live directly; the annotation,
// where it exists and its writer still holds the list, is extra evidence
// (LastApplied). A revision waiting for a sync is not evidence (PendingSync).
type SyncedEntriesMissing struct {
	Namespace string
	Kind      string // Secret or ExternalSecret
	Name      string
	Source    Source
	Sync      SyncObject
	Revision  string
	// Missing names the entries the live object lacks (as multisets: a
	// duplicate declared twice and present once is one missing entry).
	Missing     []string
	LastApplied string
}

// SyncedEntries compares each delivered GitOps desired object with the live
// one. An object that does not exist live is not judged here (its Secret is
// secret_absent's; an absent ExternalSecret expects nothing of ESO), nor one
// that did not decode.
func SyncedEntries(v model.View, avail model.Availability) []SyncedEntriesMissing {
	var out []SyncedEntriesMissing
	desired := GitOpsDesired(v)
	for i := range desired {
		d := &desired[i]
		o := &d.Object
		if d.Delivery != Delivered || !d.sourceAvailable(avail) || !v.InScope(o.Namespace) {
			continue
		}
		r := SyncedEntriesMissing{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name, Source: d.Source, Sync: d.Sync, Revision: o.Revision}
		var la *model.LastApplied
		// laList: the record's list; judged: the missing entries the record
		// can describe (it holds no template keys).
		var laList, judged []string
		switch {
		case o.Kind == "ExternalSecret" && o.ES != nil && avail[model.ResExternalSecrets]:
			e, ok := v.ExternalSecret(o.Namespace, o.Name)
			if !ok || e.DecodeErr != "" || e.Deleting {
				continue
			}
			judged = missingNames(o.ES.DataKeys, e.DataKeys)
			r.Missing = append(judged, missingNames(o.ES.TemplateKeys, e.TemplateKeys)...)
			la = e.LastApplied
			if la != nil {
				laList = la.SpecDataKeys
			}
		case o.Kind == "Secret" && avail[model.ResSecrets]:
			s, ok := v.Secret(o.Namespace, o.Name)
			if !ok {
				continue
			}
			var have []string
			for k := range s.Keys.All() {
				have = append(have, k)
			}
			r.Missing = missingNames(o.Keys, have)
			judged = r.Missing
			la = s.LastApplied
			if la != nil {
				laList = la.DataKeys
			}
		default:
			continue
		}
		if len(r.Missing) == 0 {
			continue
		}
		r.LastApplied = LastAppliedNone
		if describes(la, o.Kind, o.Name) && la.HoldsList && len(judged) > 0 {
			r.LastApplied = LastAppliedHolds
			if len(missingNames(judged, laList)) > 0 {
				r.LastApplied = LastAppliedLacks
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return syncLess(a.Sync, b.Sync)
	})
	return out
}

// missingNames lists the entries of want that have no counterpart in have, as
// multisets, sorted; "" entries are skipped.
func missingNames(want, have []string) []string {
	if len(want) == 0 {
		return nil
	}
	count := make(map[string]int, len(have))
	for _, k := range have {
		count[k]++
	}
	var out []string
	for _, k := range want {
		if k == "" {
			continue
		}
		if count[k] > 0 {
			count[k]--
		} else {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
