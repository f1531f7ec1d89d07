package argocd

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/buildshare"
)

// TestSameVersionsAsTheTool: every module that provides a package to both this
// module's test and test/tools/argocd's Argo CD build is required at the same
// version and replaced by the same code in both (internal/buildshare says why):
// otherwise the ~1,400 packages they share compile twice in a cold make test.
// It also keeps these tests on the code the end-to-end Argo CD runs. To fix a
// difference: require the version this module selects in the tool's go.mod and
// replace it there by the version the tool builds (and here too when this
// module selects a newer one).
func TestSameVersionsAsTheTool(t *testing.T) {
	buildshare.CheckSameVersions(t, "../../tools/argocd", "github.com/argoproj/argo-cd/v3/cmd", 100)
}
