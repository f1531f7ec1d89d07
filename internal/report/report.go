// Package report is the one schema of driftwatch's findings as documents:
// `agent check --output json` prints it and /api/v1/findings serves it
// (docs/findings-schema.md documents it). It is built from the detectors'
// typed findings (finding.Finding) and holds nothing a finding does not:
// names, classes, labels, evidence sentences and consumers, never a value.
package report

import (
	"slices"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Report is the document: the result against a severity threshold, counts per
// severity, the findings, and what was not checked.
type Report struct {
	// Result is pass, fail (a finding at or above FailOn) or error (a
	// detector failed: its findings are missing, whatever the others found).
	Result   string            `json:"result"`
	FailOn   string            `json:"fail_on"`
	Counts   map[string]int    `json:"counts"`
	Findings []finding.Finding `json:"findings"`
	// SkippedDetectors did not run: a resource they need is unavailable.
	SkippedDetectors []string `json:"skipped_detectors"`
	// FailedDetectors started and failed (a contained panic, counted in
	// driftwatch_detector_failures_total): their findings are missing, and
	// the result is error.
	FailedDetectors []string `json:"failed_detectors"`
	// Unavailable resources, as resource=reason (crd_absent, forbidden, ...).
	Unavailable []string `json:"unavailable"`
}

// Build assembles a report. failed names the detectors that failed during the
// evaluation that produced typed (collectors.Findings.Run). failOn must be a
// valid severity (finding.ParseSeverity);
// states are the informer states (for Unavailable); keep, when not nil,
// selects the findings to include (a namespace filter): counts and the result
// cover only what it keeps.
func Build(typed []finding.Finding, failed, skipped []string, states []model.ResourceState, failOn finding.Severity,
	keep func(finding.Finding) bool) Report {
	r := Report{Result: "pass", FailOn: string(failOn), Counts: map[string]int{"critical": 0, "warning": 0, "info": 0},
		Findings: []finding.Finding{}, SkippedDetectors: slices.Clone(skipped), FailedDetectors: append([]string{}, failed...),
		Unavailable: []string{}}
	for _, f := range typed {
		if keep != nil && !keep(f) {
			continue
		}
		r.Findings = append(r.Findings, f)
		r.Counts[string(f.Severity)]++
		if f.Severity.Rank() >= failOn.Rank() {
			r.Result = "fail"
		}
	}
	if len(failed) > 0 {
		r.Result = "error"
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

// Incomplete reports whether a detector failed: the findings are not all there.
func (r Report) Incomplete() bool { return len(r.FailedDetectors) > 0 }
