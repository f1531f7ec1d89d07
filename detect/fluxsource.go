package detect

// The flux expectation source and the evidence every Flux detector needs: what
// a Kustomization's build declares, where Flux claims to have applied it.

import (
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// SourceFlux: the Secrets and ExternalSecrets a Flux Kustomization's applied
// revision declares.
const SourceFlux Source = "flux"

// FluxApplied is a Kustomization that claims to have applied the revision
// driftwatch built, with that build.
type FluxApplied struct {
	KS      *model.FluxKustomization
	Desired *model.FluxDesired
}

// FluxClaims lists the Kustomizations whose status claims the build's
// revision applied: Ready=True for the current generation, not suspended or
// being deleted, status.lastAppliedRevision equal to the artifact revision
// driftwatch built, from the spec the controller reconciled (the build's
// BuildKey is the Kustomization's). The source's own Ready is no condition:
// while its Git server is down, source-controller keeps serving the last
// artifact and kustomize-controller keeps applying it and stays Ready=True
// (test/e2e/flux TestFluxGitOutage), so the claim holds. A Kustomization
// driftwatch could not build claims nothing.
func FluxClaims(v model.View) []FluxApplied {
	var out []FluxApplied
	for _, k := range v.Kustomizations() {
		if d, ok := fluxClaim(v, k); ok {
			out = append(out, FluxApplied{KS: k, Desired: d})
		}
	}
	return out
}

func fluxClaim(v model.View, k *model.FluxKustomization) (*model.FluxDesired, bool) {
	if k.Suspend || k.Deleting || k.DecodeErr != "" || k.Ready.Status != "True" ||
		(k.Generation != 0 && k.ObservedGeneration != k.Generation) {
		return nil, false
	}
	d, ok := v.FluxDesiredOf(k.Namespace, k.Name)
	if !ok || !d.Judged() || d.BuildKey != k.BuildKey || !flux.RevisionsEqual(k.LastAppliedRevision, d.Revision) {
		return nil, false
	}
	return d, true
}

// fluxManaged: the determined objects of a claimed build that the
// Kustomization's inventory lists (what Flux applied or skipped at that
// revision).
func fluxManaged(a FluxApplied) []model.Declared {
	var out []model.Declared
	for _, o := range a.Desired.Objects {
		if o.Undetermined == "" && a.KS.Manages(o.Group, o.Kind, o.Namespace, o.Name) {
			out = append(out, o)
		}
	}
	return out
}

// fluxGitOpsDesired lists, for GitOpsDesired, the determined Secrets and
// ExternalSecrets of every Kustomization's build: Delivered where the
// Kustomization claims the build (FluxClaims) and its inventory lists the
// object; Pending where the source serves the build's revision and the
// Kustomization has not applied it yet (a commit not reconciled yet, a
// suspended Kustomization, a failing build); otherwise left out (Unjudged).
func fluxGitOpsDesired(v model.View) []Desired {
	var out []Desired
	for _, k := range v.Kustomizations() {
		d, ok := v.FluxDesiredOf(k.Namespace, k.Name)
		if !ok || !d.Judged() || k.Deleting || k.DecodeErr != "" {
			continue
		}
		_, claimed := fluxClaim(v, k)
		pending := false
		if !claimed && !flux.RevisionsEqual(k.LastAppliedRevision, d.Revision) {
			src, ok := v.FluxSourceOf(k)
			pending = ok && flux.RevisionsEqual(src.ArtifactRevision, d.Revision)
		}
		sync := SyncObject{Kind: "Kustomization", Namespace: k.Namespace, Name: k.Name}
		for _, o := range d.Objects {
			if o.Undetermined != "" {
				continue
			}
			del := Unjudged
			switch {
			case claimed && k.Manages(o.Group, o.Kind, o.Namespace, o.Name):
				del = Delivered
			case pending:
				del = Pending
			}
			if del == Unjudged {
				continue
			}
			out = append(out, Desired{Source: SourceFlux, Sync: sync, Delivery: del, Object: o})
		}
	}
	return out
}

// FluxMissingEntries returns the entries a declared object has in the build
// that the live object lacks: a Secret's key names, an ExternalSecret's
// spec.data secretKeys. absent says the live object does not exist (every
// entry is missing; an object without entries counts one).
func FluxMissingEntries(v model.View, o model.Declared) (missing []string, absent bool) {
	switch o.Kind {
	case "Secret":
		s, ok := v.Secret(o.Namespace, o.Name)
		if !ok {
			return append([]string(nil), o.Keys...), true
		}
		for _, key := range o.Keys {
			if !s.Keys.Has(key) {
				missing = append(missing, key)
			}
		}
	case "ExternalSecret":
		if o.ES == nil {
			return nil, false
		}
		e, ok := v.ExternalSecret(o.Namespace, o.Name)
		if !ok {
			return append([]string(nil), o.ES.DataKeys...), true
		}
		have := map[string]bool{}
		for _, key := range e.DataKeys {
			have[key] = true
		}
		for _, key := range o.ES.DataKeys {
			if key != "" && !have[key] {
				missing = append(missing, key)
			}
		}
	}
	return missing, false
}
