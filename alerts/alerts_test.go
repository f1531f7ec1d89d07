package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/finding"
)

// tool finds a real binary in $DRIFTWATCH_TOOLS_BIN or on PATH. Missing: the test
// fails under CI (the suite must not silently lose coverage) and skips elsewhere.
func tool(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("DRIFTWATCH_TOOLS_BIN"); dir != "" {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found in $DRIFTWATCH_TOOLS_BIN or PATH: run test/tools/build.sh", name)
	}
	t.Skipf("%s not installed (test/tools/build.sh installs it); skipping", name)
	return ""
}

func run(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
}

func TestPromtoolCheckRules(t *testing.T) {
	run(t, tool(t, "promtool"), "check", "rules", "driftwatch.rules.yaml")
}

func TestPromtoolTestRules(t *testing.T) {
	files, err := filepath.Glob("tests/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule tests in alerts/tests: %v", err)
	}
	run(t, tool(t, "promtool"), append([]string{"test", "rules"}, files...)...)
}

type rule struct {
	Alert         string            `json:"alert"`
	Expr          string            `json:"expr"`
	For           string            `json:"for"`
	KeepFiringFor string            `json:"keep_firing_for"`
	Labels        map[string]string `json:"labels"`
	Annotations   map[string]string `json:"annotations"`
	group         string
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	var rf ruleFile
	if err := yaml.UnmarshalStrict(Rules, &rf); err != nil {
		t.Fatalf("driftwatch.rules.yaml: %v", err)
	}
	var out []rule
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			r.group = g.Name
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatal("no rules")
	}
	return out
}

func alertNames(rules []rule) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range rules {
		if !seen[r.Alert] {
			seen[r.Alert] = true
			names = append(names, r.Alert)
		}
	}
	sort.Strings(names)
	return names
}

func TestEveryAlertIsComplete(t *testing.T) {
	index, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			t.Errorf("recording rules are not expected here: %q", r.Expr)
			continue
		}
		if !regexp.MustCompile(`^Driftwatch[A-Z][A-Za-z]+$`).MatchString(r.Alert) {
			t.Errorf("%s: alert names are DriftwatchCamelCase", r.Alert)
		}
		switch r.Labels["severity"] {
		case "critical", "warning":
		default:
			t.Errorf("%s: severity %q: want critical or warning", r.Alert, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[a] == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if want := RunbookBase + r.Alert + ".md"; r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
		}
		// Name the object: every finding alert's summary uses a label.
		if !strings.Contains(r.Annotations["summary"]+r.Annotations["description"], "$labels.") {
			t.Errorf("%s: summary/description must name the object through $labels", r.Alert)
		}
		if !strings.Contains(r.Expr, `job="driftwatch"`) {
			t.Errorf("%s: expression must select job=\"driftwatch\" (the chart substitutes it)", r.Alert)
		}
		if !strings.Contains(string(index), "runbooks/"+r.Alert+".md") {
			t.Errorf("%s: not linked from docs/alerts.md", r.Alert)
		}
	}
}

