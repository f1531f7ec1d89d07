// Package flux proves driftwatch's local Flux structs (internal/flux) against
// Flux's own Go API types: kustomize-controller api v1 (Kustomization),
// source-controller api v1 (GitRepository, OCIRepository, Bucket) and the
// fluxcd/pkg/apis types they embed (meta.Artifact, kustomize.Selector), at
// v1.9.6, the version the e2e stack runs (test/tools/flux). It is a separate
// module so that Flux's API modules and controller-runtime never reach the
// agent's go.mod.
// Run: cd test/apicompat/flux && go test ./...
package flux
