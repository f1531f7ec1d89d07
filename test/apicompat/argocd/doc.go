// Package argocd proves driftwatch's local Argo CD structs (internal/argocd)
// against Argo CD's own Go types (argo-cd/v3 pkg/apis/application/v1alpha1 and the
// API server's pkg/apiclient/application response types), at v3.2.9, the version
// the end-to-end tests run. It is a separate module so that argo-cd/v3 and its
// k8s.io v0.34 pins never reach the agent's go.mod. Its go.mod selects the same
// version of every module as test/tools/argocd's (TestSameVersionsAsTheTool says
// why and checks it), so the packages the two share compile once.
// Run: cd test/apicompat/argocd && go test ./...
package argocd
