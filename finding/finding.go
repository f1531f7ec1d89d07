// Package finding holds what every consumer of driftwatch's findings shares:
// severities, the declaration of a metric family (its kind, class, severity,
// the object its series are about, and what the page, `agent lint` and the
// dashboards say about it), the catalog of those declarations, and the one
// Finding type the exporter's detectors produce and `agent check`,
// /api/v1/findings, the findings page and `agent lint` read.
//
// It is a top-level package beside collectors and detect because their
// exported API (collectors.Findings.Typed) returns these types: a type of an
// internal package could not be named by a caller outside the module. It
// imports nothing of driftwatch's and nothing of Prometheus: the collectors
// package turns a Family into a Prometheus descriptor.
package finding

import (
	"fmt"
	"slices"
	"strings"
)

// Severity is what a finding asks of a person. Its values are the severity
// labels the alert rules put on their alerts: critical pages, warning goes to a
// queue, info is shown (dashboards, agent check) and never alerted.
type Severity string

// Severities, from most to least urgent.
const (
	SevCritical Severity = "critical"
	SevWarning  Severity = "warning"
	SevInfo     Severity = "info"
)

// Rank orders severities: critical 2, warning 1, info 0, unknown -1.
func (s Severity) Rank() int {
	switch s {
	case SevCritical:
		return 2
	case SevWarning:
		return 1
	case SevInfo:
		return 0
	}
	return -1
}

// ParseSeverity reads a --fail-on / ?fail_on= value.
func ParseSeverity(s string) (Severity, error) {
	if sev := Severity(s); sev.Rank() >= 0 {
		return sev, nil
	}
	return "", fmt.Errorf("%q: want critical, warning or info", s)
}

// Finding is one finding as its detector produced it: the series it exports
// (family and labels) and what the detector knew about it, value-free. The
// exporter's detectors make them (collectors.Findings.Typed); `agent check
// --output json` and /api/v1/findings print them (docs/findings-schema.md),
// the findings page shows them, `agent lint` judges them against the manifests.
type Finding struct {
	// Class and Metric are the family's class and name (Family, for JSON).
	Class    string   `json:"class"`
	Severity Severity `json:"severity"`
	Metric   string   `json:"metric"`
	Detector string   `json:"detector"`
	// Object is what the finding is about (the Secret of a missing key).
	Object Object            `json:"object"`
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"value"`
	// Evidence says, in one sentence, what the detector saw: key names,
	// conditions, managers, times, never a value.
	Evidence string `json:"evidence,omitempty"`
	// Consumers are the workloads that read the object (Secret findings).
	Consumers []Consumer `json:"consumers,omitempty"`
	// Family is the declaration of the finding's metric family.
	Family *Family `json:"-"`
}

// New returns the finding of a series of family fam (labels by name).
func New(fam *Family, detector string, labels map[string]string, value float64) Finding {
	return Finding{Class: fam.Class, Severity: fam.SeverityOf(labels), Metric: fam.Name, Detector: detector,
		Object: fam.ObjectOf(labels), Labels: labels, Value: value, Family: fam}
}

// Object names an object.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is namespace/name (name when cluster-scoped).
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// Qualified is "Kind namespace/name".
func (o Object) Qualified() string { return o.Kind + " " + o.String() }

// Consumer is a workload and how many of its running pods read an object.
type Consumer struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Pods int    `json:"pods"`
}

// Sort orders findings by severity (most urgent first), class, family,
// object and labels.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if d := b.Severity.Rank() - a.Severity.Rank(); d != 0 {
			return d
		}
		if c := strings.Compare(a.Class, b.Class); c != 0 {
			return c
		}
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		if c := strings.Compare(a.Object.String(), b.Object.String()); c != 0 {
			return c
		}
		return strings.Compare(labelKey(a), labelKey(b))
	})
}

func labelKey(f Finding) string {
	var b strings.Builder
	for _, l := range f.Family.Labels {
		b.WriteString(f.Labels[l])
		b.WriteByte(0)
	}
	return b.String()
}
