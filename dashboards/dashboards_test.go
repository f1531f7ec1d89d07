package dashboards

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const (
	rulesFile   = "../alerts/driftwatch.rules.yaml"
	metricsFile = "../alerts/metrics.txt"
	chartDir    = "../deploy/chart/driftwatch/dashboards"
)

func files(t *testing.T) []File {
	t.Helper()
	fs, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 2 {
		t.Fatalf("want an overview and an investigation dashboard, got %d", len(fs))
	}
	return fs
}

// The committed JSON (and the chart's copies) is what the generator writes.
func TestFilesUpToDate(t *testing.T) {
	for _, f := range files(t) {
		for _, dir := range []string{".", chartDir} {
			p := filepath.Join(dir, f.Name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("%s: %v (run `go generate` in dashboards/)", p, err)
				continue
			}
			if !bytes.Equal(b, f.JSON) {
				t.Errorf("%s is out of date: run `go generate` in dashboards/", p)
			}
		}
	}
	json, _ := filepath.Glob("*.json")
	if len(json) != len(files(t)) {
		t.Errorf("dashboards/ holds %v: every JSON file must come from the generator", json)
	}
}

// strictErr turns the SDK's strict-path errors into a plain error: it returns a
// typed nil (cog.BuildErrors(nil)) on success, which is a non-nil error interface.
func strictErr(err error) error {
	if err == nil || err.Error() == "" {
		return nil
	}
	return err
}

// decode strict-decodes (unknown fields, wrong types and absent required fields
// are errors) and validates. The strict path's typed nil also makes
// PanelOrRowPanel return before storing a panel, so the structure checks use a
// regular decode of the same bytes.
func decode(t *testing.T, name string, b []byte) dashboard.Dashboard {
	t.Helper()
	var strict dashboard.Dashboard
	if err := strictErr(strict.UnmarshalJSONStrict(b)); err != nil {
		t.Fatalf("%s: strict decode: %v", name, err)
	}
	var d dashboard.Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	if len(d.Panels) == 0 {
		t.Fatalf("%s: no panels", name)
	}
	if err := strictErr(d.Validate()); err != nil {
		t.Fatalf("%s: validate: %v", name, err)
	}
	return d
}

func TestStrictDecodeAndValidate(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	uids := map[string]bool{}
	for _, f := range files(t) {
		d := decode(t, f.Name, f.JSON)
		if d.Uid == nil || *d.Uid == "" || uids[*d.Uid] {
			t.Errorf("%s: missing or duplicate uid", f.Name)
		} else {
			uids[*d.Uid] = true
		}
		// Importable as is: a datasource variable, no __inputs, no fixed datasource.
		vars := map[string]dashboard.VariableModel{}
		for _, v := range d.Templating.List {
			vars[v.Name] = v
		}
		if ds, ok := vars["datasource"]; !ok || ds.Type != dashboard.VariableTypeDatasource {
			t.Errorf("%s: no datasource variable", f.Name)
		}
		for _, n := range []string{"cluster", "job", "namespace"} {
			if _, ok := vars[n]; !ok {
				t.Errorf("%s: no %s variable", f.Name, n)
			}
		}
		// One cluster at a time: a panel counting per namespace must not add
		// two clusters' namespaces up.
		if c := vars["cluster"]; (c.Multi != nil && *c.Multi) || (c.IncludeAll != nil && *c.IncludeAll) {
			t.Errorf("%s: the cluster variable must select one cluster (no multi, no All)", f.Name)
		}
		if bytes.Contains(f.JSON, []byte("__inputs")) {
			t.Errorf("%s: __inputs make the dashboard need the import wizard", f.Name)
		}
		ids := map[uint32]bool{}
		for _, p := range d.Panels {
			if p.RowPanel != nil {
				if ids[p.RowPanel.Id] {
					t.Errorf("%s: duplicate panel id %d", f.Name, p.RowPanel.Id)
				}
				ids[p.RowPanel.Id] = true
				continue
			}
			if p.Panel.Id == nil || ids[*p.Panel.Id] {
				t.Errorf("%s: panel %q: missing or duplicate id", f.Name, deref(p.Panel.Title))
			} else {
				ids[*p.Panel.Id] = true
			}
			if p.Panel.Datasource == nil || deref(p.Panel.Datasource.Uid) != "${datasource}" {
				t.Errorf("%s: panel %q: datasource must be ${datasource}", f.Name, deref(p.Panel.Title))
			}
			if len(p.Panel.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", f.Name, deref(p.Panel.Title))
			}
		}
	}
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// query is one PromQL expression of a panel (or a variable's selector).
type query struct {
	where string
	expr  string
}

// queries reads the generated JSON generically, as Grafana would.
func queries(t *testing.T) []query {
	t.Helper()
	var out []query
	for _, f := range files(t) {
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					RefID string `json:"refId"`
					Expr  string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(f.JSON, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("%s: panel %q query %s has no expr", f.Name, p.Title, tg.RefID)
				}
				out = append(out, query{f.Name + ": " + p.Title + " " + tg.RefID, tg.Expr})
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			s, _ := v.Query.(string)
			m := labelValues.FindStringSubmatch(s)
			if m == nil {
				t.Errorf("%s: variable %s: want label_values(SELECTOR, LABEL), got %q", f.Name, v.Name, s)
				continue
			}
			out = append(out, query{f.Name + ": variable " + v.Name, m[1]})
		}
	}
	return out
}

