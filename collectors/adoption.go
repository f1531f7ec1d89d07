package collectors

// The adoption detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/adoption.go is the detector itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descUnsafe = declare(finding.Family{
		Name:  "driftwatch_externalsecret_unsafe",
		Panel: "unsafe ExternalSecrets",
		Lint: []finding.Rule{
			// Why is the reason's text (Values) unless lint judges an offline
			// form of it (what the rendering shows instead of the live Secret).
			{ID: detect.UnsafeImplicitCreationPolicy, Label: "reason", Value: detect.UnsafeImplicitCreationPolicy},
			{ID: detect.UnsafeOwnerOverExisting, Label: "reason", Value: detect.UnsafeOwnerOverExisting,
				Why: "an ExternalSecret with creationPolicy Owner writes a Secret the rendering also defines with data: ESO takes it over and rewrites it, the next apply of the manifest rewrites it back, and deleting the ExternalSecret garbage-collects it"},
			{ID: detect.UnsafeDeleteWithMerge, Label: "reason", Value: detect.UnsafeDeleteWithMerge},
			{ID: detect.UnsafeUnexpectedKeys, Label: "reason", Value: detect.UnsafeUnexpectedKeys,
				Why: "an ExternalSecret with dataFrom.find writes a Secret whose manifest holds keys outside its declared driftwatch.io/expected-keys"},
		},
		Values: &finding.ValueTexts{Label: "reason", Text: map[string]string{
			detect.UnsafeImplicitCreationPolicy: "an ExternalSecret without spec.target.creationPolicy gets Owner: ESO takes over an existing Secret of that name, and deleting the ExternalSecret garbage-collects it",
			detect.UnsafeOwnerOverExisting:      "creationPolicy Owner over a Secret that existed before it, not taken over yet: ESO will delete the keys it does not manage",
			detect.UnsafeDeleteWithMerge:        "deletionPolicy Delete with creationPolicy Merge: a key that disappears from the store is deleted from a Secret ESO does not own",
			detect.UnsafeUnexpectedKeys:         "dataFrom.find brought keys outside the declared driftwatch.io/expected-keys",
		}},
		Commands: unsafeCommands,
		Help: "1 when an ExternalSecret's configuration can destroy or leak data on adoption or deletion. " +
			"reason: implicit_creation_policy, owner_over_existing, delete_with_merge, unexpected_keys.",
		Labels:   []string{"namespace", "externalsecret", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Adoption safety",
		Severity: finding.SevWarning,
	})
	descDuplicate = declare(finding.Family{
		Name:  "driftwatch_secret_duplicate_credentials",
		Panel: "duplicate credentials",
		Lint: []finding.Rule{{ID: "duplicate_credentials",
			Why: "two Secret manifests of a namespace hold exactly the same data (compared by keyed fingerprint, never by value): a forgotten copy that will not rotate"}},
		Commands: duplicateCommands,
		Help:     "1 when a Secret holds exactly the same data as another Secret of its namespace (duplicate_of, the first in lexical order).",
		Labels:   []string{"namespace", "secret", "duplicate_of"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Adoption safety",
		Severity: finding.SevWarning,
	})
	descLastAppliedData = declare(finding.Family{
		Name:  "driftwatch_secret_last_applied_data",
		Panel: "data in last-applied",
		Lint: []finding.Rule{{ID: "last_applied_data",
			Why: "a Secret's kubectl.kubernetes.io/last-applied-configuration annotation carries a copy of its data: a second copy of every value that never rotates"}},
		Commands:   lastAppliedDataCommands,
		Help:       "1 when a Secret's last-applied-configuration annotation holds a copy of its data; stale=\"true\" when the copy differs from live.",
		Labels:     []string{"namespace", "secret", "stale"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Adoption safety",
		Severity:   finding.SevInfo,
		SeverityBy: &finding.SeverityBy{Label: "stale", Values: map[string]finding.Severity{"true": finding.SevWarning}},
	})
)

func init() {
	// adoption needs Secrets; its ExternalSecret rules also need ExternalSecrets
	// and stay silent without them (duplicates and last-applied data still run).
	register(detector{name: "adoption", requires: []model.Resource{model.ResSecrets}, emit: emitAdoption, perNamespace: true,
		families: []*prometheus.Desc{descUnsafe, descDuplicate, descLastAppliedData}})
}

func emitAdoption(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, u := range detect.UnsafeExternalSecrets(v, a) {
		if f := e.gauge(descUnsafe, 1, u.Namespace, u.ExternalSecret, u.Reason); f != nil {
			f.Evidence = f.Family.ValueText(f.Labels) // the reason's text
			if u.Reason == detect.UnsafeUnexpectedKeys {
				f.Evidence += fmt.Sprintf(": %d key(s)", u.Keys)
			}
		}
	}
	for _, d := range detect.DuplicateCredentials(v, a) {
		if f := e.gauge(descDuplicate, 1, d.Namespace, d.Secret, d.DuplicateOf); f != nil {
			f.Evidence = "the same key names, lengths and keyed fingerprints as Secret " + d.DuplicateOf
			f.Consumers = readers(v, a, d.Namespace, d.Secret)
		}
	}
	for _, l := range detect.LastAppliedDataSecrets(v, a) {
		stale := "false"
		if l.Stale {
			stale = "true"
		}
		if f := e.gauge(descLastAppliedData, 1, l.Namespace, l.Secret, stale); f != nil {
			f.Evidence = "the kubectl.kubernetes.io/last-applied-configuration annotation carries data values"
			if l.Stale {
				f.Evidence += ", and they differ from the live ones (by fingerprint)"
			}
		}
	}
}

func unsafeCommands(c *finding.Commands) {
	c.ExternalSecretConditions()
	c.Confirm("its target and policies", "kubectl -n "+c.NS()+" get externalsecret "+c.Name()+` -o json | jq '.spec.target'`)
}

func lastAppliedDataCommands(c *finding.Commands) {
	ns, name := c.NS(), c.Name()
	c.Confirm("the key names the annotation carries", "kubectl -n "+ns+" get secret "+name+
		` -o json | jq -r '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] // "{}" | fromjson | {data: (.data // {} | keys), stringData: (.stringData // {} | keys)}'`)
	c.Fix("remove the data-carrying annotation", "kubectl -n "+ns+" annotate secret "+name+" kubectl.kubernetes.io/last-applied-configuration-")
}

func duplicateCommands(c *finding.Commands) {
	c.Confirm("compare the two Secrets key by key (verdicts only)", "kubectl driftwatch compare "+c.NS()+"/"+c.Name()+" "+c.NS()+"/"+c.L("duplicate_of"))
}
