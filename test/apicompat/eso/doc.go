// Package eso proves driftwatch's local External Secrets Operator structs
// (internal/eso) against ESO's own Go API types. It is a separate module so that
// ESO, controller-runtime and ESO's k8s.io pins never reach the agent's go.mod.
// Its go.mod selects the versions test/tools/eso builds ESO with, so the
// packages the two share compile once (TestSameVersionsAsTheTool).
// Run: cd test/apicompat/eso && go test ./...
package eso

//go:generate sh gen-v1beta1.sh
