package collectors

// The workload_identity detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/workloadidentity.go is the detector itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descIdentityMissing = declare(finding.Family{
		Name:  "driftwatch_serviceaccount_workload_identity_missing",
		Panel: "workload identity missing",
		Lint: []finding.Rule{{ID: "workload_identity_missing",
			Why: "the ServiceAccount a SecretStore authenticates as lacks the annotation its provider needs (or, with --strict, is not in the rendering)"}},
		Commands: identityCommands,
		Help:     "1 when the ServiceAccount a SecretStore or ClusterSecretStore authenticates as is absent or lacks the provider's workload-identity annotation.",
		Labels:   []string{"namespace", "serviceaccount", "provider", "store_kind", "store_namespace", "store", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "ServiceAccount", NameLabel: "serviceaccount"},
		Class:    "Workload identity",
		Severity: finding.SevWarning,
	})
	descIdentityInfo = declare(finding.Family{
		Name:    "driftwatch_serviceaccount_workload_identity_info",
		NoPanel: "informational: the annotation is optional on GKE with Workload Identity Federation, so a cluster using it would count every GCP store's ServiceAccount as a finding; the investigation dashboard's \"Workload identity\" table lists them (finding=\"info\")",
		Lint: []finding.Rule{{ID: "workload_identity_info",
			Why: "a GCP store's ServiceAccount has no iam.gke.io/gcp-service-account annotation: optional with Workload Identity Federation"}},
		Commands: identityCommands,
		Help:     "1 when a GCP store's ServiceAccount has no iam.gke.io/gcp-service-account annotation: optional on GKE (Workload Identity Federation), informational.",
		Labels:   []string{"namespace", "serviceaccount", "provider", "store_kind", "store_namespace", "store", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "ServiceAccount", NameLabel: "serviceaccount"},
		Class:    "Workload identity",
		Severity: finding.SevInfo,
	})
)

func init() {
	register(detector{name: "workload_identity", requires: []model.Resource{model.ResServiceAccounts,
		model.ResSecretStores, model.ResClusterSecretStores}, emit: emitWorkloadIdentity,
		families: []*prometheus.Desc{descIdentityMissing, descIdentityInfo}})
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

func identityCommands(c *finding.Commands) {
	c.Confirm("the ServiceAccount's identity annotations", "kubectl -n "+c.NS()+" get serviceaccount "+c.Name()+
		` -o json | jq '.metadata.annotations // {} | with_entries(select(.key | test("eks.amazonaws.com|azure.workload.identity|iam.gke.io")))'`)
}
