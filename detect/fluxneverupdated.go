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
			reason, setIn := fluxSkip(o.Annotations, true)
			if reason == "" {
				reason, setIn = fluxSkip(liveAnnotations(v, o), false)
			}
			if reason == "" {
				continue
			}
			missing, absent := FluxMissingEntries(v, o)
			if len(missing) == 0 && !absent {
				continue
			}
			if reason == "ssa_if_not_present" && absent {
				continue // IfNotPresent creates it: absent is not its doing
			}
			sort.Strings(missing)
			out = append(out, FluxNeverUpdated{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name,
				KSNamespace: a.KS.Namespace, KS: a.KS.Name, Reason: reason, SetIn: setIn, Missing: missing, Absent: absent})
		}
	}
	return out
}

// fluxSkip reads kustomize-controller's skip annotations: ssa: Ignore and
// reconcile: disabled exclude the object on either side; ssa: IfNotPresent
// is read on the object in Git only.
func fluxSkip(ann map[string]string, inGit bool) (reason, setIn string) {
	where := "cluster"
	if inGit {
		where = "git"
	}
	switch {
	case ann[flux.AnnotationSSA] == flux.SSAIgnore:
		return "ssa_ignore", where
	case ann[flux.AnnotationReconcile] == flux.ReconcileDisabled:
		return "reconcile_disabled", where
	case inGit && ann[flux.AnnotationSSA] == flux.SSAIfNotPresent:
		return "ssa_if_not_present", where
	}
	return "", ""
}

func liveAnnotations(v model.View, o model.FluxDesiredObject) map[string]string {
	switch o.Kind {
	case "Secret":
		if s, ok := v.Secret(o.Namespace, o.Name); ok {
			return s.Annotations
		}
	case "ExternalSecret":
		if e, ok := v.ExternalSecret(o.Namespace, o.Name); ok {
			return e.Annotations
		}
	}
	return nil
}
