// Package argocd proves driftwatch's local Argo CD structs (internal/argocd)
// against Argo CD's own Go types (argo-cd/v2 pkg/apis/application/v1alpha1 and the
// API server's pkg/apiclient/application response types). It is a separate module
// so that argo-cd/v2 and its k8s.io v0.31 pins never reach the agent's go.mod.
// Run: cd test/apicompat/argocd && go test ./...
package argocd