// Runbooks: one page per alert, with the four sections, and kubectl commands that
// print verdicts and key names, never Secret values.
func TestRunbooks(t *testing.T) {
	names := alertNames(loadRules(t))
	pages, _ := filepath.Glob("../docs/runbooks/*.md")
	have := map[string]bool{}
	for _, p := range pages {
		have[strings.TrimSuffix(filepath.Base(p), ".md")] = true
	}
	valueLeaks := []*regexp.Regexp{
		regexp.MustCompile(`base64 +(-d|--decode|-D)\b`),
		regexp.MustCompile(`get +secrets?\b[^|\n]*-o *(yaml|json|wide)\b\s*$`),
		regexp.MustCompile(`\{\.data\.`),
		regexp.MustCompile(`\.data\[["']`),
		regexp.MustCompile(`\.data\.[A-Za-z_]`),
		regexp.MustCompile(`\bview-secret\b`),
	}
	for _, n := range names {
		if !have[n] {
			t.Errorf("%s: no docs/runbooks/%s.md", n, n)
			continue
		}
		delete(have, n)
		b, err := os.ReadFile("../docs/runbooks/" + n + ".md")
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, "# "+n+"\n") {
			t.Errorf("%s.md: first line must be '# %s'", n, n)
		}
		for _, h := range []string{"## Meaning", "## Confirm", "## Fix", "## Verify"} {
			if !strings.Contains(s, "\n"+h) {
				t.Errorf("%s.md: no %q section", n, h)
			}
		}
		confirm := s[strings.Index(s, "## Confirm"):]
		if !strings.Contains(confirm, "kubectl") && !strings.Contains(confirm, "curl") {
			t.Errorf("%s.md: Confirm has no command", n)
		}
		// Join shell continuation lines so a pipe on the next line counts.
		for i, line := range strings.Split(strings.ReplaceAll(s, "\\\n", " "), "\n") {
			for _, re := range valueLeaks {
				if re.MatchString(line) {
					t.Errorf("%s.md:%d: command may print Secret values (%s): %s", n, i+1, re, line)
				}
			}
			if strings.Contains(line, "get secret") && strings.Contains(line, "-o json") &&
				!safeJQ.MatchString(line) {
				t.Errorf("%s.md:%d: 'get secret -o json' must pipe into a jq filter that keeps key names or metadata only: %s", n, i+1, line)
			}
		}
	}
	for extra := range have {
		t.Errorf("docs/runbooks/%s.md: no alert of that name", extra)
	}
}

