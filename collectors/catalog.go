package collectors

import (
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
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

// FamilyKind says what a metric family describes.
type FamilyKind string

const (
	// KindFinding: each series is a finding (a failure, a hazard).
	KindFinding FamilyKind = "finding"
	// KindObject: series describe objects (sync age, inventory, readers of a
	// Secret with a finding, compare readiness): context for findings, never
	// findings themselves.
	KindObject FamilyKind = "object"
	// KindHealth: the agent's own health.
	KindHealth FamilyKind = "health"
)

// Family is the one declaration of a metric family: everything the exporter,
// the alert-rule tests, `agent check` and the docs need to know about it.
type Family struct {
	Name   string
	Help   string
	Type   prometheus.ValueType
	Labels []string
	Kind   FamilyKind
	// Class is the failure class a finding belongs to ("Missing keys").
	Class string
	// Severity is the severity of the family's series (findings only), unless
	// SeverityBy gives another for a series.
	Severity Severity
	// SeverityBy refines the severity by the value of one label: the
	// optionality of a missing key, the cause of a truncated last-applied.
	SeverityBy *SeverityBy
	// Object says which object a series is about (for driftwatch.io/ignore):
	// nil for families about no single object.
	Object *ObjectRef
	// Restates names the finding family this one summarises or details (the
	// count form of missing keys, the pods behind a stale workload): the same
	// findings, not more of them. agent check lists the named family's.
	Restates string
	// WithFinding marks an object family whose series exist only alongside a
	// finding and clear with it (the readers of a Secret short of keys): its
	// cardinality is bounded by findings, and tests treat it as part of one.
	WithFinding bool
	// LintOnly families are judged by `agent lint` on manifests only (a Secret
	// manifest carrying data): they are not in Catalog(), the exporter never
	// describes or emits them (LintFamilies lists them).
	LintOnly bool

	// collector is the collector that emits the family: "findings" (the
	// detectors' Findings), "self" (Self) or "argocd" (ArgoCDAPI). Each
	// describes only its own.
	collector string
	desc      *prometheus.Desc
	// label positions of the object's namespace, kind and name (-1: none).
	nsAt, kindAt, nameAt int
}

// ObjectRef names the object a series is about, from its labels: the
// namespace label "namespace", a fixed Kind or one a label holds, and the label
// holding the name.
type ObjectRef struct {
	Kind      string
	KindLabel string
	NameLabel string
}

// SeverityBy maps the values of one label to a severity; values not listed
// keep the family's Severity.
type SeverityBy struct {
	Label  string
	Values map[string]Severity
}

// SeverityOf returns the severity of a series of the family with the given
// labels.
func (f *Family) SeverityOf(labels map[string]string) Severity {
	if f.SeverityBy != nil {
		if s, ok := f.SeverityBy.Values[labels[f.SeverityBy.Label]]; ok {
			return s
		}
	}
	return f.Severity
}

// Severities lists every severity a series of the family can have.
func (f *Family) Severities() []Severity {
	out := []Severity{f.Severity}
	if f.SeverityBy != nil {
		for _, s := range f.SeverityBy.Values {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b Severity) int { return b.Rank() - a.Rank() })
	return out
}

// Desc is the family's descriptor.
func (f *Family) Desc() *prometheus.Desc { return f.desc }

// catalog holds every family the findings collector emits, in declaration order.
var catalog []*Family

// Collectors of the catalog's families.
const (
	collFindings = "findings"
	collSelf     = "self"
	collArgoCD   = "argocd"
	collFlux     = "flux"
)

// declare registers a family the Findings collector emits and returns its
// descriptor.
func declare(f Family) *prometheus.Desc { return declareFor(collFindings, f) }

// declareFor registers a family emitted by the named collector.
func declareFor(collector string, f Family) *prometheus.Desc {
	f.collector = collector
	if collector != collFindings && f.Kind != KindHealth {
		panic(fmt.Sprintf("collectors: family %s of the %s collector must be health", f.Name, collector))
	}
	switch f.Kind {
	case KindFinding:
		if f.Severity.Rank() < 0 || f.Class == "" {
			panic(fmt.Sprintf("collectors: finding family %s needs a class and a severity", f.Name))
		}
	case KindObject, KindHealth:
		if f.Severity != "" || f.SeverityBy != nil {
			panic(fmt.Sprintf("collectors: %s family %s has no severity", f.Kind, f.Name))
		}
	default:
		panic(fmt.Sprintf("collectors: family %s: unknown kind %q", f.Name, f.Kind))
	}
	if f.Type == 0 {
		f.Type = prometheus.GaugeValue
	}
	f.nsAt, f.kindAt, f.nameAt = -1, -1, -1
	if o := f.Object; o != nil {
		f.nsAt = slices.Index(f.Labels, "namespace")
		f.nameAt = slices.Index(f.Labels, o.NameLabel)
		if o.KindLabel != "" {
			f.kindAt = slices.Index(f.Labels, o.KindLabel)
		}
		if f.nameAt < 0 || (o.Kind == "") == (f.kindAt < 0) {
			panic(fmt.Sprintf("collectors: family %s: object %+v does not match its labels", f.Name, *o))
		}
	}
	f.desc = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
	fam := f
	catalog = append(catalog, &fam)
	familyOf[fam.desc] = &fam
	return fam.desc
}

// Catalog returns every family the agent exports (findings, objects, its own
// health), in declaration order. Do not modify them.
func Catalog() []*Family { return slices.Clone(catalog) }

// StateOfFinding reports whether a family's series are the current state of
// findings: a finding gauge (a counter such as flips_total keeps history after
// the failure clears), or an object family that exists only with a finding.
// The end-to-end tests compare these series between runs, shards and fixes.
func (f *Family) StateOfFinding() bool {
	switch f.Kind {
	case KindFinding:
		return f.Type != prometheus.CounterValue
	case KindObject:
		return f.WithFinding
	}
	return false
}

// describe sends the descriptors of one collector's families.
func describe(collector string, ch chan<- *prometheus.Desc) {
	for _, f := range catalog {
		if f.collector == collector {
			ch <- f.desc
		}
	}
}

// Lookup returns the family of a metric name.
func Lookup(name string) (*Family, bool) {
	for _, f := range catalog {
		if f.Name == name {
			return f, true
		}
	}
	return nil, false
}

// object returns the namespace, kind and name of the object a series (label
// values in declaration order) is about; ok is false for families without one.
func (f *Family) object(values []string) (ns, kind, name string, ok bool) {
	if f.Object == nil {
		return "", "", "", false
	}
	if f.nsAt >= 0 {
		ns = values[f.nsAt]
	}
	kind = f.Object.Kind
	if f.kindAt >= 0 {
		kind = values[f.kindAt]
	}
	return ns, kind, values[f.nameAt], true
}
