package collectors

import (
	"slices"
	"strings"
)

// Finding is one finding as its detector produced it: the series it exports
// (family and labels) and what the detector knew about it, value-free. agent
// check, the findings page and /api/v1/findings read these.
type Finding struct {
	Family   *Family           `json:"-"`
	Detector string            `json:"detector"`
	Labels   map[string]string `json:"labels"`
	Value    float64           `json:"value"`
	Severity Severity          `json:"severity"`
	// Object is what the finding is about (the Secret of a missing key).
	Object ObjectID `json:"object"`
	// Evidence says, in one sentence, what the detector saw: key names,
	// conditions, managers, times, never a value.
	Evidence string `json:"evidence,omitempty"`
	// Consumers are the workloads that read the object (Secret findings).
	Consumers []Consumer `json:"consumers,omitempty"`
}

// Metric is the family's name.
func (f Finding) Metric() string { return f.Family.Name }

// Class is the family's failure class.
func (f Finding) Class() string { return f.Family.Class }

// ObjectID names an object.
type ObjectID struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (o ObjectID) String() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// Consumer is a workload and how many of its running pods read an object.
type Consumer struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Pods int    `json:"pods"`
}

// SortFindings orders findings by severity (most urgent first), class, family,
// object and labels.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if d := b.Severity.Rank() - a.Severity.Rank(); d != 0 {
			return d
		}
		if c := strings.Compare(a.Family.Class, b.Family.Class); c != 0 {
			return c
		}
		if c := strings.Compare(a.Family.Name, b.Family.Name); c != 0 {
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
