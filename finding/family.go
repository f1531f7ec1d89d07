package finding

import (
	"fmt"
	"slices"
)

// Kind says what a metric family describes.
type Kind string

const (
	// KindFinding: each series is a finding (a failure, a hazard).
	KindFinding Kind = "finding"
	// KindObject: series describe objects (sync age, inventory, readers of a
	// Secret with a finding, compare readiness): context for findings, never
	// findings themselves.
	KindObject Kind = "object"
	// KindHealth: the agent's own health.
	KindHealth Kind = "health"
)

// ValueType is the Prometheus type of a family's series.
type ValueType int

const (
	// Gauge (the default).
	Gauge ValueType = iota
	// Counter: a count since the agent started.
	Counter
)

// Family is the one declaration of a metric family: everything the exporter,
// the alert-rule tests, `agent check`, the findings page, `agent lint`, the
// docs and the dashboards need to know about it. Each is declared once, in the
// collectors file of the detector that emits it (collectors/<detector>.go).
type Family struct {
	Name   string
	Help   string
	Type   ValueType
	Labels []string
	Kind   Kind
	// Class is the failure class a finding belongs to ("Missing keys").
	Class string
	// Severity is the severity of the family's series (findings only), unless
	// SeverityBy gives another for a series.
	Severity Severity
	// SeverityBy refines the severity by the value of one label: the
	// optionality of a missing key, the cause of a truncated last-applied.
	SeverityBy *SeverityBy
	// Values says what each value of one label means (the effect of an Argo
	// CD ignore-list trap, the reason kustomize-controller skips an object):
	// the one text of each value, which the detector's evidence and `agent
	// lint`'s message both read (ValueText).
	Values *ValueTexts
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
	// Detector is the detector that emits the family (its registry name, the
	// detector label, the name driftwatch.io/ignore takes); set when the
	// detector is registered, declared for lint-only families.
	Detector string

	// What the page, `agent check` and `agent lint` say about
	// a finding family (TestEveryFindingFamilyDeclaresItsText holds every
	// finding family that restates none to having them):

	// Commands returns the kubectl commands that confirm and fix one of the
	// family's findings (Commands.For).
	Commands CommandsFunc
	// Lint lists the `agent lint` rules of the family; nil when lint cannot
	// judge it offline (it needs a live status or history), which Offline
	// says.
	Lint []Rule
	// Offline says why lint does not judge the family, when Lint is empty.
	Offline string
	// Path is what a finding of the family marks on the delivery-path picture
	// of its Secret (the page's /secret/NS/NAME): "" nothing of its own.
	Path PathMark

	// Panel is the family's class on the overview dashboard (the title its
	// series take in the "Findings by class" and "Findings by namespace"
	// panels, such as "missing keys"): each series above 0 is an object with
	// a finding of that class. A finding family that restates none declares
	// it, or a family restating it does (the count form of missing keys, which
	// also exists with --no-key-label), or NoPanel says why it has none
	// (TestEveryFindingFamilyHasADashboardPanel). dashboards/panels.txt is
	// generated from it.
	Panel string
	// NoPanel says why a finding family has no overview class (a counter of
	// history, information that is no failure).
	NoPanel string

	// label positions of the object's namespace, kind and name (-1: none).
	nsAt, kindAt, nameAt int
}

// PathMark is what a finding marks on its Secret's delivery-path picture.
type PathMark string

const (
	// PathMissingKey: the key label names a key the Secret lacks.
	PathMissingKey PathMark = "missing_key"
	// PathAbsent: the Secret does not exist.
	PathAbsent PathMark = "absent"
)

// ObjectRef names the object a series is about, from its labels: the
// namespace label "namespace", a fixed Kind or one a label holds, and the label
// holding the name.
type ObjectRef struct {
	Kind      string
	KindLabel string
	// Kinds lists every kind KindLabel may hold (required with it): each is
	// an object kind the model resolves for driftwatch.io/ignore
	// (model.View.Meta), which a test holds every declared kind to.
	Kinds     []string
	NameLabel string
}

