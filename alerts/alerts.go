// Package alerts ships driftwatch's Prometheus alerting rules and the list of
// metrics the agent exports. The files are the product (driftwatch.rules.yaml is a
// plain Prometheus rule file; the Helm chart renders it into a PrometheusRule); this
// package embeds them so Go tests and the end-to-end stack can load them.
package alerts

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"
)

// Rules is alerts/driftwatch.rules.yaml: the rule groups, with job="driftwatch".
//
//go:embed driftwatch.rules.yaml
var Rules []byte

// RunbookBase prefixes every alert's runbook_url; the page is <AlertName>.md.
const RunbookBase = "https://github.com/driftwatch/driftwatch/blob/main/docs/runbooks/"

//go:embed metrics.txt
var metricsTxt []byte

// Metric is one line of metrics.txt.
type Metric struct {
	Name string
	// Class is finding, inventory or self.
	Class string
}

// Metrics parses metrics.txt: the one list of metric names driftwatch exports.
func Metrics() ([]Metric, error) { return ParseMetrics(metricsTxt) }

// ParseMetrics parses the metrics.txt format: NAME CLASS, # comments.
func ParseMetrics(b []byte) ([]Metric, error) {
	var out []Metric
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("metrics.txt:%d: want NAME CLASS", n)
		}
		m := Metric{Name: f[0], Class: f[1]}
		switch m.Class {
		case "finding", "inventory", "self":
		default:
			return nil, fmt.Errorf("metrics.txt:%d: class %q: want finding, inventory or self", n, m.Class)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("metrics.txt:%d: %s listed twice", n, m.Name)
		}
		seen[m.Name] = true
		out = append(out, m)
	}
	return out, sc.Err()
}

// RenderOptions adapt the shipped rules to an installation.
type RenderOptions struct {
	// Job is the Prometheus job label of driftwatch's scrape (default driftwatch).
	Job string
	// RunbookBaseURL replaces RunbookBase in every runbook_url (default: the
	// runbooks in this repository), e.g. an internal wiki or a mirror.
	RunbookBaseURL string
	// ClusterLabel is the label that names a cluster in a fleet (default
	// cluster, kubernetes-mixin's): every aggregation keeps it and every
	// description query selects the alert's.
	ClusterLabel string
	// KeepFiringFor replaces the finding alerts' keep_firing_for (default
	// KeepFiringFor): longer where the agent takes longer to come back (a
	// large cluster's informers), 0s to turn it off.
	KeepFiringFor string
}

// ClusterLabel is the cluster label the shipped rules keep.
const ClusterLabel = "cluster"

// KeepFiringFor is the shipped keep_firing_for of every finding alert (the
// groups driftwatch.pages and driftwatch.warnings). An agent restart makes
// every series of the old process vanish at once (Prometheus marks them stale
// when the scrape fails) and the new process serves no finding until its
// caches have synced and its GitOps sources have been polled: without it a
// firing page is sent resolved and pages again after its `for`. 15 minutes
// covers a rescheduled pod, the informers' sync and the first polls at the
// default intervals; the price is that a fixed finding's alert resolves that
// much later. The agent's own alerts (driftwatch.agent) are per instance and
// have none.
const KeepFiringFor = "15m"

// keepFiringLine is one shipped keep_firing_for line.
var keepFiringLine = regexp.MustCompile(`(?m)^(\s*)keep_firing_for: ` + KeepFiringFor + `$`)

var (
	// clusterGrouping is the cluster label heading a by (...) or on (...)
	// list: the shipped file puts it first in every one.
	clusterGrouping = regexp.MustCompile(`\b(by|on) \(` + ClusterLabel + `,`)
	labelName       = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Render returns the rule file with opts applied, the same substitutions the
// Helm chart's PrometheusRule makes (deploy_test.go holds the two equal).
func Render(opts RenderOptions) ([]byte, error) {
	out := string(Rules)
	if opts.Job != "" && opts.Job != "driftwatch" {
		if strings.ContainsAny(opts.Job, "\"\\\n") {
			return nil, fmt.Errorf("job %q: a Prometheus label value without quotes, backslashes or newlines", opts.Job)
		}
		out = strings.ReplaceAll(out, `job="driftwatch"`, `job="`+opts.Job+`"`)
	}
	if l := opts.ClusterLabel; l != "" && l != ClusterLabel {
		if !labelName.MatchString(l) || strings.HasPrefix(l, "__") {
			return nil, fmt.Errorf("cluster label %q: a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", l)
		}
		out = clusterGrouping.ReplaceAllString(out, "${1} ("+l+",")
		out = strings.ReplaceAll(out, ClusterLabel+"=%q", l+"=%q")
		out = strings.ReplaceAll(out, "$labels."+ClusterLabel+" ", "$labels."+l+" ")
	}
	if k := opts.KeepFiringFor; k != "" && k != KeepFiringFor {
		if _, err := model.ParseDuration(k); err != nil {
			return nil, fmt.Errorf("keep_firing_for %q: a Prometheus duration such as 15m, 1h or 0s: %w", k, err)
		}
		out = keepFiringLine.ReplaceAllString(out, "${1}keep_firing_for: "+k)
	}
	if base := opts.RunbookBaseURL; base != "" {
		if strings.ContainsAny(base, "\" \n") {
			return nil, fmt.Errorf("runbook base URL %q: no quotes, spaces or newlines", base)
		}
		out = strings.ReplaceAll(out, RunbookBase, strings.TrimSuffix(base, "/")+"/")
	}
	return []byte(out), nil
}
