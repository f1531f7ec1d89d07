package lint

import (
	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/detect"
)

// Severity is a finding's severity, from the catalog.
type Severity = collectors.Severity

// Rule is one thing lint reports: a finding family of the catalog (the same
// declaration the exporter and `agent check` use), narrowed to one value of a
// label where a family holds several rules (the adoption-safety reasons).
type Rule struct {
	// ID names the rule in every output (SARIF ruleId, JSON rule, --rules).
	ID string
	// Family is the catalog family; Label/Value narrow it.
	Family       string
	Label, Value string
	// Detector is the name driftwatch.io/ignore silences the rule with.
	Detector string
	// Why is the one-line reason the rule exists.
	Why string
	// Strict: reported only with --strict (otherwise an assumption in -v).
	Strict bool
}

// RuleMalformed is the rule of documents that could not be checked (exit 2).
const RuleMalformed = "malformed_document"

// Rules is every rule, in the order --rules lists them.
var Rules = []Rule{
	{ID: "missing_key", Family: "driftwatch_secret_missing_key", Detector: detect.DetectorMissingKeys,
		Why: "a workload (or an expected-keys annotation) reads a key that neither the Secret nor the ExternalSecret of the rendering provides: the pod fails to start, or starts without it when the reference is optional"},
	{ID: "absent_secret", Family: "driftwatch_secret_absent", Detector: detect.DetectorMissingKeys, Strict: true,
		Why: "a workload reads a Secret that is not in the rendering and that no ExternalSecret of it writes (only with --strict: otherwise it is assumed to exist)"},
	{ID: detect.UnsafeImplicitCreationPolicy, Family: "driftwatch_externalsecret_unsafe", Label: "reason", Value: detect.UnsafeImplicitCreationPolicy, Detector: "adoption",
		Why: "an ExternalSecret without spec.target.creationPolicy gets Owner: ESO takes over an existing Secret of that name, and deleting the ExternalSecret garbage-collects it"},
	{ID: detect.UnsafeOwnerOverExisting, Family: "driftwatch_externalsecret_unsafe", Label: "reason", Value: detect.UnsafeOwnerOverExisting, Detector: "adoption",
		Why: "an ExternalSecret with creationPolicy Owner writes a Secret the rendering also defines with data: ESO takes it over and rewrites it, the next apply of the manifest rewrites it back, and deleting the ExternalSecret garbage-collects it"},
	{ID: detect.UnsafeDeleteWithMerge, Family: "driftwatch_externalsecret_unsafe", Label: "reason", Value: detect.UnsafeDeleteWithMerge, Detector: "adoption",
		Why: "deletionPolicy Delete with creationPolicy Merge: a key that disappears from the store is deleted from a Secret ESO does not own"},
	{ID: detect.UnsafeUnexpectedKeys, Family: "driftwatch_externalsecret_unsafe", Label: "reason", Value: detect.UnsafeUnexpectedKeys, Detector: "adoption",
		Why: "an ExternalSecret with dataFrom.find writes a Secret whose manifest holds keys outside its declared driftwatch.io/expected-keys"},
	{ID: "duplicate_credentials", Family: "driftwatch_secret_duplicate_credentials", Detector: "adoption",
		Why: "two Secret manifests of a namespace hold exactly the same data (compared by keyed fingerprint, never by value): a forgotten copy that will not rotate"},
	{ID: "last_applied_data", Family: "driftwatch_secret_last_applied_data", Detector: "adoption",
		Why: "a Secret's kubectl.kubernetes.io/last-applied-configuration annotation carries a copy of its data: a second copy of every value that never rotates"},
	{ID: "data_in_manifest", Family: collectors.LintSecretDataInManifest.Name, Detector: "data_in_manifest",
		Why: "a Secret manifest carries data or stringData: the values are in Git (or in whatever rendered the manifest)"},
	{ID: "argocd_ignore_list_trap", Family: "driftwatch_argocd_ignore_list_trap", Detector: "argocd_ignore_trap",
		Why: "an Argo CD Application's ignoreDifferences reaches into a list: with RespectIgnoreDifferences every sync rebuilds the list from live, without it new entries never show as OutOfSync"},
	{ID: "flux_ignore_trap", Family: "driftwatch_flux_ignore_trap", Detector: detect.DetectorFluxIgnoreTrap,
		Why: "a Flux Kustomization's spec.ignore covers a whole Secret data map or ExternalSecret spec.data: kustomize-controller applies live's value for it, so entries added in Git never ship"},
	{ID: "flux_never_updated", Family: collectors.LintFluxNeverUpdatedInManifest.Name, Detector: detect.DetectorFluxNeverUpdated,
		Why: "a Secret or ExternalSecret manifest carries kustomize.toolkit.fluxcd.io/ssa: IfNotPresent (or ssa: Ignore, reconcile: disabled): kustomize-controller never patches it, so keys or entries added to it in Git later never ship while the Kustomization reports the revision applied"},
	{ID: "workload_identity_missing", Family: "driftwatch_serviceaccount_workload_identity_missing", Detector: "workload_identity",
		Why: "the ServiceAccount a SecretStore authenticates as lacks the annotation its provider needs (or, with --strict, is not in the rendering)"},
	{ID: "workload_identity_info", Family: "driftwatch_serviceaccount_workload_identity_info", Detector: "workload_identity",
		Why: "a GCP store's ServiceAccount has no iam.gke.io/gcp-service-account annotation: optional with Workload Identity Federation"},
}

// malformedRule describes documents that could not be read or decoded.
var malformedRule = Rule{ID: RuleMalformed,
	Why: "a file could not be read or a document does not parse or decode: it was not checked (exit status 2)"}

// ruleByID returns a rule by ID.
func ruleByID(id string) (*Rule, bool) {
	for i := range Rules {
		if Rules[i].ID == id {
			return &Rules[i], true
		}
	}
	if id == RuleMalformed {
		return &malformedRule, true
	}
	return nil, false
}

// ruleOf returns the rule a series of family with labels belongs to; false for
// families lint does not judge offline (sync health, flips, stale pods, ...:
// they need a live object's status or history).
func ruleOf(family string, labels map[string]string) (*Rule, bool) {
	for i := range Rules {
		r := &Rules[i]
		if r.Family == family && (r.Label == "" || labels[r.Label] == r.Value) {
			return r, true
		}
	}
	return nil, false
}

// FamilyOf is the catalog declaration of a rule (nil for malformed_document).
func (r *Rule) FamilyOf() *collectors.Family {
	f, _ := collectors.LookupAny(r.Family)
	return f
}

// DefaultSeverity is the severity of the rule's series unless a label refines
// it (critical for malformed documents).
func (r *Rule) DefaultSeverity() Severity {
	f := r.FamilyOf()
	if f == nil {
		return collectors.SevCritical
	}
	if r.Label != "" {
		return f.SeverityOf(map[string]string{r.Label: r.Value})
	}
	return f.Severity
}

// Severities lists every severity the rule's findings can have.
func (r *Rule) Severities() []Severity {
	f := r.FamilyOf()
	if f == nil || r.Label != "" {
		return []Severity{r.DefaultSeverity()}
	}
	return f.Severities()
}
