package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestWorkloadIdentity(t *testing.T) {
	sa := mt.ServiceAccount
	st := func(kind, ns, name, provider, auth string, ref *model.Ref) *model.SecretStore {
		opts := []mt.StoreOption{mt.StoreProvider(provider), mt.StoreAuth(auth, ref)}
		if kind == "ClusterSecretStore" {
			return mt.ClusterSecretStore(name, opts...)
		}
		return mt.SecretStore(ns, name, opts...)
	}
	r := func(ns, name string) *model.Ref { return &model.Ref{Namespace: ns, Name: name} }
	eso := model.Ref{Namespace: "eso", Name: "eso-controller"}
	type want struct {
		sa, provider, kind, store, reason string
		info                              bool
	}
	cases := []struct {
		name  string
		store *model.SecretStore
		sas   []*model.ServiceAccount
		eso   model.Ref
		avail model.Availability
		want  []want
	}{
		{name: "aws jwt: annotated SA", store: st("SecretStore", "app", "aws", "aws", "jwt", r("app", "reader")),
			sas: []*model.ServiceAccount{sa("app", "reader", model.AnnAWSRoleARN, "arn:aws:iam::1:role/r")}},
		{name: "aws jwt: SA without role-arn", store: st("SecretStore", "app", "aws", "aws", "jwt", r("app", "reader")),
			sas:  []*model.ServiceAccount{sa("app", "reader", model.AnnGKEServiceAcct, "x@y")},
			want: []want{{"app/reader", "aws", "SecretStore", "aws", IdentityAnnotationAbsent, false}}},
		{name: "aws jwt: SA absent", store: st("SecretStore", "app", "aws", "aws", "jwt", r("app", "reader")),
			want: []want{{"app/reader", "aws", "SecretStore", "aws", IdentitySAAbsent, false}}},
		{name: "SecretStore ref namespace is the store's", store: st("SecretStore", "app", "aws", "aws", "jwt", r("elsewhere", "reader")),
			sas: []*model.ServiceAccount{sa("app", "reader", model.AnnAWSRoleARN, "arn")}},
		// ESO's AWS provider with no auth block uses the SDK's default chain:
		// IRSA, EKS Pod Identity (no annotation) or an instance profile.
		{name: "aws ambient: no annotation needed (EKS Pod Identity, instance profile)", store: st("ClusterSecretStore", "", "aws", "aws", "ambient", nil),
			sas: []*model.ServiceAccount{sa("eso", "eso-controller")}, eso: eso},
		{name: "aws ambient: ESO SA absent under the default name is not evidence", store: st("SecretStore", "app", "aws", "aws", "ambient", nil)},
		{name: "azure ambient: controller SA without client-id is info only", store: st("ClusterSecretStore", "", "kv", "azurekv", "ambient", nil),
			sas: []*model.ServiceAccount{sa("eso", "eso-controller")}, eso: eso,
			want: []want{{"eso/eso-controller", "azurekv", "ClusterSecretStore", "kv", IdentityAnnotationAbsent, true}}},
		{name: "gcp ambient: controller SA absent (another name): nothing", store: st("ClusterSecretStore", "", "gsm", "gcpsm", "ambient", nil), eso: eso},
		{name: "aws static credentials: not judged", store: st("SecretStore", "app", "aws", "aws", "static", nil)},
		{name: "cluster store ref without namespace: skipped", store: st("ClusterSecretStore", "", "aws", "aws", "jwt", r("", "reader"))},
		{name: "cluster store ref with namespace", store: st("ClusterSecretStore", "", "aws", "aws", "jwt", r("team", "reader")),
			want: []want{{"team/reader", "aws", "ClusterSecretStore", "aws", IdentitySAAbsent, false}}},
		{name: "azure workload identity without client-id", store: st("SecretStore", "app", "kv", "azurekv", "workload_identity", r("app", "az")),
			sas:  []*model.ServiceAccount{sa("app", "az")},
			want: []want{{"app/az", "azurekv", "SecretStore", "kv", IdentityAnnotationAbsent, false}}},
		{name: "azure workload identity with client-id annotation", store: st("SecretStore", "app", "kv", "azurekv", "workload_identity", r("app", "az")),
			sas: []*model.ServiceAccount{sa("app", "az", model.AnnAzureClientID, "00000000-0000-0000-0000-000000000000")}},
		{name: "azure clientId in the store", store: func() *model.SecretStore {
			s := st("SecretStore", "app", "kv", "azurekv", "workload_identity", r("app", "az"))
			s.ClientIDSet = true
			return s
		}(), sas: []*model.ServiceAccount{sa("app", "az")}},
		{name: "azure managed identity: not judged", store: st("SecretStore", "app", "kv", "azurekv", "managed_identity", nil)},
		{name: "gcp workload identity without annotation: info", store: st("SecretStore", "app", "gsm", "gcpsm", "workload_identity", r("app", "g")),
			sas:  []*model.ServiceAccount{sa("app", "g")},
			want: []want{{"app/g", "gcpsm", "SecretStore", "gsm", IdentityAnnotationAbsent, true}}},
		{name: "gcp workload identity annotated", store: st("SecretStore", "app", "gsm", "gcpsm", "workload_identity", r("app", "g")),
			sas: []*model.ServiceAccount{sa("app", "g", model.AnnGKEServiceAcct, "g@p.iam.gserviceaccount.com")}},
		{name: "gcp SA absent is a finding", store: st("SecretStore", "app", "gsm", "gcpsm", "workload_identity", r("app", "g")),
			want: []want{{"app/g", "gcpsm", "SecretStore", "gsm", IdentitySAAbsent, false}}},
		{name: "vault kubernetes auth: SA must exist", store: st("SecretStore", "app", "v", "vault", "jwt", r("app", "v")),
			want: []want{{"app/v", "vault", "SecretStore", "v", IdentitySAAbsent, false}}},
		{name: "vault kubernetes auth: SA exists", store: st("SecretStore", "app", "v", "vault", "jwt", r("app", "v")),
			sas: []*model.ServiceAccount{sa("app", "v")}},
		{name: "unavailable ServiceAccounts: silent", store: st("SecretStore", "app", "aws", "aws", "jwt", r("app", "reader")),
			avail: mt.Only(model.ResSecretStores, model.ResClusterSecretStores)},
		{name: "decode error: silent", store: func() *model.SecretStore {
			s := st("SecretStore", "app", "aws", "aws", "jwt", r("app", "reader"))
			s.DecodeErr = "decode: x"
			return s
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := mt.NewStore(t, c.store, c.sas)
			avail := c.avail
			if avail == nil {
				avail = mt.All()
			}
			var got []want
			w.Read(func(v model.View) {
				for _, p := range WorkloadIdentity(v, avail, c.eso) {
					if p.StoreNamespace != c.store.Namespace {
						t.Errorf("store namespace %q", p.StoreNamespace)
					}
					got = append(got, want{p.Namespace + "/" + p.ServiceAccount, p.Provider, p.StoreKind, p.Store, p.Reason, p.Info})
				}
			})
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}
