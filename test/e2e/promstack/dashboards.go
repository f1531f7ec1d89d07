// Dashboards: every panel query of dashboards/*.json, and the substitution
// of Grafana's template variables, for the tests that ask a real Prometheus
// whether each panel returns data (test/e2e/fullchain, test/e2e/node).

package promstack

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

// PanelTarget is one query of one dashboard panel.
type PanelTarget struct {
	Dashboard string // file name without .json
	Panel     string // panel title
	RefID     string
	Expr      string // as written in the dashboard
}

// ID names a target in messages and in the allow-list.
func (p PanelTarget) ID() string { return p.Dashboard + " / " + p.Panel + " / " + p.RefID }

// DashboardTargets reads every dashboards/*.json and returns every panel
// target with a PromQL expression, rows included (a collapsed row keeps its
// panels in its own "panels" list).
func DashboardTargets(t *testing.T) []PanelTarget {
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
	var out []PanelTarget
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
					out = append(out, PanelTarget{Dashboard: name, Panel: p.Title, RefID: tg.RefID, Expr: tg.Expr})
				}
			}
		}
		walk(d.Panels)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dashboard < out[j].Dashboard })
	return out
}

// Substitute replaces the Grafana template variables as Grafana would render
// them for this scenario: $job → driftwatch (a single value), $namespace → the
// scenario namespace, $secret → the scenario's Secrets as a multi-value
// selection ("(a|b|c)", regexp-escaped, as Grafana renders multi-values for
// Prometheus), $cluster → "" (one Prometheus, no cluster label: the cluster
// variable finds no value and cluster="" selects every series), $__rate_interval
// → 1m, $__interval → 1s, $__range → 5m.
// $datasource only appears in datasource references, not in expressions.
func Substitute(expr, namespace string, secrets []string) string {
	quoted := make([]string, len(secrets))
	for i, s := range secrets {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return substitute(expr, regexp.QuoteMeta(namespace), "("+strings.Join(quoted, "|")+")")
}

// SubstituteAll is Substitute with every namespace and every Secret
// selected (Grafana's "All" as the regexp .*; every dashboard matches both
// variables with =~).
func SubstituteAll(expr string) string { return substitute(expr, ".*", ".*") }

// SubstituteNamespace is Substitute with one namespace and every Secret.
func SubstituteNamespace(expr, namespace string) string {
	return substitute(expr, regexp.QuoteMeta(namespace), ".*")
}

func substitute(expr, namespace, secret string) string {
	r := strings.NewReplacer(
		// Longer names first: the replacer tries its arguments in order.
		"$__rate_interval", "1m", "${__rate_interval}", "1m",
		"$__interval", "1s", "${__interval}", "1s",
		"$__range", "5m", "${__range}", "5m",
		"$namespace", namespace, "${namespace}", namespace,
		"$secret", secret, "${secret}", secret,
		"$job", "driftwatch", "${job}", "driftwatch",
		"$cluster", "", "${cluster}", "",
	)
	return r.Replace(expr)
}

var orVectorZero = regexp.MustCompile(`\s+or\s+vector\(0\)`)

// Strict drops every "or vector(0)" fallback: a stat panel that shows 0
// because nothing matched would otherwise count as "returns data".
func Strict(expr string) string { return orVectorZero.ReplaceAllString(expr, "") }