var labelValues = regexp.MustCompile(`^label_values\((.+), *[a-z_]+\)$`)

// grafanaVars replaces Grafana's variables with values of the right type, so the
// Prometheus parser sees what Prometheus will.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h",
	"$job", "driftwatch", "$namespace", "shop", "$secret", "payments-api", "$cluster", "east",
)

func newParser() parser.Parser { return parser.NewParser(parser.Options{}) }

func parse(t *testing.T, q query) parser.Expr {
	t.Helper()
	if strings.Contains(q.expr, "${") {
		t.Errorf("%s: use $name, not ${name}, in PromQL: %s", q.where, q.expr)
	}
	e, err := newParser().ParseExpr(grafanaVars.Replace(q.expr))
	if err != nil {
		t.Errorf("%s: %v\n%s", q.where, err, q.expr)
		return nil
	}
	if strings.Contains(grafanaVars.Replace(q.expr), "$") {
		t.Errorf("%s: unknown Grafana variable in %s", q.where, q.expr)
	}
	return e
}

func TestPanelPromQLParses(t *testing.T) {
	qs := queries(t)
	if len(qs) < 40 {
		t.Errorf("only %d queries: the generator lost panels?", len(qs))
	}
	for _, q := range qs {
		parse(t, q)
	}
}

// metricNames lists the metric names an expression selects.
func metricNames(e parser.Expr) []string {
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			out = append(out, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				out = append(out, m.Value)
			}
		}
		return nil
	})
	return out
}

type listed struct{ class, pending string }

func metricsList(t *testing.T) map[string]listed {
	t.Helper()
	b, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]listed{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 2 {
			t.Fatalf("metrics.txt: bad line %q", line)
		}
		l := listed{class: f[1]}
		if len(f) > 2 {
			l.pending = strings.TrimPrefix(f[2], "pending:")
		}
		out[f[0]] = l
	}
	return out
}

// Metrics Prometheus itself provides.
var prometheusOwn = map[string]bool{"up": true, "ALERTS": true, "ALERTS_FOR_STATE": true,
	// client_golang's process collector, registered by internal/agent
	// (DriftwatchCrashLooping; test/e2e/fullchain reads it from a real agent).
	"process_start_time_seconds": true}

func alertExprs(t *testing.T) []query {
	t.Helper()
	rgs, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, newParser(), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if rgs == nil {
		t.FailNow()
	}
	var out []query
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			out = append(out, query{"alert " + r.Alert, r.Expr})
		}
	}
	return out
}

