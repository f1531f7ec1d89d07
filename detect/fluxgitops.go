package detect

// Flux's side of the source-generic GitOps findings (issue 22's families
// driftwatch_gitops_synced_entries_missing and driftwatch_secret_key_pending_sync,
// with source="flux" and sync_kind="Kustomization").

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// FluxSyncedMissing is an object the revision a Kustomization claims applied
// declares with entries (Secret key names, ExternalSecret spec.data
// secretKeys) the live object lacks.
type FluxSyncedMissing struct {
	Namespace, Kind, Name string
	KSNamespace, KS       string
	Missing               []string
}

// FluxSyncedEntriesMissing finds them, for every claimed build's determined,
// inventoried objects that exist (an absent one is secret_absent's).
func FluxSyncedEntriesMissing(v model.View) []FluxSyncedMissing {
	var out []FluxSyncedMissing
	for _, a := range FluxClaims(v) {
		for _, o := range fluxManaged(a) {
			missing, absent := FluxMissingEntries(v, o)
			if absent || len(missing) == 0 {
				continue
			}
			sort.Strings(missing)
			out = append(out, FluxSyncedMissing{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name,
				KSNamespace: a.KS.Namespace, KS: a.KS.Name, Missing: missing})
		}
	}
	return out
}

// FluxPendingKey is a key the source's current revision declares for a
// Secret (directly, or through an ExternalSecret's target) that the live
// Secret lacks, while the Kustomization has not claimed that revision yet.
type FluxPendingKey struct {
	Namespace, Secret, Key string
	KSNamespace, KS        string
}

// FluxPendingKeys finds them: builds of the source's current artifact that the
// Kustomization has not reported applied (a new commit not reconciled yet, a
// suspended Kustomization, a failing build). Undetermined objects are left out.
func FluxPendingKeys(v model.View) []FluxPendingKey {
	var out []FluxPendingKey
	for _, k := range v.Kustomizations() {
		d, ok := v.FluxDesiredOf(k.Namespace, k.Name)
		if !ok || d.Err != "" || d.Unsupported != "" || k.Deleting {
			continue
		}
		if _, claimed := fluxClaim(v, k); claimed || flux.RevisionsEqual(k.LastAppliedRevision, d.Revision) {
			continue
		}
		src, ok := v.FluxSourceOf(k)
		if !ok || !flux.RevisionsEqual(src.ArtifactRevision, d.Revision) {
			continue
		}
		for _, o := range d.Objects {
			if o.Undetermined != "" {
				continue
			}
			target, keys := o.Name, o.Keys
			if o.Kind == "ExternalSecret" {
				target = o.Target
			} else if o.Kind != "Secret" || o.Group != "" {
				continue
			}
			s, exists := v.Secret(o.Namespace, target)
			for _, key := range keys {
				if key != "" && (!exists || !s.Keys.Has(key)) {
					out = append(out, FluxPendingKey{Namespace: o.Namespace, Secret: target, Key: key, KSNamespace: k.Namespace, KS: k.Name})
				}
			}
		}
	}
	return out
}
