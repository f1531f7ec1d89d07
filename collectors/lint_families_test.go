package collectors

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// TestLintFamiliesStayOutOfTheExporter: a lint-only family is not in the
// exporter's catalog, is never described, and has a name of its own.
func TestLintFamiliesStayOutOfTheExporter(t *testing.T) {
	if len(finding.LintFamilies()) == 0 {
		t.Fatal("no lint-only family declared")
	}
	f := NewFindings(model.NewStore(nil), mt.Health{}, Config{})
	ch := make(chan *prometheus.Desc, 1000)
	f.Describe(ch)
	close(ch)
	var described []string
	for d := range ch {
		described = append(described, d.String())
	}
	if !strings.Contains(strings.Join(described, "\n"), `fqName: "driftwatch_secret_missing_key"`) {
		t.Fatalf("the descriptor text format changed; the check below would not see a described family: %v", described[:1])
	}
	for _, lf := range finding.LintFamilies() {
		if !lf.LintOnly {
			t.Errorf("%s: LintOnly not set", lf.Name)
		}
		if _, ok := finding.Lookup(lf.Name); ok {
			t.Errorf("%s is also an exporter family", lf.Name)
		}
		if got, ok := finding.LookupAny(lf.Name); !ok || got != lf {
			t.Errorf("finding.LookupAny(%s) = %v, %v", lf.Name, got, ok)
		}
		for _, d := range described {
			if strings.Contains(d, `fqName: "`+lf.Name+`"`) {
				t.Errorf("%s is described by the exporter", lf.Name)
			}
		}
	}
	for _, cf := range finding.Catalog() {
		if cf.LintOnly {
			t.Errorf("%s is lint-only but in the exporter catalog", cf.Name)
		}
	}
}
