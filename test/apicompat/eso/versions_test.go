package eso

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/buildshare"
)

// TestSameVersionsAsTheTool: every module (ESO's own aside) that provides a
// package to both this module's test and test/tools/eso's ESO build is
// required at the same version and replaced by the same code in both
// (internal/buildshare says why): otherwise the Kubernetes and
// controller-runtime packages they share compile twice in a cold make test.
// It also keeps these tests on the versions the end-to-end ESO is built with.
// ESO's own module is left out: the tool builds a copy of it with fewer
// providers registered (test/tools/build.sh, build_eso), which never shares.
// To fix a difference: require the version this module selects in the tool's
// go.mod and replace it there by the version the tool builds (and here too
// when this module selects a newer one).
func TestSameVersionsAsTheTool(t *testing.T) {
	buildshare.CheckSameVersions(t, "../../tools/eso", "github.com/external-secrets/external-secrets", 40, "github.com/external-secrets/external-secrets")
}
