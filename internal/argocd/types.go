// Package argocd holds small local mirrors of Argo CD's Application type: only the
// fields driftwatch reads. test/apicompat/argocd proves them against Argo CD's own
// Go types.
package argocd

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	Group   = "argoproj.io"
	Version = "v1alpha1"
)

type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ApplicationSpec   `json:"spec,omitempty"`
	Status            ApplicationStatus `json:"status,omitempty"`
}

type ApplicationSpec struct {
	Destination       ApplicationDestination      `json:"destination,omitempty"`
	SyncPolicy        *SyncPolicy                 `json:"syncPolicy,omitempty"`
	IgnoreDifferences []ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`
}

type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

type SyncPolicy struct {
	SyncOptions []string `json:"syncOptions,omitempty"`
}

type ResourceIgnoreDifferences struct {
	Group             string   `json:"group,omitempty"`
	Kind              string   `json:"kind"`
	Name              string   `json:"name,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	JSONPointers      []string `json:"jsonPointers,omitempty"`
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
}

type ApplicationStatus struct {
	Resources      []ResourceStatus `json:"resources,omitempty"`
	Sync           SyncStatus       `json:"sync,omitempty"`
	OperationState *OperationState  `json:"operationState,omitempty"`
}

type ResourceStatus struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Status    string `json:"status,omitempty"`
}

type SyncStatus struct {
	Status string `json:"status"`
}

type OperationState struct {
	Phase      string       `json:"phase"`
	StartedAt  metav1.Time  `json:"startedAt"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// ManagedResourcesResponse mirrors the body of
// GET /api/v1/applications/{name}/managed-resources.
type ManagedResourcesResponse struct {
	Items []ResourceDiff `json:"items,omitempty"`
}

// ResourceDiff mirrors Argo CD's ResourceDiff: TargetState is the desired manifest as
// a JSON string.
type ResourceDiff struct {
	Group       string `json:"group,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	TargetState string `json:"targetState,omitempty"`
	LiveState   string `json:"liveState,omitempty"`
}
