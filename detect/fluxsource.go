package detect

// The flux expectation source and the evidence every Flux detector needs: what
// a Kustomization's build declares, where Flux claims to have applied it.

import (
	"sort"

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
// driftwatch built, and that artifact still the source's (Ready=True). A
// build that failed or uses what driftwatch does not reproduce claims nothing.
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
	if !ok || d.Err != "" || d.Unsupported != "" || !flux.RevisionsEqual(k.LastAppliedRevision, d.Revision) {
		return nil, false
	}
	src, ok := v.FluxSourceOf(k)
	if !ok || src.Ready.Status != "True" || !flux.RevisionsEqual(src.ArtifactRevision, d.Revision) {
		return nil, false
	}
	return d, true
}

// fluxManaged: the determined objects of a claimed build that the
// Kustomization's inventory lists (what Flux applied or skipped at that
// revision).
func fluxManaged(a FluxApplied) []model.FluxDesiredObject {
	var out []model.FluxDesiredObject
	for _, o := range a.Desired.Objects {
		if o.Undetermined == "" && a.KS.Manages(o.Group, o.Kind, o.Namespace, o.Name) {
			out = append(out, o)
		}
	}
	return out
}

// FluxExpectations are the expectations of source "flux": for each claimed
// build, a Secret it declares expects its key names (or, without keys, to
// exist); an ExternalSecret it declares expects the keys it writes in its
// target, when the live ExternalSecret writes its target and ESO has acted on
// it. Consumers are the Kustomizations.
func FluxExpectations(v model.View) []Expectation {
	type k struct{ ns, secret, key string }
	byKey := map[k]*Expectation{}
	add := func(ns, secret, key string, c Consumer) {
		e := byKey[k{ns, secret, key}]
		if e == nil {
			e = &Expectation{Namespace: ns, Secret: secret, Key: key, Source: SourceFlux}
			byKey[k{ns, secret, key}] = e
		}
		for _, have := range e.Consumers {
			if have == c {
				return
			}
		}
		e.Consumers = append(e.Consumers, c)
	}
	for _, a := range FluxClaims(v) {
		c := Consumer{Kind: "Kustomization", Name: a.KS.Name}
		for _, o := range fluxManaged(a) {
			target, keys := o.Name, o.Keys
			if o.Kind == "ExternalSecret" {
				live, ok := v.ExternalSecret(o.Namespace, o.Name)
				if !ok || live.DecodeErr != "" || live.Ready.Status == "" || live.Deleting || !ESWritesTarget(live) {
					continue
				}
				target = o.Target
			} else if o.Kind != "Secret" || o.Group != "" {
				continue
			}
			if len(keys) == 0 {
				add(o.Namespace, target, "", c)
			}
			for _, key := range keys {
				if key != "" {
					add(o.Namespace, target, key, c)
				}
			}
		}
	}
	out := make([]Expectation, 0, len(byKey))
	for _, e := range byKey {
		sortConsumers(e.Consumers)
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		return a.Key < b.Key
	})
	return out
}

// FluxMissingEntries returns the entries a declared object has in the build
// that the live object lacks: a Secret's key names, an ExternalSecret's
// spec.data secretKeys. absent says the live object does not exist (every
// entry is missing; an object without entries counts one).
func FluxMissingEntries(v model.View, o model.FluxDesiredObject) (missing []string, absent bool) {
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
		e, ok := v.ExternalSecret(o.Namespace, o.Name)
		if !ok {
			return append([]string(nil), o.SpecDataKeys...), true
		}
		have := map[string]bool{}
		for _, key := range e.DataKeys {
			have[key] = true
		}
		for _, key := range o.SpecDataKeys {
			if key != "" && !have[key] {
				missing = append(missing, key)
			}
		}
	}
	return missing, false
}
