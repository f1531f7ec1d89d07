package collectors

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/finding"
)

// The README's metric tables are generated from the catalog: each family's
// severity is declared once, next to its metric (DRIFTWATCH_UPDATE_DOCS=1
// rewrites them).
func TestREADMEMetricTables(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, tbl := range []struct {
		marker string
		render func() string
	}{
		{"findings", findingsTable},
		{"objects", objectsTable},
	} {
		start, end := "<!-- generated:"+tbl.marker+" (go test ./collectors -run TestREADMEMetricTables; DRIFTWATCH_UPDATE_DOCS=1 rewrites) -->\n", "<!-- end:"+tbl.marker+" -->"
		i := strings.Index(doc, start)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("README.md has no %q ... %q block", start, end)
		}
		want := tbl.render()
		if got := doc[i+len(start) : j]; got != want {
			if os.Getenv("DRIFTWATCH_UPDATE_DOCS") != "" {
				doc = doc[:i+len(start)] + want + doc[j:]
				continue
			}
			t.Errorf("README.md %s table is out of date with the catalog; run DRIFTWATCH_UPDATE_DOCS=1 go test ./collectors -run TestREADMEMetricTables\n got:\n%s\nwant:\n%s", tbl.marker, got, want)
		}
	}
	if os.Getenv("DRIFTWATCH_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findingsTable() string {
	var b strings.Builder
	b.WriteString("| metric | labels | class | severity | meaning |\n|---|---|---|---|---|\n")
	fams := finding.Catalog()
	sort.SliceStable(fams, func(i, j int) bool {
		if ri, rj := finding.ClassRank(fams[i].Class), finding.ClassRank(fams[j].Class); ri != rj {
			return ri < rj
		}
		return fams[i].Name < fams[j].Name
	})
	for _, f := range fams {
		if f.Kind != finding.KindFinding {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, strings.Join(f.Labels, ", "), f.Class, severityText(f), cell(f.Help))
	}
	return b.String()
}

func objectsTable() string {
	var b strings.Builder
	b.WriteString("| metric | labels | meaning |\n|---|---|---|\n")
	fams := finding.Catalog()
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	for _, f := range fams {
		if f.Kind != finding.KindObject {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Name, strings.Join(f.Labels, ", "), cell(f.Help))
	}
	return b.String()
}

