package detect

// The flux_unjudged detector: Kustomizations driftwatch cannot judge (no
// artifact, a source kind or resource it does not read, a download refused or
// failed, a limit, a remote base, a build that fails). Health, not a finding:
// nothing is expected from such a Kustomization, so a missing key it would
// have declared is not reported; the alert says so after a while.

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// DetectorFluxUnjudged is the detector's name.
const DetectorFluxUnjudged = "flux_unjudged"

// FluxUnjudgedKustomization is one Kustomization nothing is expected from.
type FluxUnjudgedKustomization struct {
	Namespace, Name string
	// Reason: internal/flux Unjudged* (no_artifact, source_kind_unknown,
	// source_unavailable, source_suspended, fetch_refused, fetch_failed,
	// limit, remote_base, build_failed, spec_unreadable); Detail: value-free.
	Reason, Detail string
}

// FluxUnjudged lists them, sorted by namespace and name. Suspended
// Kustomizations and those being deleted are left out: kustomize-controller
// applies nothing for them either.
func FluxUnjudged(v model.View) []FluxUnjudgedKustomization {
	var out []FluxUnjudgedKustomization
	for _, k := range v.Kustomizations() {
		if k.Suspend || k.Deleting || k.DecodeErr != "" {
			continue
		}
		if d, ok := v.FluxDesiredOf(k.Namespace, k.Name); ok && d.Unjudged != "" {
			out = append(out, FluxUnjudgedKustomization{Namespace: k.Namespace, Name: k.Name, Reason: d.Unjudged, Detail: d.Detail})
		}
	}
	return out
}

// FluxUndeterminedObjects counts the undetermined objects of a judged
// Kustomization's build.
type FluxUndeterminedObjects struct {
	Namespace, Name string
	Objects         int
}

// FluxUndetermined lists the Kustomizations whose build holds undetermined
// objects (a name or keys driftwatch cannot tell), sorted.
func FluxUndetermined(v model.View) []FluxUndeterminedObjects {
	var out []FluxUndeterminedObjects
	for _, k := range v.Kustomizations() {
		if k.Suspend || k.Deleting || k.DecodeErr != "" {
			continue
		}
		d, ok := v.FluxDesiredOf(k.Namespace, k.Name)
		if !ok || !d.Judged() {
			continue
		}
		n := 0
		for _, o := range d.Objects {
			if o.Undetermined != "" {
				n++
			}
		}
		if n > 0 {
			out = append(out, FluxUndeterminedObjects{Namespace: k.Namespace, Name: k.Name, Objects: n})
		}
	}
	return out
}
