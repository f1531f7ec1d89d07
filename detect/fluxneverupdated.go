package detect

// The flux_never_updated detector: Secrets and ExternalSecrets kustomize-controller
// skips (ssa: IfNotPresent / Ignore, reconcile: disabled) while the revision it
// claims applied declares entries they lack.

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// DetectorFluxNeverUpdated is the detector's name, as driftwatch.io/ignore names it.
const DetectorFluxNeverUpdated = "flux_never_updated"

// FluxNeverUpdated is a Secret or ExternalSecret that kustomize-controller
// skips (fluxcd/pkg/ssa shouldSkipApply) while the revision it claims applied
// declares entries the live object lacks.
type FluxNeverUpdated struct {
	Namespace, Kind, Name string
	KSNamespace, KS       string
	// Reason: ssa_if_not_present (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent
	// in Git: created once, never patched), ssa_ignore (ssa: Ignore) or
	// reconcile_disabled (kustomize.toolkit.fluxcd.io/reconcile: disabled).
	// SetIn: git (the object in the build) or cluster (the live object: skip
	// annotations on either side count, IfNotPresent only in Git).
	Reason, SetIn string
	// Missing: the entries (Secret keys, ExternalSecret spec.data secretKeys)
	// the build declares and live lacks, sorted; Absent: the object does not
	// exist (Ignore and disabled skip the create too).
	Missing []string
	Absent  bool
}

// FluxNeverUpdatedObjects finds them.
func FluxNeverUpdatedObjects(v model.View) []FluxNeverUpdated {
	var out []FluxNeverUpdated
	for _, a := range FluxClaims(v) {
		for _, o := range fluxManaged(a) {
			reason, setIn := flux.SkipReason(o.Labels, o.Annotations, true), "git"
			if reason == "" {
				reason, setIn = flux.SkipReason(liveMeta(v, o)), "cluster"
			}
			if reason == "" {
				continue
			}
			missing, absent := FluxMissingEntries(v, o)
			if len(missing) == 0 && !absent {
				continue
			}
			if reason == flux.SkipSSAIfNotPresent && absent {
				continue // IfNotPresent creates it: absent is not its doing
			}
			sort.Strings(missing)
			out = append(out, FluxNeverUpdated{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name,
				KSNamespace: a.KS.Namespace, KS: a.KS.Name, Reason: reason, SetIn: setIn, Missing: missing, Absent: absent})
		}
	}
	return out
}

// liveMeta returns the live object's labels and annotations (the transforms
// keep kustomize-controller's skip keys of both) and false for the desired
// side: on the live object only ssa: Ignore and reconcile: disabled count.
func liveMeta(v model.View, o model.Declared) (labels, annotations map[string]string, desired bool) {
	switch o.Kind {
	case "Secret":
		if s, ok := v.Secret(o.Namespace, o.Name); ok {
			return s.Labels, s.Annotations, false
		}
	case "ExternalSecret":
		if e, ok := v.ExternalSecret(o.Namespace, o.Name); ok {
			return e.Labels, e.Annotations, false
		}
	}
	return nil, nil, false
}
