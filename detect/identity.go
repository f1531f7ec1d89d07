package detect

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// Workload-identity annotations of a ServiceAccount.
const (
	AnnAWSRoleARN     = "eks.amazonaws.com/role-arn"
	AnnAzureClientID  = "azure.workload.identity/client-id"
	AnnGKEServiceAcct = "iam.gke.io/gcp-service-account"
)

// Workload-identity reasons.
const (
	IdentitySAAbsent         = "sa_absent"
	IdentityAnnotationAbsent = "annotation_missing"
)

// DefaultESOServiceAccount is the ServiceAccount of the ESO controller in the
// upstream Helm chart: ambient auth runs as it.
var DefaultESOServiceAccount = model.Ref{Namespace: "external-secrets", Name: "external-secrets"}

// IdentityProblem is a ServiceAccount a store authenticates as that cannot work
// (Info false), or that lacks an optional annotation (Info true: GKE, where
// Workload Identity Federation can grant the Kubernetes SA directly).
type IdentityProblem struct {
	Namespace      string // the ServiceAccount's
	ServiceAccount string
	Provider       string
	StoreKind      string
	StoreNamespace string // "" for a ClusterSecretStore
	Store          string
	Reason         string
	Info           bool
}

// WorkloadIdentity resolves, for every SecretStore and ClusterSecretStore, the
// ServiceAccount its provider authenticates as and checks it:
//
//   - the store's serviceAccountRef (jwt / workloadIdentity auth). For a
//     SecretStore the SA is always in the store's namespace (ESO ignores a
//     namespace in the ref). A ClusterSecretStore ref without a namespace
//     resolves to the namespace of each ExternalSecret that uses the store: it is
//     skipped here rather than guessed;
//   - ambient auth (AWS without auth, Azure WorkloadIdentity without a ref, GCP
//     without auth): the ESO controller's own SA, eso (DefaultESOServiceAccount
//     when zero). If the agent does not watch the controller's namespace, that SA
//     reads as absent: set the flag or watch that namespace.
//
// Rules: an SA that does not exist is sa_absent for every provider with a
// serviceAccountRef and for aws/azurekv/gcpsm ambient auth. AWS (jwt or ambient)
// needs eks.amazonaws.com/role-arn; Azure (workload identity) needs
// azure.workload.identity/client-id unless the store sets a clientId; GCP
// (workload identity or ambient) without iam.gke.io/gcp-service-account is
// reported with Info set, not as a finding. Static credentials, managed
// identity and unknown auth are not judged.
func WorkloadIdentity(v model.View, avail model.Availability, eso model.Ref) []IdentityProblem {
	if !avail.All(model.ResServiceAccounts, model.ResSecretStores, model.ResClusterSecretStores) {
		return nil
	}
	if eso.Name == "" {
		eso = DefaultESOServiceAccount
	}
	var out []IdentityProblem
	for _, st := range v.Stores() {
		if st.DecodeErr != "" {
			continue
		}
		var sa model.Ref
		switch {
		case st.AuthSA != nil:
			sa = *st.AuthSA
			if st.StoreKind != "ClusterSecretStore" {
				sa.Namespace = st.Namespace
			}
			if sa.Namespace == "" {
				continue // ClusterSecretStore ref without namespace: per ExternalSecret namespace
			}
		case st.AuthType == "ambient" && (st.Provider == "aws" || st.Provider == "azurekv" || st.Provider == "gcpsm"):
			sa = eso
		default:
			continue
		}
		p := IdentityProblem{Namespace: sa.Namespace, ServiceAccount: sa.Name, Provider: st.Provider,
			StoreKind: st.StoreKind, StoreNamespace: st.Namespace, Store: st.Name}
		acct, ok := v.ServiceAccount(sa.Namespace, sa.Name)
		if !ok {
			p.Reason = IdentitySAAbsent
			out = append(out, p)
			continue
		}
		has := func(a string) bool { return acct.Annotations[a] != "" }
		switch st.Provider {
		case "aws":
			if (st.AuthType == "jwt" || st.AuthType == "ambient") && !has(AnnAWSRoleARN) {
				p.Reason = IdentityAnnotationAbsent
			}
		case "azurekv":
			if (st.AuthType == "workload_identity" || st.AuthType == "ambient") && !st.ClientIDSet && !has(AnnAzureClientID) {
				p.Reason = IdentityAnnotationAbsent
			}
		case "gcpsm":
			if (st.AuthType == "workload_identity" || st.AuthType == "ambient") && !has(AnnGKEServiceAcct) {
				p.Reason, p.Info = IdentityAnnotationAbsent, true
			}
		}
		if p.Reason != "" {
			out = append(out, p)
		}
	}
	return out
}
