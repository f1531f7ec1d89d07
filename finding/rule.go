package finding

// Rule is one thing `agent lint` reports: a finding family (the declaration
// the exporter and `agent check` use), narrowed to one value of a label where
// a family holds several rules (the adoption-safety reasons). A family
// declares its rules; internal/lint judges each against the manifests.
type Rule struct {
	// ID names the rule in every output (SARIF ruleId, JSON rule, --rules).
	ID string
	// Label/Value narrow the family to the rule.
	Label, Value string
	// Why is the one-line reason the rule exists; for a rule narrowed to a
	// label value, the value's text (Family.Values) when it leaves Why empty.
	Why string
	// Strict: reported only with --strict (otherwise an assumption in -v).
	Strict bool

	family *Family
}

// Family is the family that declares the rule (nil for lint's own rule of
// malformed documents).
func (r *Rule) Family() *Family { return r.family }

// Detector is the name driftwatch.io/ignore silences the rule with: its
// family's detector.
func (r *Rule) Detector() string {
	if r.family == nil {
		return ""
	}
	return r.family.Detector
}

// Matches reports whether a series of the rule's family with labels is the
// rule's.
func (r *Rule) Matches(labels map[string]string) bool {
	return r.Label == "" || labels[r.Label] == r.Value
}

// Rules lists every lint rule the families declare, exporter families first,
// in declaration order.
func Rules() []*Rule {
	declared()
	var out []*Rule
	for _, fs := range [][]*Family{catalog, lintCatalog} {
		for _, f := range fs {
			for i := range f.Lint {
				out = append(out, &f.Lint[i])
			}
		}
	}
	return out
}

// FamilyName is the name of the rule's family ("" without one).
func (r *Rule) FamilyName() string {
	if r.family == nil {
		return ""
	}
	return r.family.Name
}

// DefaultSeverity is the severity of the rule's findings unless a label
// refines it (critical for a rule without a family: documents that could not
// be checked).
func (r *Rule) DefaultSeverity() Severity {
	if r.family == nil {
		return SevCritical
	}
	if r.Label != "" {
		return r.family.SeverityOf(map[string]string{r.Label: r.Value})
	}
	return r.family.Severity
}

// Severities lists every severity the rule's findings can have.
func (r *Rule) Severities() []Severity {
	if r.family == nil || r.Label != "" {
		return []Severity{r.DefaultSeverity()}
	}
	return r.family.Severities()
}
