package detect

// The flux_substitute detector: optional postBuild.substituteFrom Secrets that
// are absent or lack a variable the applied manifests use without a default.

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// DetectorFluxSubstitute is the detector's name, as driftwatch.io/ignore names it.
const DetectorFluxSubstitute = "flux_substitute"

// FluxSubstituteMissing is an optional postBuild.substituteFrom Secret that is
// absent or lacks a variable the claimed revision's manifests use without a
// default, while no other source of the Kustomization's variables provides it:
// kustomize-controller skips an optional object that does not exist, and the
// variable ships unresolved (with no variable defined at all the ${VAR} text
// ships as it is; with strict substitution off it becomes empty).
type FluxSubstituteMissing struct {
	Namespace, KS string
	// Kind and Name of the substituteFrom object (Secret); Reason: absent or
	// lacks_variable.
	Kind, Name, Variable, Reason string
	// UsedBy: an object using the variable (kind/namespace/name).
	UsedBy string
}

// FluxSubstitutesMissing finds them. ConfigMaps are not read (driftwatch has
// no access to them): a Kustomization with a ConfigMap substituteFrom is not
// judged, as the ConfigMap may provide any variable.
func FluxSubstitutesMissing(v model.View) []FluxSubstituteMissing {
	var out []FluxSubstituteMissing
	for _, a := range FluxClaims(v) {
		k := a.KS
		if !k.HasPostBuild || len(a.Desired.Vars) == 0 {
			continue
		}
		provided := map[string]bool{}
		for _, n := range k.InlineVars {
			provided[n] = true
		}
		judged := true
		var optional []model.FluxSubstituteRef
		for _, r := range k.SubstituteFrom {
			if r.Kind != "Secret" {
				judged = false
				break
			}
			if s, ok := v.Secret(k.Namespace, r.Name); ok {
				for _, n := range s.Keys.Names() {
					provided[n] = true
				}
			}
			if r.Optional {
				optional = append(optional, r)
			}
		}
		if !judged {
			continue
		}
		for _, use := range a.Desired.Vars {
			if provided[use.Var] {
				continue
			}
			for _, r := range optional {
				reason := "lacks_variable"
				if _, ok := v.Secret(k.Namespace, r.Name); !ok {
					reason = "absent"
				}
				out = append(out, FluxSubstituteMissing{Namespace: k.Namespace, KS: k.Name, Kind: r.Kind, Name: r.Name,
					Variable: use.Var, Reason: reason, UsedBy: use.Kind + "/" + use.Namespace + "/" + use.Name})
			}
		}
	}
	return out
}