func severityText(f *finding.Family) string {
	s := string(f.Severity)
	if f.SeverityBy == nil {
		return s
	}
	var vs []string
	for v := range f.SeverityBy.Values {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for _, v := range vs {
		s += fmt.Sprintf("; %s when %s=\"%s\"", f.SeverityBy.Values[v], f.SeverityBy.Label, v)
	}
	return s
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// alerts/metrics.txt, the list the alert-rule and dashboard tests check every
// query against, is generated from the catalog (DRIFTWATCH_UPDATE_DOCS=1
// rewrites it).
func TestMetricsTxtIsGenerated(t *testing.T) {
	const path = "../alerts/metrics.txt"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := metricsTxt()
	if string(got) == want {
		return
	}
	if os.Getenv("DRIFTWATCH_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("alerts/metrics.txt is out of date with the catalog; run DRIFTWATCH_UPDATE_DOCS=1 go test ./collectors -run TestMetricsTxtIsGenerated\n got:\n%s\nwant:\n%s", got, want)
}

func metricsTxt() string {
	var b strings.Builder
	b.WriteString(`# GENERATED from the catalog (collectors/*.go declarations) by
# go test ./collectors -run TestMetricsTxtIsGenerated; DRIFTWATCH_UPDATE_DOCS=1
# rewrites it. Do not edit by hand: declare the family in its collectors/ file.
#
# The metrics driftwatch exports: the one list that alerts, dashboards and the
# Helm chart are checked against. One metric per line:
#
#   NAME  CLASS
#
# CLASS is finding (a failure the agent detected: every finding must be used by
# at least one alert or dashboard panel), inventory (objects: context for
# findings, what consumes what), or self (the agent's own health).
#
# Checked by alerts/alerts_test.go (TestMetricsListMatchesCollectors: against the
# collectors' descriptors) and dashboards/dashboards_test.go (every metric a panel
# or alert uses is listed; every finding is used).
`)
	for _, c := range []struct {
		kind  finding.Kind
		class string
	}{{finding.KindFinding, "finding"}, {finding.KindObject, "inventory"}, {finding.KindHealth, "self"}} {
		b.WriteString("\n")
		fams := finding.Catalog()
		sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
		for _, f := range fams {
			if f.Kind == c.kind {
				fmt.Fprintf(&b, "%-52s %s\n", f.Name, c.class)
			}
		}
	}
	return b.String()
}

// dashboards/panels.txt, the overview dashboard's panels (each family's
// Panel, not its Class: the failure class of the README and agent check), is
// generated from the catalog (each family's Panel; DRIFTWATCH_UPDATE_DOCS=1
// rewrites it). The dashboards module embeds it: it cannot import the
// collectors (client_golang and the model would come with them).
func TestDashboardPanelsAreGenerated(t *testing.T) {
	const path = "../dashboards/panels.txt"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := panelsTxt()
	if string(got) == want {
		return
	}
	if os.Getenv("DRIFTWATCH_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: now run `go generate` in dashboards/ (it rewrites the dashboards and the chart's copies)", path)
		return
	}
	t.Errorf("dashboards/panels.txt is out of date with the catalog; run DRIFTWATCH_UPDATE_DOCS=1 go test ./collectors -run TestDashboardPanelsAreGenerated, then `go generate` in dashboards/\n got:\n%s\nwant:\n%s", got, want)
}

// panelsTxt lists the families with an overview panel in the docs' class
// order (finding.Classes: the pages first), then in declaration order.
func panelsTxt() string {
	var b strings.Builder
	b.WriteString(`# GENERATED from the catalog (the Panel of each family, declared in
# collectors/<detector>.go) by go test ./collectors -run
# TestDashboardPanelsAreGenerated; DRIFTWATCH_UPDATE_DOCS=1 rewrites it, then
# go generate in dashboards/ rewrites the dashboards. Do not edit by hand.
#
# The panels of the overview dashboard ("Findings by class", "Findings by
# namespace"), in order: each family's Panel, not its Class (the failure class
# of the README tables and agent check). One panel per line:
#
#   METRIC  TITLE
#
# A panel counts the objects whose METRIC series is above 0.

`)
	var fams []*finding.Family
	for _, f := range finding.Catalog() {
		if f.Panel != "" {
			fams = append(fams, f)
		}
	}
	sort.SliceStable(fams, func(i, j int) bool { return finding.ClassRank(fams[i].Class) < finding.ClassRank(fams[j].Class) })
	for _, f := range fams {
		fmt.Fprintf(&b, "%-52s %s\n", f.Name, f.Panel)
	}
	return b.String()
}

// The README's "Silencing a detector" names every detector driftwatch.io/ignore
// takes: the registry's names (what driftwatch_detector_enabled{detector}
// exports), in registration order, generated (DRIFTWATCH_UPDATE_DOCS=1
// rewrites the block).
func TestREADMENamesEveryDetector(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := "<!-- generated:detectors (go test ./collectors -run TestREADMENamesEveryDetector; DRIFTWATCH_UPDATE_DOCS=1 rewrites) -->\n"
	const end = "<!-- end:detectors -->"
	i := strings.Index(s, start)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README: the generated detectors block is gone")
	}
	names := make([]string, 0, len(registered))
	for _, d := range registered {
		names = append(names, "`"+d.name+"`")
	}
	want := wrap(strings.Join(names, ", ")+".", 86) + "\n"
	if got := s[i+len(start) : j]; got == want {
		return
	}
	if os.Getenv("DRIFTWATCH_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(s[:i+len(start)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's detector list is out of date with the registry; run DRIFTWATCH_UPDATE_DOCS=1 go test ./collectors -run TestREADMENamesEveryDetector\nwant:\n%s", want)
}

// wrap breaks text at spaces into lines of at most width bytes.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