// AllKinds lists the kinds of the objects the family's series are about:
// Kind, or the declared Kinds of KindLabel.
func (o *ObjectRef) AllKinds() []string {
	if o.Kind != "" {
		return []string{o.Kind}
	}
	return o.Kinds
}

// SeverityBy maps the values of one label to a severity; values not listed
// keep the family's Severity.
type SeverityBy struct {
	Label  string
	Values map[string]Severity
}

// ValueTexts is the text of each value of one label: a clause saying what a
// series with that value means, declared once with the family.
type ValueTexts struct {
	Label string
	Text  map[string]string
}

// ValueText returns the text of the value the series with the given labels
// has for the family's Values label ("" when the family declares none, or
// none for that value).
func (f *Family) ValueText(labels map[string]string) string {
	if f.Values == nil {
		return ""
	}
	return f.Values.Text[labels[f.Values.Label]]
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

// StateOfFinding reports whether a family's series are the current state of
// findings: a finding gauge (a counter such as flips_total keeps history after
// the failure clears), or an object family that exists only with a finding.
// The end-to-end tests compare these series between runs, shards and fixes.
func (f *Family) StateOfFinding() bool {
	switch f.Kind {
	case KindFinding:
		return f.Type != Counter
	case KindObject:
		return f.WithFinding
	}
	return false
}

// Listed reports whether the family's series are findings `agent check`, the
// page and lint list: a finding family that restates no other.
func (f *Family) Listed() bool { return f.Kind == KindFinding && f.Restates == "" }

// ObjectAt returns the namespace, kind and name of the object a series (label
// values in declaration order) is about; ok is false for families without one.
func (f *Family) ObjectAt(values []string) (o Object, ok bool) {
	if f.Object == nil {
		return Object{}, false
	}
	if f.nsAt >= 0 {
		o.Namespace = values[f.nsAt]
	}
	o.Kind = f.Object.Kind
	if f.kindAt >= 0 {
		o.Kind = values[f.kindAt]
	}
	o.Name = values[f.nameAt]
	return o, true
}

// ObjectOf is ObjectAt for labels by name (the zero Object without one).
func (f *Family) ObjectOf(labels map[string]string) Object {
	if f.Object == nil {
		return Object{}
	}
	kind := f.Object.Kind
	if f.Object.KindLabel != "" {
		kind = labels[f.Object.KindLabel]
	}
	return Object{Kind: kind, Namespace: labels["namespace"], Name: labels[f.Object.NameLabel]}
}

// NamesObject reports whether label l of the family names its object (the
// namespace, the kind or the name label), so a listing need not repeat it.
func (f *Family) NamesObject(l string) bool {
	if f.Object == nil {
		return false
	}
	return l == "namespace" || l == f.Object.KindLabel || l == f.Object.NameLabel
}

var (
	catalog     []*Family
	lintCatalog []*Family
)

// Classes are the failure classes a finding family may name (Family.Class),
// in the order the docs, `agent check`'s reference and the overview
// dashboard list them: the classes that page first, then the warnings, then
// info. A finding family naming a class not listed here does not declare.
var Classes = []string{
	// pages
	"Missing keys", "Ready but short", "Flipping values", "Truncated last-applied",
	"Argo CD ignore-list trap", "GitOps delivery", "Flux never-updated objects", "Flux ignore trap",
	// warnings
	"Argo CD not converging", "Stale pods", "Sync health", "Flux substitution", "Adoption safety",
	"Values in Git", "Workload identity",
	// info
	"Byte-identical compare",
}

// ClassRank is a class's place in Classes (-1: not a class).
func ClassRank(class string) int { return slices.Index(Classes, class) }

// Declare validates a family, adds it to the catalog (or to the lint-only
// families) and returns it. It panics on an inconsistent declaration: they
// are package variables, so the binary does not start with one.
func Declare(f Family) *Family {
	switch f.Kind {
	case KindFinding:
		if f.Severity.Rank() < 0 || f.Class == "" {
			panic(fmt.Sprintf("finding: finding family %s needs a class and a severity", f.Name))
		}
		if ClassRank(f.Class) < 0 {
			panic(fmt.Sprintf("finding: finding family %s: class %q is not in finding.Classes", f.Name, f.Class))
		}
	case KindObject, KindHealth:
		if f.Severity != "" || f.SeverityBy != nil {
			panic(fmt.Sprintf("finding: %s family %s has no severity", f.Kind, f.Name))
		}
	default:
		panic(fmt.Sprintf("finding: family %s: unknown kind %q", f.Name, f.Kind))
	}
	if f.LintOnly && (f.Kind != KindFinding || f.Detector == "") {
		panic(fmt.Sprintf("finding: lint family %s needs kind finding and a detector", f.Name))
	}
	if v := f.Values; v != nil {
		if !slices.Contains(f.Labels, v.Label) || len(v.Text) == 0 {
			panic(fmt.Sprintf("finding: family %s: value texts of %q, which is not a label of it or has no text", f.Name, v.Label))
		}
		for val, t := range v.Text {
			if val == "" || t == "" {
				panic(fmt.Sprintf("finding: family %s: label %s: an empty value or text", f.Name, v.Label))
			}
		}
		if sb := f.SeverityBy; sb != nil && sb.Label == v.Label {
			for val := range sb.Values {
				if _, ok := v.Text[val]; !ok {
					panic(fmt.Sprintf("finding: family %s: %s=%q has a severity and no text", f.Name, v.Label, val))
				}
			}
		}
	}
	if _, dup := lookup(f.Name); dup {
		panic(fmt.Sprintf("finding: family %s declared twice", f.Name))
	}
	f.nsAt, f.kindAt, f.nameAt = -1, -1, -1
	if o := f.Object; o != nil {
		f.nsAt = slices.Index(f.Labels, "namespace")
		f.nameAt = slices.Index(f.Labels, o.NameLabel)
		if o.KindLabel != "" {
			f.kindAt = slices.Index(f.Labels, o.KindLabel)
		}
		if f.nameAt < 0 || (o.Kind == "") == (f.kindAt < 0) {
			panic(fmt.Sprintf("finding: family %s: object %+v does not match its labels", f.Name, *o))
		}
		if (f.kindAt >= 0) != (len(o.Kinds) > 0) {
			panic(fmt.Sprintf("finding: family %s: object %+v: a kind label needs the Kinds it may hold, a fixed Kind none", f.Name, *o))
		}
	}
	fam := &f
	for i := range fam.Lint {
		r := &fam.Lint[i]
		r.family = fam
		if r.Why == "" && r.Label != "" && f.Values != nil && r.Label == f.Values.Label {
			r.Why = f.Values.Text[r.Value] // the text of the value the rule narrows the family to
		}
		if r.Why == "" {
			panic(fmt.Sprintf("finding: family %s: lint rule %s says no why (nor its label value's text)", f.Name, r.ID))
		}
	}
	if f.LintOnly {
		lintCatalog = append(lintCatalog, fam)
	} else {
		catalog = append(catalog, fam)
	}
	return fam
}

// declared panics when no family was declared: the families are declared
// by the collectors package (each next to its detector), so a program that
// reads the catalog without linking collectors would find nothing and, say,
// filter every finding out. Import collectors (blank, if need be).
func declared() {
	if len(catalog) == 0 {
		panic("finding: the catalog is empty: the program does not link github.com/driftwatch/driftwatch/collectors, which declares the families")
	}
}

// Catalog returns every family the agent exports (findings, objects, its own
// health), in declaration order. Do not modify them.
func Catalog() []*Family { declared(); return slices.Clone(catalog) }

// LintFamilies returns the lint-only families. Do not modify them.
func LintFamilies() []*Family { declared(); return slices.Clone(lintCatalog) }

// Lookup returns the exported family of a metric name.
func Lookup(name string) (*Family, bool) {
	declared()
	for _, f := range catalog {
		if f.Name == name {
			return f, true
		}
	}
	return nil, false
}

// LookupAny returns the family of a metric name, exported or lint-only.
func LookupAny(name string) (*Family, bool) {
	declared()
	return lookup(name)
}

func lookup(name string) (*Family, bool) {
	for _, fs := range [][]*Family{catalog, lintCatalog} {
		for _, f := range fs {
			if f.Name == name {
				return f, true
			}
		}
	}
	return nil, false
}
