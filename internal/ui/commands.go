package ui

import (
	"regexp"
	"slices"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/alerts"
	"github.com/driftwatch/driftwatch/finding"
)

// Command is a copy-ready shell command shown with a finding (finding.Command).
// Commands print key names, conditions and metadata, never a value
// (TestCommandsPrintNoValues holds every command the page can show to
// alerts.CommandLeak, the check the runbooks pass).
type Command = finding.Command

// runbooks maps a finding family and severity to the alert whose runbook
// explains it, read from the shipped rules: the first alert of that severity
// whose expression names the family, else the first that names it.
var runbooks = sync.OnceValue(func() map[string][]alertRef {
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `json:"alert"`
				Expr   string            `json:"expr"`
				Labels map[string]string `json:"labels"`
			} `json:"rules"`
		} `json:"groups"`
	}
	out := map[string][]alertRef{}
	if err := yaml.Unmarshal(alerts.Rules, &doc); err != nil {
		return out
	}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				refs := out[m]
				if !slices.ContainsFunc(refs, func(a alertRef) bool { return a.Alert == r.Alert }) {
					out[m] = append(refs, alertRef{Alert: r.Alert, Severity: r.Labels["severity"]})
				}
			}
		}
	}
	return out
})

type alertRef struct{ Alert, Severity string }

var metricName = regexp.MustCompile(`\bdriftwatch_[a-z0-9_]+\b`)

// RunbookAlert names the alert whose runbook covers a finding ("" when none
// does, e.g. info-only families).
func RunbookAlert(f finding.Finding) string {
	refs := runbooks()[f.Metric]
	// Alerts on a family that restates this one (the count form of missing
	// keys) cover it too.
	for _, fam := range finding.Catalog() {
		if fam.Restates == f.Metric {
			refs = append(refs, runbooks()[fam.Name]...)
		}
	}
	for _, r := range refs {
		if r.Severity == string(f.Severity) {
			return r.Alert
		}
	}
	if len(refs) > 0 {
		return refs[0].Alert
	}
	return ""
}

// defaultRunbookBase is where runbook links point unless configured: the
// shipped runbooks, as in the alert rules.
const defaultRunbookBase = alerts.RunbookBase