type promtoolTests struct {
	RuleFiles          []string `json:"rule_files"`
	EvaluationInterval string   `json:"evaluation_interval"`
	Tests              []struct {
		Name          string `json:"name"`
		Interval      string `json:"interval"`
		InputSeries   []any  `json:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			AlertName string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
		PromqlExprTest []any `json:"promql_expr_test"`
	} `json:"tests"`
}

// Every alert has a promtool case where it fires and one where it does not.
func TestEveryAlertHasRuleTests(t *testing.T) {
	files, _ := filepath.Glob("tests/*.yaml")
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var pt promtoolTests
		if err := yaml.UnmarshalStrict(b, &pt); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(pt.RuleFiles) != 1 || pt.RuleFiles[0] != "../driftwatch.rules.yaml" {
			t.Errorf("%s: rule_files must be [../driftwatch.rules.yaml]", f)
		}
		for _, tc := range pt.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.AlertName] = true
				} else {
					quiet[a.AlertName] = true
				}
			}
		}
	}
	for _, n := range alertNames(loadRules(t)) {
		if !fires[n] {
			t.Errorf("%s: no promtool case where it fires", n)
		}
		if !quiet[n] {
			t.Errorf("%s: no promtool case where it stays quiet", n)
		}
	}
}

// safeJQ: jq filters that reduce a Secret to key names, lengths, managedFields or
// an object of chosen fields.
var safeJQ = regexp.MustCompile(`\| *jq [^|]*'[^']*(keys|length|managedFields|\| *\{)`)

var metricRef = regexp.MustCompile(`\bdriftwatch_[a-z0-9_]+\b`)

// Every metric an alert uses is in metrics.txt. (dashboards/ parses the same
// expressions with the real PromQL parser.)
func TestAlertMetricsAreListed(t *testing.T) {
	ms, err := Metrics()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range ms {
		listed[m.Name] = true
	}
	for _, r := range loadRules(t) {
		for _, name := range metricRef.FindAllString(r.Expr, -1) {
			if !listed[name] {
				t.Errorf("%s uses %s, which alerts/metrics.txt does not list", r.Alert, name)
			}
		}
	}
}

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registeredMetrics: every metric name the agent's collectors describe (a new
// collector type must be added here).
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	// The Argo CD API collector is registered only with --argocd-server.
	ch := make(chan *prometheus.Desc, 256)
	for _, c := range []prometheus.Collector{&collectors.Findings{}, &collectors.Self{}, collectors.NewArgoCDAPI(nil), collectors.NewFluxArtifacts(nil), collectors.NewDesiredSources()} {
		c.Describe(ch)
	}
	close(ch)
	out := map[string]bool{}
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		out[m[1]] = true
	}
	return out
}

// metrics.txt and the collectors agree: every registered driftwatch metric is
// listed, and every listed metric is registered.
func TestMetricsListMatchesCollectors(t *testing.T) {
	ms, err := Metrics()
	if err != nil {
		t.Fatal(err)
	}
	reg := registeredMetrics(t)
	listed := map[string]Metric{}
	for _, m := range ms {
		listed[m.Name] = m
		if !reg[m.Name] {
			t.Errorf("alerts/metrics.txt lists %s but no collector registers it", m.Name)
		}
	}
	var missing []string
	for n := range reg {
		if _, ok := listed[n]; !ok && strings.HasPrefix(n, "driftwatch_") {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	for _, n := range missing {
		t.Errorf("collectors register %s but alerts/metrics.txt does not list it: add it (and an alert or a dashboard panel if it is a finding)", n)
	}
}

func TestParseMetricsRejectsBadLines(t *testing.T) {
	for _, bad := range []string{"x", "x finding pending", "x other", "x finding\nx self", "x finding extra:1"} {
		if _, err := ParseMetrics([]byte(bad)); err == nil {
			t.Errorf("ParseMetrics(%q): no error", bad)
		}
	}
}

func TestRender(t *testing.T) {
	out, err := Render(RenderOptions{Job: "dw", RunbookBaseURL: "https://wiki.example/runbooks/"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, `job="driftwatch"`) || !strings.Contains(s, `job="dw"`) {
		t.Error("job not substituted")
	}
	if strings.Contains(s, RunbookBase) || !strings.Contains(s, "https://wiki.example/runbooks/DriftwatchSecretMissingKeyConsumed.md") {
		t.Error("runbook base not substituted")
	}
	for _, bad := range []RenderOptions{{Job: `a"b`}, {RunbookBaseURL: "https://x y"}} {
		if _, err := Render(bad); err == nil {
			t.Errorf("Render(%+v): no error", bad)
		}
	}
}

var (
	selectorRef = regexp.MustCompile(`\b(driftwatch_[a-z0-9_]+)\b(\{[^}]*\})?`)
	matcherRef  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	joinRef     = regexp.MustCompile(`\b(and|unless)\b`)
	severityOf  = map[string]finding.Severity{"critical": finding.SevCritical, "warning": finding.SevWarning}
)

// selectedSeverities returns the severities of the finding family's series that
// a selector's matchers select.
func selectedSeverities(f *finding.Family, selector string) []finding.Severity {
	all := f.Severities()
	if f.SeverityBy == nil {
		return all
	}
	for _, m := range matcherRef.FindAllStringSubmatch(selector, -1) {
		if m[1] != f.SeverityBy.Label {
			continue
		}
		switch m[2] {
		case "=":
			return []finding.Severity{f.SeverityOf(map[string]string{m[1]: m[3]})}
		case "!=":
			var out []finding.Severity
			add := func(s finding.Severity) {
				for _, o := range out {
					if o == s {
						return
					}
				}
				out = append(out, s)
			}
			add(f.Severity) // any value not listed keeps the family's
			for v, s := range f.SeverityBy.Values {
				if v != m[3] {
					add(s)
				}
			}
			return out
		}
	}
	return all
}

