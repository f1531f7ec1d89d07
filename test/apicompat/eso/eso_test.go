package eso

import (
	"github.com/driftwatch/driftwatch/internal/apicompat"

	"encoding/json"
	"reflect"
	"strings"
	"testing"

	local "github.com/driftwatch/driftwatch/internal/eso"
	esv1 "github.com/external-secrets/external-secrets/apis/externalsecrets/v1"
	esv1beta1 "github.com/external-secrets/external-secrets/apis/externalsecrets/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func ref(s string) *string { return &s }

func ptrTo[T any](v T) *T { return &v }

type fixtures struct {
	externalSecrets []any // *ExternalSecret of one API version
	stores          []any // *SecretStore and *ClusterSecretStore of the same version
}

// decode turns an upstream object into a local struct the way the agent does: the
// object's JSON (as the API server serves it) becomes the unstructured map a dynamic
// informer hands out, and runtime.DefaultUnstructuredConverter fills the local
// struct. It returns the local value and the upstream JSON as a generic value.
func decode[T any](t *testing.T, obj any) (T, any) {
	t.Helper()
	var out T
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal upstream %T: %v", obj, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatalf("unstructured from %T: %v", obj, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		t.Fatalf("FromUnstructured %T -> %T: %v", obj, out, err)
	}
	// A plain json.Unmarshal into a map (float64 numbers) must give the same result.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var viaMap T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &viaMap); err != nil {
		t.Fatalf("FromUnstructured(map) %T -> %T: %v", obj, out, err)
	}
	if !reflect.DeepEqual(out, viaMap) {
		t.Errorf("%T: decoding via unstructured.Unstructured and via map[string]any differ", obj)
	}
	var uj any
	if err := json.Unmarshal(b, &uj); err != nil {
		t.Fatal(err)
	}
	return out, uj
}

func report(t *testing.T, what string, errs []string) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(errs, "\n  "))
	}
}

// TestStructure: every field of the local structs exists upstream with the same
// JSON name and a compatible type, in both served API versions.
func TestStructure(t *testing.T) {
	cases := []struct {
		name            string
		local, upstream any
	}{
		{"v1/ExternalSecret", local.ExternalSecret{}, esv1.ExternalSecret{}},
		{"v1/SecretStore", local.SecretStore{}, esv1.SecretStore{}},
		{"v1/ClusterSecretStore", local.SecretStore{}, esv1.ClusterSecretStore{}},
		{"v1beta1/ExternalSecret", local.ExternalSecret{}, esv1beta1.ExternalSecret{}},
		{"v1beta1/SecretStore", local.SecretStore{}, esv1beta1.SecretStore{}},
		{"v1beta1/ClusterSecretStore", local.SecretStore{}, esv1beta1.ClusterSecretStore{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			report(t, "local fields without an upstream counterpart",
				apicompat.CheckStructure(reflect.TypeOf(c.local), reflect.TypeOf(c.upstream)))
		})
	}
}

// TestRoundTrip: fully populated upstream objects decode into the local structs with
// every local field equal to the upstream value, and every local field is populated
// by at least one fixture.
func TestRoundTrip(t *testing.T) {
	for _, v := range []struct {
		version string
		fx      fixtures
	}{{"v1", v1Fixtures()}, {"v1beta1", v1beta1Fixtures()}} {
		t.Run(v.version, func(t *testing.T) {
			es := apicompat.NewValueChecker()
			for _, obj := range v.fx.externalSecrets {
				got, uj := decode[local.ExternalSecret](t, obj)
				es.Check(got, uj)
			}
			report(t, "ExternalSecret values", es.Errs)
			report(t, "ExternalSecret fields never populated by a fixture", es.Uncovered(reflect.TypeFor[local.ExternalSecret]()))

			st := apicompat.NewValueChecker()
			for _, obj := range v.fx.stores {
				got, uj := decode[local.SecretStore](t, obj)
				st.Check(got, uj)
			}
			report(t, "SecretStore values", st.Errs)
			report(t, "SecretStore fields never populated by a fixture", st.Uncovered(reflect.TypeFor[local.SecretStore]()))
		})
	}
}

