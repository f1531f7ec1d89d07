package transform

// The SecretStore and ClusterSecretStore transform, and how a store's provider
// authenticates (ESO auth classification).

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/model"
)

// SecretStore returns the transform for SecretStores (kind "SecretStore") or
// ClusterSecretStores.
func (t *Transformer) SecretStore(kind string) func(any) (any, error) {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		var body struct { // spec and status only: see fromUnstructured
			Spec   eso.SecretStoreSpec   `json:"spec,omitempty"`
			Status eso.SecretStoreStatus `json:"status,omitempty"`
		}
		decodeErr := fromUnstructured(u, &body)
		st := eso.SecretStore{Spec: body.Spec, Status: body.Status}
		meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(), Annotations: u.GetAnnotations()}
		rec := &model.SecretStore{ObjectMeta: objectMeta(&meta), APIVersion: model.Intern(u.GetAPIVersion()), StoreKind: kind, DecodeErr: decodeErr}
		// The local struct holds no provider field that carries data (the fake
		// provider's values are not decoded), so the error names types only.
		t.decodeProblem(strings.ToLower(kind)+"s", &meta, "spec", decodeErr)
		if prov, ok, _ := unstructured.NestedMap(u.Object, "spec", "provider"); ok {
			for name := range prov {
				rec.Provider = name // exactly one provider is set
			}
		}
		resolveAuth(rec, &st)
		rec.Ready = condition(st.Status.Conditions, "Ready")
		return rec, nil
	}
}

func saRef(sel *eso.ServiceAccountSelector, storeNS string) *model.Ref {
	if sel == nil || sel.Name == "" {
		return nil
	}
	ns := storeNS
	if sel.Namespace != nil && *sel.Namespace != "" {
		ns = *sel.Namespace
	}
	return &model.Ref{Namespace: ns, Name: sel.Name}
}

func resolveAuth(rec *model.SecretStore, st *eso.SecretStore) {
	p := st.Spec.Provider
	if p == nil {
		return
	}
	ns := rec.Namespace
	switch {
	case p.AWS != nil:
		switch {
		case p.AWS.Auth.JWTAuth != nil:
			rec.AuthType = "jwt"
			rec.AuthSA = saRef(p.AWS.Auth.JWTAuth.ServiceAccountRef, ns)
		case p.AWS.Auth.SecretRef != nil:
			rec.AuthType = "static"
		default:
			rec.AuthType = "ambient"
		}
	case p.AzureKV != nil:
		at := "ServicePrincipal"
		if p.AzureKV.AuthType != nil && *p.AzureKV.AuthType != "" {
			at = *p.AzureKV.AuthType
		}
		rec.ClientIDSet = p.AzureKV.AuthSecretRef != nil && p.AzureKV.AuthSecretRef.ClientID != nil
		switch at {
		case "WorkloadIdentity":
			rec.AuthType = "workload_identity"
			rec.AuthSA = saRef(p.AzureKV.ServiceAccountRef, ns)
			if rec.AuthSA == nil {
				rec.AuthType = "ambient"
			}
		case "ManagedIdentity":
			rec.AuthType = "managed_identity"
		default:
			rec.AuthType = "static"
		}
	case p.GCPSM != nil:
		switch {
		case p.GCPSM.Auth.WorkloadIdentity != nil:
			rec.AuthType = "workload_identity"
			rec.AuthSA = saRef(&p.GCPSM.Auth.WorkloadIdentity.ServiceAccountRef, ns)
		case p.GCPSM.Auth.SecretRef != nil:
			rec.AuthType = "static"
		default:
			rec.AuthType = "ambient"
		}
	case p.Vault != nil:
		if p.Vault.Auth != nil && p.Vault.Auth.Kubernetes != nil {
			rec.AuthType = "jwt"
			rec.AuthSA = saRef(p.Vault.Auth.Kubernetes.ServiceAccountRef, ns)
		}
	}
}