// Each finding family declares its severity once (finding.Catalog); the
// alert rules must agree with it: every series an alert is about (the
// selectors before a join's and/unless, which only restrict or exclude) has
// the alert's severity, every critical or warning series is alerted at its
// severity, and info is never alerted.
func TestAlertSeveritiesMatchCatalog(t *testing.T) {
	covered := map[string]map[finding.Severity]bool{}
	cover := func(f *finding.Family, s finding.Severity) {
		name := f.Name
		if f.Restates != "" {
			name = f.Restates
		}
		if covered[name] == nil {
			covered[name] = map[finding.Severity]bool{}
		}
		covered[name][s] = true
	}
	for _, r := range loadRules(t) {
		want, ok := severityOf[r.Labels["severity"]]
		if !ok {
			continue // TestEveryAlertIsComplete reports it
		}
		subject := r.Expr
		if loc := joinRef.FindStringIndex(subject); loc != nil {
			subject = subject[:loc[0]]
		}
		for _, m := range selectorRef.FindAllStringSubmatch(subject, -1) {
			f, ok := finding.Lookup(m[1])
			if !ok || f.Kind != finding.KindFinding {
				continue
			}
			for _, s := range selectedSeverities(f, m[2]) {
				if s != want {
					t.Errorf("%s (severity %s) selects %s%s, whose series there are %s in the catalog", r.Alert, want, m[1], m[2], s)
				}
			}
			cover(f, want)
		}
	}
	for _, f := range finding.Catalog() {
		if f.Kind != finding.KindFinding {
			continue
		}
		name := f.Name
		if f.Restates != "" {
			name = f.Restates
		}
		for _, s := range f.Severities() {
			if s == finding.SevInfo {
				continue
			}
			if !covered[name][s] {
				t.Errorf("%s declares %s series but no %s alert is about them (add the alert, or declare the severity the family really has)", f.Name, s, s)
			}
		}
	}
}

var (
	groupingRef = regexp.MustCompile(`\b(by|on|without|ignoring)\s*\(([^)]*)\)`)
	aggRef      = regexp.MustCompile(`\b(sum|min|max|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)\s*(\(|by\b|without\b)`)
	templSel    = regexp.MustCompile(`\bdriftwatch_[a-z0-9_]+\{([^}]*)\}`)
)

// Fleets: every aggregation and every vector match of a rule keeps the cluster
// label (by/on lists name it first, which is what Render renames), there is no
// aggregation without a by list, and every query in a description selects the
// alert's cluster. Finding alerts aggregate away the scrape target: only the
// agent's own alerts may carry instance.
func TestClusterLabelKept(t *testing.T) {
	for _, r := range loadRules(t) {
		for _, m := range groupingRef.FindAllStringSubmatch(r.Expr, -1) {
			if m[1] == "without" || m[1] == "ignoring" {
				t.Errorf("%s: %s (...) may drop or keep the cluster label by accident; use by/on", r.Alert, m[1])
				continue
			}
			if !strings.HasPrefix(strings.TrimSpace(m[2]), ClusterLabel+",") {
				t.Errorf("%s: %s (%s): the cluster label must come first", r.Alert, m[1], m[2])
			}
		}
		if n, g := len(aggRef.FindAllString(r.Expr, -1)), len(regexp.MustCompile(`\bby\s*\(`).FindAllString(r.Expr, -1)); n != g {
			t.Errorf("%s: %d aggregations but %d by lists: every aggregation must say what it keeps", r.Alert, n, g)
		}
		finding := strings.Contains(r.Expr, "driftwatch_") && !strings.Contains(r.Expr, "driftwatch_informer_synced") &&
			!strings.Contains(r.Expr, "driftwatch_detector_") && !strings.Contains(r.Expr, "driftwatch_resource_") &&
			!strings.Contains(r.Expr, "driftwatch_argocd_api_up")
		if finding && !strings.HasPrefix(strings.TrimSpace(r.Expr), "max by (") {
			t.Errorf("%s: a finding alert must aggregate its series (max by (cluster, job, <the object's labels>)): a series per agent pod or shard must not make its own page", r.Alert)
		}
		if finding && strings.Contains(r.Expr, "instance") {
			t.Errorf("%s: a finding alert must not keep instance", r.Alert)
		}
		for _, a := range []string{"summary", "description"} {
			for _, m := range templSel.FindAllStringSubmatch(r.Annotations[a], -1) {
				if !strings.HasPrefix(m[1], ClusterLabel+"=%q,") {
					t.Errorf("%s: %s query %s must select the alert's cluster first (%s=%%q with $labels.%s)", r.Alert, a, m[0], ClusterLabel, ClusterLabel)
				}
			}
		}
	}
}

