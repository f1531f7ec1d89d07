package collectors

import (
	"testing"

	"github.com/driftwatch/driftwatch/finding"
)

// TestEveryFindingFamilyDeclaresItsText: each finding family that `agent
// check`, the page and lint list (one that restates no other) declares, next
// to its detector, everything they show: the commands that confirm and fix
// it, and either its lint rules or why lint cannot judge it offline. Every
// family is emitted by a registered detector whose name driftwatch.io/ignore
// takes.
func TestEveryFindingFamilyDeclaresItsText(t *testing.T) {
	n := 0
	for _, f := range append(finding.Catalog(), finding.LintFamilies()...) {
		if !f.Listed() {
			if f.Commands != nil || len(f.Lint) > 0 || f.Offline != "" {
				t.Errorf("%s: not listed (kind %s, restates %q), yet declares commands or lint rules", f.Name, f.Kind, f.Restates)
			}
			continue
		}
		n++
		if f.Commands == nil {
			t.Errorf("%s: no Commands", f.Name)
		}
		if (len(f.Lint) == 0) == (f.Offline == "") {
			t.Errorf("%s: wants either lint rules or the reason lint does not judge it offline (Offline), not both", f.Name)
		}
		if f.Detector == "" {
			t.Errorf("%s: no detector emits it", f.Name)
		}
	}
	if n == 0 {
		t.Fatal("no listed finding family")
	}
}
