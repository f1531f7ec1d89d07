package fullchain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// panelTarget is one query of one dashboard panel.
type panelTarget struct {
	Dashboard string // file name without .json
	Panel     string // panel title
	RefID     string
	Expr      string // as written in the dashboard
}

// ID names a target in messages and in the allow-list.
func (p panelTarget) ID() string { return p.Dashboard + " / " + p.Panel + " / " + p.RefID }

// dashboardTargets reads every dashboards/*.json and returns every panel
// target with a PromQL expression, rows included (a collapsed row keeps its
// panels in its own "panels" list).
func dashboardTargets(t *testing.T) []panelTarget {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards/*.json (%v)", err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Type    string  `json:"type"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	}
	var out []panelTarget
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []panel `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				walk(p.Panels)
				for _, tg := range p.Targets {
					if strings.TrimSpace(tg.Expr) == "" {
						continue
					}
					out = append(out, panelTarget{Dashboard: name, Panel: p.Title, RefID: tg.RefID, Expr: tg.Expr})
				}
			}
		}
		walk(d.Panels)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dashboard < out[j].Dashboard })
	return out
}

// substitute replaces the Grafana template variables as Grafana would render
// them for this scenario: $job → driftwatch (a single value), $namespace → the
// scenario namespace, $secret → the scenario's Secrets as a multi-value
// selection ("(a|b|c)", regexp-escaped, as Grafana renders multi-values for
// Prometheus), $cluster → "" (one Prometheus, no cluster label: the cluster
// variable finds no value and cluster="" selects every series), $__rate_interval
// → 1m, $__interval → 1s, $__range → 5m.
// $datasource only appears in datasource references, not in expressions.
func substitute(expr, namespace string, secrets []string) string {
	quoted := make([]string, len(secrets))
	for i, s := range secrets {
		quoted[i] = regexp.QuoteMeta(s)
	}
	r := strings.NewReplacer(
		// Longer names first: the replacer tries its arguments in order.
		"$__rate_interval", "1m", "${__rate_interval}", "1m",
		"$__interval", "1s", "${__interval}", "1s",
		"$__range", "5m", "${__range}", "5m",
		"$namespace", regexp.QuoteMeta(namespace), "${namespace}", regexp.QuoteMeta(namespace),
		"$secret", "("+strings.Join(quoted, "|")+")", "${secret}", "("+strings.Join(quoted, "|")+")",
		"$job", "driftwatch", "${job}", "driftwatch",
		"$cluster", "", "${cluster}", "",
	)
	return r.Replace(expr)
}

var orVectorZero = regexp.MustCompile(`\s+or\s+vector\(0\)`)

// strict drops every "or vector(0)" fallback: a stat panel that shows 0
// because nothing matched would otherwise count as "returns data".
func strict(expr string) string { return orVectorZero.ReplaceAllString(expr, "") }
