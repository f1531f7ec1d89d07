// Package report is the one schema of driftwatch's findings as documents:
// `agent check --output json` prints it and /api/v1/findings serves it
// (docs/findings-schema.md documents it). It is built from the detectors'
// typed findings (collectors.Finding) and holds nothing a finding does not:
// names, classes, labels, evidence sentences and consumers, never a value.
package report

import (
	"fmt"
	"slices"

	dwcollectors "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Finding is one finding: the typed finding its detector produced
// (collectors.Finding) with its family's name and class.
type Finding struct {
	Class     string                  `json:"class"`
	Severity  dwcollectors.Severity   `json:"severity"`
	Metric    string                  `json:"metric"`
	Detector  string                  `json:"detector"`
	Object    dwcollectors.ObjectID   `json:"object"`
	Labels    map[string]string       `json:"labels"`
	Value     float64                 `json:"value"`
	Evidence  string                  `json:"evidence,omitempty"`
	Consumers []dwcollectors.Consumer `json:"consumers,omitempty"`
}

// FromTyped turns the detectors' typed findings into report findings, in
// their order (severity, class, family, object).
func FromTyped(fs []dwcollectors.Finding) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		out = append(out, Finding{Class: f.Family.Class, Severity: f.Severity, Metric: f.Family.Name, Detector: f.Detector,
			Object: f.Object, Labels: f.Labels, Value: f.Value, Evidence: f.Evidence, Consumers: f.Consumers})
	}
	return out
}

// Report is the document: the result against a severity threshold, counts per
// severity, the findings, and what was not checked.
type Report struct {
	Result   string         `json:"result"` // pass or fail
	FailOn   string         `json:"fail_on"`
	Counts   map[string]int `json:"counts"`
	Findings []Finding      `json:"findings"`
	// SkippedDetectors did not run: a resource they need is unavailable.
	SkippedDetectors []string `json:"skipped_detectors"`
	// Unavailable resources, as resource=reason (crd_absent, forbidden, ...).
	Unavailable []string `json:"unavailable"`
}

// ParseFailOn reads a --fail-on / ?fail_on= value.
func ParseFailOn(s string) (dwcollectors.Severity, error) {
	switch sev := dwcollectors.Severity(s); sev {
	case dwcollectors.SevCritical, dwcollectors.SevWarning, dwcollectors.SevInfo:
		return sev, nil
	}
	return "", fmt.Errorf("%q: want critical, warning or info", s)
}

// Build assembles a report. failOn must be a valid severity (ParseFailOn);
// states are the informer states (for Unavailable); keep, when not nil,
// selects the findings to include (a namespace filter): counts and the result
// cover only what it keeps.
func Build(typed []dwcollectors.Finding, skipped []string, states []model.ResourceState, failOn dwcollectors.Severity,
	keep func(Finding) bool) Report {
	r := Report{Result: "pass", FailOn: string(failOn), Counts: map[string]int{"critical": 0, "warning": 0, "info": 0},
		Findings: []Finding{}, SkippedDetectors: slices.Clone(skipped), Unavailable: []string{}}
	for _, f := range FromTyped(typed) {
		if keep != nil && !keep(f) {
			continue
		}
		r.Findings = append(r.Findings, f)
		r.Counts[string(f.Severity)]++
		if f.Severity.Rank() >= failOn.Rank() {
			r.Result = "fail"
		}
	}
	if r.SkippedDetectors == nil {
		r.SkippedDetectors = []string{}
	}
	for _, st := range states {
		if !st.Available() && st.Reason != "not_watched" {
			r.Unavailable = append(r.Unavailable, string(st.Resource)+"="+st.Reason)
		}
	}
	return r
}

// Failed reports whether the report fails its threshold.
func (r Report) Failed() bool { return r.Result == "fail" }
