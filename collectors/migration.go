package collectors

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Migration and identity findings: continuous compare of declared pairs,
// adoption safety, workload identity.
var (
	descCompareMismatch = declare(Family{
		Name: "driftwatch_compare_mismatch",
		Help: "1 for each key of a compare pair (driftwatch.io/compare-with) that does not match; key is empty when a whole Secret is absent " +
			"(with --no-key-label: the number of keys per verdict and hint, key empty). " +
			"verdict: mismatch, missing_from_store, only_in_store, live_secret_absent, store_secret_absent; hint: whitespace or empty.",
		Labels:   []string{"namespace", "secret", "compare_with", "key", "verdict", "hint"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Byte-identical compare",
		Severity: SevInfo,
	})
	descCompareReady = declare(Family{
		Name:   "driftwatch_compare_ready",
		Help:   "1 when both Secrets of a compare pair exist and every key matches (safe to adopt), else 0.",
		Labels: []string{"namespace", "secret", "compare_with"},
		Kind:   KindObject,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descUnsafe = declare(Family{
		Name: "driftwatch_externalsecret_unsafe",
		Help: "1 when an ExternalSecret's configuration can destroy or leak data on adoption or deletion. " +
			"reason: implicit_creation_policy, owner_over_existing, delete_with_merge, unexpected_keys.",
		Labels:   []string{"namespace", "externalsecret", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Adoption safety",
		Severity: SevWarning,
	})
	descDuplicate = declare(Family{
		Name:     "driftwatch_secret_duplicate_credentials",
		Help:     "1 when a Secret holds exactly the same data as another Secret of its namespace (duplicate_of, the first in lexical order).",
		Labels:   []string{"namespace", "secret", "duplicate_of"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Adoption safety",
		Severity: SevWarning,
	})
	descLastAppliedData = declare(Family{
		Name:       "driftwatch_secret_last_applied_data",
		Help:       "1 when a Secret's last-applied-configuration annotation holds a copy of its data; stale=\"true\" when the copy differs from live.",
		Labels:     []string{"namespace", "secret", "stale"},
		Kind:       KindFinding,
		Object:     &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Adoption safety",
		Severity:   SevInfo,
		SeverityBy: &SeverityBy{Label: "stale", Values: map[string]Severity{"true": SevWarning}},
	})
	descIdentityMissing = declare(Family{
		Name:     "driftwatch_serviceaccount_workload_identity_missing",
		Help:     "1 when the ServiceAccount a SecretStore or ClusterSecretStore authenticates as is absent or lacks the provider's workload-identity annotation.",
		Labels:   []string{"namespace", "serviceaccount", "provider", "store_kind", "store_namespace", "store", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "ServiceAccount", NameLabel: "serviceaccount"},
		Class:    "Workload identity",
		Severity: SevWarning,
	})
	descIdentityInfo = declare(Family{
		Name:     "driftwatch_serviceaccount_workload_identity_info",
		Help:     "1 when a GCP store's ServiceAccount has no iam.gke.io/gcp-service-account annotation: optional on GKE (Workload Identity Federation), informational.",
		Labels:   []string{"namespace", "serviceaccount", "provider", "store_kind", "store_namespace", "store", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "ServiceAccount", NameLabel: "serviceaccount"},
		Class:    "Workload identity",
		Severity: SevInfo,
	})
)

func init() {
	register(
		detector{name: "compare", requires: []model.Resource{model.ResSecrets}, emit: emitCompare, perNamespace: true},
		// adoption needs Secrets; its ExternalSecret rules also need ExternalSecrets
		// and stay silent without them (duplicates and last-applied data still run).
		detector{name: "adoption", requires: []model.Resource{model.ResSecrets}, emit: emitAdoption, perNamespace: true},
		detector{name: "workload_identity", requires: []model.Resource{model.ResServiceAccounts,
			model.ResSecretStores, model.ResClusterSecretStores}, emit: emitWorkloadIdentity},
	)
}

func emitCompare(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, p := range detect.ComparePairs(v, a) {
		e.gauge(descCompareReady, b2f(p.Ready), p.Namespace, p.Secret, p.CompareWith)
		if !e.cfg.NoKeyLabel {
			for _, k := range p.Keys {
				if f := e.gauge(descCompareMismatch, 1, p.Namespace, p.Secret, p.CompareWith, k.Key, k.Verdict, k.Hint); f != nil {
					f.Evidence = fmt.Sprintf("compared with %s: key %s %s %s", p.CompareWith, k.Key, k.Verdict, k.Hint)
				}
			}
			continue
		}
		// Without key names: the number of keys per verdict and hint, key "".
		type vh struct{ verdict, hint string }
		counts := map[vh]int{}
		var order []vh
		for _, k := range p.Keys {
			x := vh{k.Verdict, k.Hint}
			if counts[x] == 0 {
				order = append(order, x)
			}
			counts[x]++
		}
		for _, x := range order {
			e.gauge(descCompareMismatch, float64(counts[x]), p.Namespace, p.Secret, p.CompareWith, "", x.verdict, x.hint)
		}
	}
}

func emitAdoption(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, u := range detect.UnsafeExternalSecrets(v, a) {
		if f := e.gauge(descUnsafe, 1, u.Namespace, u.ExternalSecret, u.Reason); f != nil {
			f.Evidence = map[string]string{
				detect.UnsafeImplicitCreationPolicy: "what was applied sets no spec.target.creationPolicy: Owner by default, so deleting the ExternalSecret deletes the Secret",
				detect.UnsafeOwnerOverExisting:      "creationPolicy Owner over a Secret that existed before it, not taken over yet: ESO will delete the keys it does not manage",
				detect.UnsafeDeleteWithMerge:        "deletionPolicy Delete with creationPolicy Merge: a key gone from the store is deleted from a Secret ESO does not own",
				detect.UnsafeUnexpectedKeys:         fmt.Sprintf("dataFrom.find brought %d key(s) outside the declared driftwatch.io/expected-keys", u.Keys),
			}[u.Reason]
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

func emitWorkloadIdentity(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, p := range detect.WorkloadIdentity(v, a, e.cfg.ESOServiceAccount) {
		d := descIdentityMissing
		if p.Info {
			d = descIdentityInfo
		}
		if f := e.gauge(d, 1, p.Namespace, p.ServiceAccount, p.Provider, p.StoreKind, p.StoreNamespace, p.Store, p.Reason); f != nil {
			if p.Reason == detect.IdentitySAAbsent {
				f.Evidence = fmt.Sprintf("%s %s authenticates to %s as ServiceAccount %s/%s, which does not exist", p.StoreKind, p.Store, p.Provider, p.Namespace, p.ServiceAccount)
			} else {
				f.Evidence = fmt.Sprintf("%s %s authenticates to %s as ServiceAccount %s/%s, which lacks the provider's workload-identity annotation", p.StoreKind, p.Store, p.Provider, p.Namespace, p.ServiceAccount)
			}
		}
	}
}