// Every metric a panel or an alert uses is one the agent exports (metrics.txt,
// which alerts/alerts_test.go checks against the collectors), and every finding
// is used by at least one alert or panel.
func TestMetricsAreExportedAndFindingsUsed(t *testing.T) {
	list := metricsList(t)
	used := map[string][]string{}
	for _, q := range append(queries(t), alertExprs(t)...) {
		e := parse(t, q)
		if e == nil {
			continue
		}
		for _, n := range metricNames(e) {
			used[n] = append(used[n], q.where)
			if _, ok := list[n]; !ok && !prometheusOwn[n] {
				t.Errorf("%s uses %s, which alerts/metrics.txt does not list", q.where, n)
			}
		}
	}
	var unused []string
	for n, l := range list {
		if l.class == "finding" && len(used[n]) == 0 {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	for _, n := range unused {
		t.Errorf("finding %s is used by no alert and no dashboard panel", n)
	}
	var notShown []string
	for n := range list {
		if len(used[n]) == 0 {
			notShown = append(notShown, n)
		}
	}
	sort.Strings(notShown)
	t.Logf("listed metrics used by no panel or alert: %v", notShown)
}

// Alert rules parse with the Prometheus 3.x rule parser too (promtool in
// alerts/ covers the Debian 2.42 one).
func TestAlertRulesParse(t *testing.T) {
	qs := alertExprs(t)
	if len(qs) == 0 {
		t.Fatal("no rules")
	}
}

// Fleets: every selector of every panel query and variable query names the
// dashboard's cluster (cluster="$cluster"), so one cluster's panels never mix
// in another's series.
func TestEveryQuerySelectsTheCluster(t *testing.T) {
	const sentinel = "CLUSTER_SENTINEL"
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h",
		"$job", "driftwatch", "$namespace", "shop", "$secret", "payments-api", "$cluster", sentinel)
	n := 0
	for _, q := range queries(t) {
		if strings.HasSuffix(q.where, "variable cluster") {
			continue // the variable that lists the clusters
		}
		e, err := newParser().ParseExpr(vars.Replace(q.expr))
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			n++
			for _, m := range vs.LabelMatchers {
				if m.Name == "cluster" && m.Type == labels.MatchEqual && m.Value == sentinel {
					return nil
				}
			}
			t.Errorf("%s: selector %s does not select cluster=\"$cluster\"", q.where, vs)
			return nil
		})
	}
	if n < 60 {
		t.Errorf("only %d selectors checked", n)
	}
}

// The overview's classes are those of panels.txt (generated from the agent's
// catalog), each a finding metric, in the file's order, in both class panels.
func TestClassesDriveTheOverview(t *testing.T) {
	classes, err := parsePanels(panelsTxt)
	if err != nil {
		t.Fatal(err)
	}
	list := metricsList(t)
	for _, c := range classes {
		if list[c.metric].class != "finding" {
			t.Errorf("class %q: %s is not a finding in alerts/metrics.txt", c.name, c.metric)
		}
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	for _, f := range files(t) {
		if f.Name != "driftwatch-overview.json" {
			continue
		}
		if err := json.Unmarshal(f.JSON, &d); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	for _, p := range d.Panels {
		switch p.Title {
		case "Findings by class":
			seen++
			if len(p.Targets) != len(classes) {
				t.Fatalf("Findings by class: %d queries for %d classes", len(p.Targets), len(classes))
			}
			for i, c := range classes {
				if tg := p.Targets[i]; tg.Legend != c.name || !strings.Contains(tg.Expr, c.metric+"{") {
					t.Errorf("Findings by class query %d: %q %s, want class %q (%s)", i, tg.Legend, tg.Expr, c.name, c.metric)
				}
			}
		case "Findings by namespace":
			seen++
			expr := p.Targets[0].Expr
			for _, c := range classes {
				if !strings.Contains(expr, c.metric+"{") || !strings.Contains(expr, `"class", "`+c.name+`"`) {
					t.Errorf("Findings by namespace does not count class %q (%s)", c.name, c.metric)
				}
			}
		}
	}
	if seen != 2 {
		t.Errorf("found %d of the overview's two class panels", seen)
	}
}

func TestParseClassesRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"# only a comment\n",
		"driftwatch_a\n",
		"driftwatch_a missing keys\ndriftwatch_a other\n",
		"driftwatch_a missing keys\ndriftwatch_b missing keys\n",
		"up targets\n",
		"driftwatch_a{x=\"1\"} title\n",
		"driftwatch_a a \"quoted\" title\n",
		"driftwatch_a {{namespace}}\n",
		"driftwatch_a $namespace\n",
	} {
		if cs, err := parsePanels(in); err == nil {
			t.Errorf("parsePanels(%q) = %v, want an error", in, cs)
		}
	}
	cs, err := parsePanels("# c\n\ndriftwatch_a   missing keys\ndriftwatch_b Ready but short\n")
	if err != nil || len(cs) != 2 || cs[0] != (class{"missing keys", "driftwatch_a"}) || cs[1] != (class{"Ready but short", "driftwatch_b"}) {
		t.Errorf("parsePanels: %v, %v", cs, err)
	}
}
