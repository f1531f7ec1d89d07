package transform

// The Argo CD Application transform.

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Application is the transform of the Argo CD Application informer.
func (t *Transformer) Application(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	var app struct { // spec and status only: see fromUnstructured
		Spec   argocd.ApplicationSpec   `json:"spec,omitempty"`
		Status argocd.ApplicationStatus `json:"status,omitempty"`
	}
	decodeErr := fromUnstructured(u, &app)
	meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(), Annotations: u.GetAnnotations()}
	t.decodeProblem("applications", &meta, "spec", decodeErr)
	rec := &model.ArgoApp{ObjectMeta: objectMeta(&meta), DecodeErr: decodeErr,
		SyncStatus: app.Status.Sync.Status, SyncRevision: app.Status.Sync.Revision, SyncRevisions: app.Status.Sync.Revisions,
		DestinationNamespace: app.Spec.Destination.Namespace, Deleting: u.GetDeletionTimestamp() != nil}
	for _, d := range app.Spec.IgnoreDifferences {
		rec.IgnoreDifferences = append(rec.IgnoreDifferences, model.IgnoreDifference{Group: d.Group, Kind: d.Kind,
			Name: d.Name, Namespace: d.Namespace, JSONPointers: d.JSONPointers, JQPathExpressions: d.JQPathExpressions,
			ManagedFieldsManagers: d.ManagedFieldsManagers})
	}
	if sp := app.Spec.SyncPolicy; sp != nil {
		for _, o := range sp.SyncOptions {
			if strings.EqualFold(strings.ReplaceAll(o, " ", ""), "RespectIgnoreDifferences=true") {
				rec.RespectIgnoreDifferences = true
			}
		}
		if sp.Automated != nil {
			// Argo CD v3's automated.enabled: false turns automated sync off
			// (SyncPolicy.IsAutomatedSyncEnabled); v2 has no such field.
			enabled, found, err := unstructured.NestedBool(u.Object, "spec", "syncPolicy", "automated", "enabled")
			rec.Automated = !found || err != nil || enabled
			rec.SelfHeal = rec.Automated && sp.Automated.SelfHeal
		}
	}
	if op := app.Status.OperationState; op != nil {
		rec.OperationPhase = op.Phase
		if op.FinishedAt != nil {
			rec.OperationFinishedAt = op.FinishedAt.Time
		}
		if sr := op.SyncResult; sr != nil {
			rec.OperationRevision, rec.OperationRevisions = sr.Revision, sr.Revisions
			for _, r := range sr.Resources {
				if r.Status == "Synced" && r.HookType == "" && argocd.DesiredKind(r.Group, r.Kind) {
					rec.OperationSynced = append(rec.OperationSynced,
						model.ArgoObject{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
				}
			}
		}
	}
	for _, r := range app.Status.Resources {
		rec.Resources = append(rec.Resources, model.ArgoResource{Group: r.Group, Kind: r.Kind,
			Namespace: r.Namespace, Name: r.Name, Status: r.Status, Hook: r.Hook})
	}
	return rec, nil
}
