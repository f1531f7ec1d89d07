package transform

// The Flux transforms: Kustomizations and sources (GitRepository,
// OCIRepository, Bucket).

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

func fluxCondition(conds []metav1.Condition, typ string) model.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return model.Condition{Status: model.Intern(string(c.Status)), Reason: model.Intern(c.Reason), LastTransitionTime: c.LastTransitionTime.Time}
		}
	}
	return model.Condition{}
}

// Kustomization is the transform of the Flux Kustomization informer. The
// inventory is reduced to its Secrets and ExternalSecrets; of what the build
// reads (patches, inline postBuild variables, which may hold values) only a
// keyed fingerprint is kept (BuildKey) and the variables' names.
func (t *Transformer) Kustomization(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	var k struct {
		Spec   flux.KustomizationSpec   `json:"spec,omitempty"`
		Status flux.KustomizationStatus `json:"status,omitempty"`
	}
	decodeErr := fromUnstructured(u, &k)
	meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(), Annotations: u.GetAnnotations()}
	t.decodeProblem("kustomizations", &meta, "spec", decodeErr)
	rec := &model.FluxKustomization{ObjectMeta: objectMeta(&meta), DecodeErr: decodeErr,
		Generation: u.GetGeneration(), ObservedGeneration: k.Status.ObservedGeneration,
		SourceKind: k.Spec.SourceRef.Kind, SourceNamespace: k.Spec.SourceRef.Namespace, SourceName: k.Spec.SourceRef.Name,
		Path: k.Spec.Path, TargetNamespace: k.Spec.TargetNamespace,
		Suspend: k.Spec.Suspend, Ready: fluxCondition(k.Status.Conditions, "Ready"),
		Reconciling:         fluxCondition(k.Status.Conditions, "Reconciling").Status == "True",
		LastAppliedRevision: k.Status.LastAppliedRevision, LastAttemptedRevision: k.Status.LastAttemptedRevision,
		Deleting: u.GetDeletionTimestamp() != nil}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		rec.BuildKey = flux.BuildKey(t.FP, spec)
	}
	if rec.SourceNamespace == "" {
		rec.SourceNamespace = rec.Namespace
	}
	if inv := k.Status.Inventory; inv != nil {
		for _, e := range inv.Entries {
			o, ok := flux.ParseInventoryID(e.ID)
			if !ok || (o.Kind != "Secret" && o.Kind != "ExternalSecret") {
				continue
			}
			rec.Inventory = append(rec.Inventory, model.FluxObjRef{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
		}
	}
	for _, r := range k.Spec.Ignore {
		ir := model.FluxIgnoreRule{Paths: r.Paths}
		if s := r.Target; s != nil {
			ir.HasTarget = true
			ir.Group, ir.Version, ir.Kind, ir.Name, ir.Namespace = s.Group, s.Version, s.Kind, s.Name, s.Namespace
			ir.AnnotationSelector, ir.LabelSelector = s.AnnotationSelector, s.LabelSelector
		}
		rec.Ignore = append(rec.Ignore, ir)
	}
	if pb := k.Spec.PostBuild; pb != nil {
		rec.HasPostBuild = true
		rec.SubstituteAlways = pb.SubstituteStrategy == "Always"
		for _, s := range pb.SubstituteFrom {
			rec.SubstituteFrom = append(rec.SubstituteFrom, model.FluxSubstituteRef{Kind: s.Kind, Name: s.Name, Optional: s.Optional})
		}
		for name := range pb.Substitute {
			rec.InlineVars = append(rec.InlineVars, name)
		}
		sort.Strings(rec.InlineVars)
	}
	return rec, nil
}

// FluxSource returns the transform of a source informer of kind.
func (t *Transformer) FluxSource(kind string) func(any) (any, error) {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		var s struct {
			Spec   flux.SourceSpec   `json:"spec,omitempty"`
			Status flux.SourceStatus `json:"status,omitempty"`
		}
		decodeErr := fromUnstructured(u, &s)
		meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(), Annotations: u.GetAnnotations()}
		t.decodeProblem(string(sourceRes(kind)), &meta, "status", decodeErr)
		rec := &model.FluxSource{ObjectMeta: objectMeta(&meta), Kind: kind, DecodeErr: decodeErr,
			Generation: u.GetGeneration(), ObservedGeneration: s.Status.ObservedGeneration,
			Ready: fluxCondition(s.Status.Conditions, "Ready"), Suspend: s.Spec.Suspend}
		if a := s.Status.Artifact; a != nil {
			rec.ArtifactURL, rec.ArtifactRevision, rec.ArtifactDigest = a.URL, a.Revision, a.Digest
		}
		return rec, nil
	}
}

func sourceRes(kind string) model.Resource {
	switch kind {
	case "OCIRepository":
		return model.ResOCIRepositories
	case "Bucket":
		return model.ResBuckets
	case "ExternalArtifact":
		return model.ResExternalArtifacts
	}
	return model.ResGitRepositories
}
