// Package argocd is driftwatch's vocabulary of Argo CD, at the bottom of the
// import graph: small local mirrors of the Application type and the API's
// answers (only the fields driftwatch reads; test/apicompat/argocd proves them
// against Argo CD's own Go types) and the predicates on them (DesiredKind). It
// does no I/O: the poller of the Argo CD API and its HTTP client are
// internal/argocd/apiclient (the target states of managed resources, reduced
// to key names as they are read, for the argocd expectation source). What an
// ignoreDifferences path means lives in ignorepath and syncpatch.
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
	Automated   *SyncPolicyAutomated `json:"automated,omitempty"`
	SyncOptions []string             `json:"syncOptions,omitempty"`
}

// SyncPolicyAutomated is spec.syncPolicy.automated. Argo CD v3 adds
// "enabled" (a *bool: automated: {enabled: false} turns it off); v2.14 has no such
// field, so the Application transform reads it from the object itself.
type SyncPolicyAutomated struct {
	SelfHeal bool `json:"selfHeal,omitempty"`
}

type ResourceIgnoreDifferences struct {
	Group             string   `json:"group,omitempty"`
	Kind              string   `json:"kind"`
	Name              string   `json:"name,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	JSONPointers      []string `json:"jsonPointers,omitempty"`
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
	// ManagedFieldsManagers: fields these managers own (and Git changes) are
	// ignored.
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
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
	// Hook marks a sync hook (argocd.argoproj.io/hook): run by a sync, not
	// desired state.
	Hook bool `json:"hook,omitempty"`
}

// SyncStatus is status.sync: the comparison with the revision(s) Git resolved
// to (Revisions for multi-source Applications).
type SyncStatus struct {
	Status    string   `json:"status"`
	Revision  string   `json:"revision,omitempty"`
	Revisions []string `json:"revisions,omitempty"`
}

type OperationState struct {
	Phase      string               `json:"phase"`
	StartedAt  metav1.Time          `json:"startedAt"`
	FinishedAt *metav1.Time         `json:"finishedAt,omitempty"`
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
}

// SyncOperationResult is status.operationState.syncResult: the revision(s)
// the last sync operation applied.
type SyncOperationResult struct {
	Resources []ResourceResult `json:"resources,omitempty"`
	Revision  string           `json:"revision"`
	Revisions []string         `json:"revisions,omitempty"`
}

// ResourceResult is an entry of syncResult.resources: what the sync did to one
// resource. Status is Synced, SyncFailed, Pruned or PruneSkipped (gitops-engine
// ResultCode), empty while not yet applied; HookType is set for hooks.
type ResourceResult struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    string `json:"status,omitempty"`
	HookType  string `json:"hookType,omitempty"`
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
	Hook        bool   `json:"hook,omitempty"`
}

// DesiredKind reports whether driftwatch reads the desired state of objects of
// group and kind: Secrets and ExternalSecrets (what apiclient.DesiredFromTargetState
// decodes). The Application transform, the shards' reduction of Applications
// and the choice of Applications to poll ask it too.
func DesiredKind(group, kind string) bool {
	return (kind == "Secret" && group == "") || (kind == "ExternalSecret" && group == "external-secrets.io")
}
