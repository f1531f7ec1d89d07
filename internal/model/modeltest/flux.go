package modeltest

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// FluxBuild is the build of a Kustomization (Store.SetFluxDesired) for Upsert.
type FluxBuild struct {
	KS      model.Ref
	Desired model.FluxDesired
}

// Revision1 is the artifact revision the Flux builders use by default.
const Revision1 = "main@sha1:1111111111111111111111111111111111111111"

// KSOption changes a Kustomization built by Kustomization.
type KSOption func(*model.FluxKustomization)

// Kustomization is a Kustomization ns/name (generation 1, observed) applying
// the GitRepository ns/name, Ready=True at Revision1, as kustomize-controller
// leaves one after a successful apply; inventory lists what KSManages adds.
func Kustomization(ns, name string, opts ...KSOption) *model.FluxKustomization {
	k := &model.FluxKustomization{ObjectMeta: Meta(ns, name), Generation: 1, ObservedGeneration: 1,
		SourceKind: "GitRepository", SourceNamespace: ns, SourceName: name, Path: "./",
		Ready:               model.Condition{Status: "True", Reason: "ReconciliationSucceeded", LastTransitionTime: T0},
		LastAppliedRevision: Revision1, LastAttemptedRevision: Revision1}
	for _, o := range opts {
		o(k)
	}
	return k
}

// KSManages adds an inventory entry (group "" for a Secret).
func KSManages(group, kind, ns, name string) KSOption {
	return func(k *model.FluxKustomization) {
		k.Inventory = append(k.Inventory, model.FluxObjRef{Group: group, Kind: kind, Namespace: ns, Name: name})
	}
}

// KSApplied sets status.lastAppliedRevision (and lastAttemptedRevision).
func KSApplied(rev string) KSOption {
	return func(k *model.FluxKustomization) { k.LastAppliedRevision, k.LastAttemptedRevision = rev, rev }
}

// KSReady sets the Ready condition's status and reason.
func KSReady(status, reason string) KSOption {
	return func(k *model.FluxKustomization) {
		k.Ready = model.Condition{Status: status, Reason: reason, LastTransitionTime: T0}
	}
}

// KSBuildKey sets the fingerprint of the build-relevant spec (builds made by
// Build carry none: "").
func KSBuildKey(key string) KSOption { return func(k *model.FluxKustomization) { k.BuildKey = key } }

// KSSuspend sets spec.suspend.
func KSSuspend() KSOption { return func(k *model.FluxKustomization) { k.Suspend = true } }

// KSGeneration sets metadata.generation (observedGeneration stays).
func KSGeneration(g int64) KSOption { return func(k *model.FluxKustomization) { k.Generation = g } }

// KSIgnore adds a spec.ignore rule with a target of kind and name.
func KSIgnore(kind, name string, paths ...string) KSOption {
	return func(k *model.FluxKustomization) {
		k.Ignore = append(k.Ignore, model.FluxIgnoreRule{Paths: paths, HasTarget: kind != "" || name != "", Kind: kind, Name: name})
	}
}

// KSSubstituteFrom adds a postBuild.substituteFrom entry.
func KSSubstituteFrom(kind, name string, optional bool) KSOption {
	return func(k *model.FluxKustomization) {
		k.HasPostBuild = true
		k.SubstituteFrom = append(k.SubstituteFrom, model.FluxSubstituteRef{Kind: kind, Name: name, Optional: optional})
	}
}

// GitRepository is a source ns/name Ready=True serving Revision1.
func GitRepository(ns, name string) *model.FluxSource {
	return &model.FluxSource{ObjectMeta: Meta(ns, name), Kind: "GitRepository", Generation: 1, ObservedGeneration: 1,
		Ready:            model.Condition{Status: "True", Reason: "Succeeded", LastTransitionTime: T0},
		ArtifactURL:      "http://source-controller.flux-system.svc.cluster.local./gitrepository/" + ns + "/" + name + "/1111.tar.gz",
		ArtifactRevision: Revision1}
}

// Build is the build of Kustomization ns/name at Revision1 with objs.
func Build(ns, name string, objs ...model.Declared) FluxBuild {
	return FluxBuild{KS: model.Ref{Namespace: ns, Name: name}, Desired: model.FluxDesired{Revision: Revision1, Objects: objs}}
}

// FluxSecret is a Secret of a build with key names.
func FluxSecret(ns, name string, keys ...string) model.Declared {
	return model.Declared{Kind: "Secret", Namespace: ns, Name: name, Keys: keys}
}

// FluxES is an ExternalSecret of a build writing its own name with spec.data
// entries keys.
func FluxES(ns, name string, keys ...string) model.Declared {
	return model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: ns, Name: name,
		ES: &model.ESWrites{Target: name, CreationPolicy: "Owner", DeletionPolicy: "Retain", DataKeys: keys, HasSpecData: true}}
}