// TestSpotChecks reads the fields the detectors depend on directly, so a failure
// here reads as a plain statement about the agent's view of the object.
func TestSpotChecks(t *testing.T) {
	fx := v1Fixtures()
	es, _ := decode[local.ExternalSecret](t, fx.externalSecrets[0])
	tpl := es.Spec.Target.Template
	switch {
	case es.Spec.Target.Name != "db-credentials-target",
		es.Spec.Target.CreationPolicy != "Merge",
		es.Spec.Target.DeletionPolicy != "Retain",
		es.Spec.RefreshInterval == nil || es.Spec.RefreshInterval.Duration.String() != "1h30m0s",
		tpl == nil || tpl.MergePolicy != "Merge" || len(tpl.Data) != 2,
		len(tpl.TemplateFrom) != 3,
		tpl.TemplateFrom[0].ConfigMap == nil || tpl.TemplateFrom[0].ConfigMap.Items[1].TemplateAs != "KeysAndValues",
		tpl.TemplateFrom[1].Secret == nil || tpl.TemplateFrom[1].Target != "Annotations",
		tpl.TemplateFrom[2].Literal == nil,
		es.Spec.Data[0].SecretKey != "password" || es.Spec.Data[0].RemoteRef.Property != "password",
		es.Spec.DataFrom[0].Extract == nil || es.Spec.DataFrom[0].Extract.Key != "prod/app",
		es.Spec.DataFrom[1].Find == nil || es.Spec.DataFrom[1].Find.Name.RegExp != "^app-.*",
		es.Status.RefreshTime.IsZero(),
		len(es.Status.Conditions) != 2 || es.Status.Conditions[0].Type != "Ready" || es.Status.Conditions[0].Status != "True":
		t.Errorf("ExternalSecret decoded wrongly: %+v", es)
	}

	byName := map[string]local.SecretStore{}
	for _, obj := range fx.stores {
		s, _ := decode[local.SecretStore](t, obj)
		byName[s.Name] = s
	}
	if p := byName["aws-jwt"].Spec.Provider.AWS; p == nil || p.Auth.JWTAuth == nil || p.Auth.JWTAuth.ServiceAccountRef.Name != "eso-aws" {
		t.Errorf("aws jwt serviceAccountRef lost: %+v", p)
	}
	if p := byName["aws-keys"].Spec.Provider.AWS; p == nil || p.Auth.SecretRef == nil || p.Auth.SecretRef.AccessKeyID.Key != "access-key-id" {
		t.Errorf("aws secretRef lost: %+v", p)
	}
	if p := byName["azure-wi"].Spec.Provider.AzureKV; p == nil || p.AuthType == nil || *p.AuthType != "WorkloadIdentity" ||
		p.ServiceAccountRef == nil || p.ServiceAccountRef.Name != "eso-azure" ||
		p.AuthSecretRef == nil || p.AuthSecretRef.ClientID == nil || p.AuthSecretRef.ClientID.Key != "client-id" {
		t.Errorf("azurekv workload identity lost: %+v", p)
	}
	if p := byName["gcp-wi"].Spec.Provider.GCPSM; p == nil || p.Auth.WorkloadIdentity == nil || p.Auth.WorkloadIdentity.ServiceAccountRef.Name != "eso-gcp" {
		t.Errorf("gcpsm workloadIdentity lost: %+v", p)
	}
	if p := byName["vault-k8s"].Spec.Provider.Vault; p == nil || p.Auth == nil || p.Auth.Kubernetes == nil ||
		p.Auth.Kubernetes.ServiceAccountRef == nil || p.Auth.Kubernetes.ServiceAccountRef.Name != "eso-vault" || p.Auth.Kubernetes.Role != "eso-reader" {
		t.Errorf("vault kubernetes serviceAccountRef lost: %+v", p)
	}
	if c := byName["gcp-wi"].Status.Conditions; len(c) != 1 || c[0].Reason != "InvalidProviderConfig" {
		t.Errorf("store status conditions lost: %+v", c)
	}
}

// TestCheckerCatchesMistakes proves the two checks are not vacuous: a mirror with a
// misspelt JSON name, a wrong type and a field upstream does not have must fail both.
func TestCheckerCatchesMistakes(t *testing.T) {
	type badAzure struct {
		VaultURL *string `json:"vaultURL"`     // upstream: vaultUrl
		TenantID *int    `json:"tenantId"`     // upstream: *string
		Nope     string  `json:"doesNotExist"` // upstream: absent
		AuthType *string `json:"authType,omitempty"`
	}
	type badStore struct {
		Spec struct {
			Provider struct {
				AzureKV *badAzure `json:"azurekv"`
			} `json:"provider"`
		} `json:"spec"`
	}
	errs := apicompat.CheckStructure(reflect.TypeFor[badStore](), reflect.TypeFor[esv1.SecretStore]())
	for _, want := range []string{".azurekv.vaultURL: no field", ".azurekv.tenantId: local kind int", ".azurekv.doesNotExist: no field"} {
		if !containsSubstring(errs, want) {
			t.Errorf("checkStructure missed %q; got %q", want, errs)
		}
	}

	c := apicompat.NewValueChecker()
	for _, obj := range v1Fixtures().stores {
		b, _ := json.Marshal(obj)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		var got struct {
			Spec struct {
				Provider struct {
					AzureKV *struct {
						VaultURL *string `json:"vaultURL"`
						AuthType *string `json:"authType,omitempty"`
					} `json:"azurekv"`
				} `json:"provider"`
			} `json:"spec"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &got); err != nil {
			t.Fatal(err)
		}
		var uj any
		_ = json.Unmarshal(b, &uj)
		c.Check(got, uj)
	}
	missing := c.Uncovered(reflect.TypeOf(struct {
		Spec struct {
			Provider struct {
				AzureKV *struct {
					VaultURL *string `json:"vaultURL"`
					AuthType *string `json:"authType,omitempty"`
				} `json:"azurekv"`
			} `json:"provider"`
		} `json:"spec"`
	}{}))
	if !containsSubstring(missing, ".azurekv.vaultURL") || containsSubstring(missing, ".azurekv.authType") {
		t.Errorf("coverage should flag only the misspelt field; got %q", missing)
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
