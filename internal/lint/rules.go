package lint

import (
	"github.com/driftwatch/driftwatch/finding"
)

// Severity is a finding's severity, from the catalog.
type Severity = finding.Severity

// Rule is one thing lint reports: the families declare them (finding.Family.Lint,
// next to the detector that emits the family, in collectors/); lint judges each
// against the manifests (judges).
type Rule = finding.Rule

// RuleMalformed is the rule of documents that could not be checked (exit 2).
const RuleMalformed = "malformed_document"

// RuleDetectorFailed is the rule of a detector that did not run to the end (a
// contained panic): its findings are missing, so the result is an error (exit 2).
const RuleDetectorFailed = "detector_failed"

// Rules is every rule, in the order --rules lists them: the families' rules
// in declaration order.
var Rules = finding.Rules()

// malformedRule describes documents that could not be read or decoded.
var malformedRule = Rule{ID: RuleMalformed,
	Why: "a file could not be read or a document does not parse or decode: it was not checked (exit status 2)"}

// ruleOf returns the rule a series of family with labels belongs to; false for
// families lint does not judge offline (sync health, flips, stale pods, ...:
// they need a live object's status or history, finding.Family.Offline says which).
func ruleOf(fam *finding.Family, labels map[string]string) (*Rule, bool) {
	for i := range fam.Lint {
		if r := &fam.Lint[i]; r.Matches(labels) {
			return r, true
		}
	}
	return nil, false
}
