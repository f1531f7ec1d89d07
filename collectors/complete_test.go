package collectors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/finding"
)

// Adding a detector touches: detect/<name>.go (the detector), collectors/<name>.go
// (its catalog entries, registry entry and emitter), its alert and runbook, and a
// dashboard panel (<name> is the detector name without underscores). This test
// fails when one of them is missing; the alert-rule tests
// (alerts/TestAlertSeveritiesMatchCatalog, TestRunbooks) and the README table
// test (TestREADMEMetricTables) hold the rest to the catalog.
func TestEveryDetectorIsComplete(t *testing.T) {
	rules, err := os.ReadFile("../alerts/driftwatch.rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var boards strings.Builder
	files, _ := filepath.Glob("../dashboards/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		boards.Write(b)
	}
	if len(files) == 0 {
		t.Fatal("no dashboards")
	}
	owner := map[string]string{}
	for _, d := range registered {
		base := strings.ReplaceAll(d.name, "_", "")
		if _, err := os.Stat("../detect/" + base + ".go"); err != nil {
			t.Errorf("detector %s: no detect/%s.go", d.name, base)
		}
		src, err := os.ReadFile(base + ".go")
		if err != nil {
			t.Errorf("detector %s: no collectors/%s.go", d.name, base)
			continue
		}
		if len(d.families) == 0 {
			t.Errorf("detector %s declares no metric family", d.name)
		}
		for _, desc := range d.families {
			f := familyOf[desc]
			if prev, dup := owner[f.Name]; dup {
				t.Errorf("%s belongs to detectors %s and %s", f.Name, prev, d.name)
			}
			owner[f.Name] = d.name
			if !strings.Contains(string(src), `"`+f.Name+`"`) {
				t.Errorf("%s (detector %s) is not declared in collectors/%s.go", f.Name, d.name, base)
			}
			if f.Kind != finding.KindFinding || f.Restates != "" {
				continue
			}
			if !strings.Contains(boards.String(), f.Name) {
				t.Errorf("%s (detector %s): no dashboard panel shows it", f.Name, d.name)
			}
			if f.Severity != finding.SevInfo && !strings.Contains(string(rules), f.Name) {
				t.Errorf("%s (detector %s, %s): no alert rule uses it", f.Name, d.name, f.Severity)
			}
		}
	}
	for _, f := range finding.Catalog() {
		if f.Kind == finding.KindFinding && owner[f.Name] == "" {
			t.Errorf("finding family %s belongs to no detector", f.Name)
		}
	}
}