// Render renames the cluster label everywhere the shipped file uses it, the
// result is valid for promtool, and bad label names are refused.
func TestRenderClusterLabel(t *testing.T) {
	out, err := Render(RenderOptions{ClusterLabel: "k8s_cluster"})
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(out, &rf); err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`\bcluster\b`)
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			for _, s := range []string{r.Expr, r.Annotations["summary"], r.Annotations["description"]} {
				if word.MatchString(s) {
					t.Errorf("%s: the cluster label is left in %q", r.Alert, s)
				}
				n += strings.Count(s, "k8s_cluster")
			}
		}
	}
	want := 0
	for _, r := range loadRules(t) {
		for _, s := range []string{r.Expr, r.Annotations["summary"], r.Annotations["description"]} {
			want += len(word.FindAllString(s, -1))
		}
	}
	if n != want || want == 0 {
		t.Errorf("k8s_cluster appears %d times, want %d (every use of the cluster label)", n, want)
	}
	f := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, tool(t, "promtool"), "check", "rules", f)
	for _, bad := range []string{"k8s-cluster", "__cluster", "1cluster", `a"b`} {
		if _, err := Render(RenderOptions{ClusterLabel: bad}); err == nil {
			t.Errorf("cluster label %q: no error", bad)
		}
	}
}

// A finding alert keeps firing across an agent restart (its series vanish
// while the scrape fails and until the new process has synced); the agent's
// own alerts are per instance and keep none. alerts/tests/pages.yaml ("an
// agent restart does not resolve a firing page") and fleet.yaml hold the
// behaviour; this holds every alert to it.
func TestFindingAlertsKeepFiringAcrossRestarts(t *testing.T) {
	for _, r := range loadRules(t) {
		switch r.group {
		case "driftwatch.pages", "driftwatch.warnings":
			if r.KeepFiringFor != KeepFiringFor {
				t.Errorf("%s (%s): keep_firing_for %q, want %s", r.Alert, r.group, r.KeepFiringFor, KeepFiringFor)
			}
		case "driftwatch.agent":
			if r.KeepFiringFor != "" {
				t.Errorf("%s (%s): keep_firing_for %q: the agent's alerts are per instance, a restarted pod is a new one", r.Alert, r.group, r.KeepFiringFor)
			}
		default:
			t.Errorf("%s: group %q: add it to this test", r.Alert, r.group)
		}
	}
	for _, keep := range []string{"30m", "0s", "1h"} {
		b, err := Render(RenderOptions{KeepFiringFor: keep})
		if err != nil {
			t.Fatal(err)
		}
		var rf ruleFile
		if err := yaml.UnmarshalStrict(b, &rf); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				if g.Name != "driftwatch.agent" && r.KeepFiringFor != keep {
					t.Errorf("Render(KeepFiringFor %s): %s has %q", keep, r.Alert, r.KeepFiringFor)
				}
				if r.KeepFiringFor != "" {
					n++
				}
			}
		}
		if n == 0 {
			t.Errorf("Render(KeepFiringFor %s): no keep_firing_for left", keep)
		}
	}
	for _, bad := range []string{"15", "a while", "15m\nfor: 0s", "-5m"} {
		if _, err := Render(RenderOptions{KeepFiringFor: bad}); err == nil {
			t.Errorf("Render(KeepFiringFor %q): no error", bad)
		}
	}
}
