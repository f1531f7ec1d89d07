package detect

import (
	"github.com/driftwatch/driftwatch/internal/model"
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
//     skipped here rather than guessed. The SA must exist (sa_absent otherwise),
//     and where ESO needs an annotation to authenticate it must be there
//     (annotation_missing): AWS jwt auth reads eks.amazonaws.com/role-arn and fails
//     without it (ESO pkg/provider/aws/auth: "an IAM role must be associated with
//     service account"); Azure workload identity reads
//     azure.workload.identity/client-id unless the store gives a clientId. GCP
//     workload identity without iam.gke.io/gcp-service-account is reported with
//     Info set: Workload Identity Federation can grant the Kubernetes SA directly.
//   - ambient auth (no auth block): ESO uses its own credentials, and ESO does
//     not need an annotation for them. AWS's default credential chain also takes
//     EKS Pod Identity and instance profiles (no annotation at all): never judged.
//     Azure (env vars the workload-identity webhook injects, or set by hand) and
//     GCP (ADC: GKE workload identity, WIF or the node's account): the ESO
//     controller's SA, eso (DefaultESOServiceAccount when zero), without the
//     provider's annotation is reported with Info set, and only when that SA
//     exists: a differently named ESO installation must not read as a missing SA.
//
// Static credentials, managed identity and unknown auth are not judged.
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
		case st.AuthType == "ambient" && (st.Provider == "azurekv" || st.Provider == "gcpsm"):
			sa = eso
		default:
			continue
		}
		p := IdentityProblem{Namespace: sa.Namespace, ServiceAccount: sa.Name, Provider: st.Provider,
			StoreKind: st.StoreKind, StoreNamespace: st.Namespace, Store: st.Name}
		ambient := st.AuthType == "ambient"
		acct, ok := v.ServiceAccount(sa.Namespace, sa.Name)
		if !ok {
			if ambient {
				continue // which SA ESO runs as is configuration, not evidence
			}
			p.Reason = IdentitySAAbsent
			out = append(out, p)
			continue
		}
		has := func(a string) bool { return acct.Annotations[a] != "" }
		switch st.Provider {
		case "aws":
			if st.AuthType == "jwt" && !has(model.AnnAWSRoleARN) {
				p.Reason = IdentityAnnotationAbsent
			}
		case "azurekv":
			if (st.AuthType == "workload_identity" || ambient) && !st.ClientIDSet && !has(model.AnnAzureClientID) {
				p.Reason, p.Info = IdentityAnnotationAbsent, ambient
			}
		case "gcpsm":
			if (st.AuthType == "workload_identity" || st.AuthType == "ambient") && !has(model.AnnGKEServiceAcct) {
				p.Reason, p.Info = IdentityAnnotationAbsent, true
			}
		}
		if p.Reason != "" {
			out = append(out, p)
		}
	}
	return out
}
