package flux

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/apicompat"
	local "github.com/driftwatch/driftwatch/internal/flux"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2025, 3, 4, 5, 8, 9, 0, time.UTC))
)

const rev = "main@sha1:4e1243bd22c66e76c2ba9eddc1f91394e57f9f83"

func ptrTo[T any](v T) *T { return &v }

func ready(status metav1.ConditionStatus, reason, msg string, gen int64) []metav1.Condition {
	return []metav1.Condition{
		{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: t1},
		{Type: meta.ReconcilingCondition, Status: metav1.ConditionFalse, Reason: meta.SucceededReason, ObservedGeneration: gen, LastTransitionTime: t0},
	}
}

// kustomizations are fully populated upstream Kustomizations: one with every
// field driftwatch reads (ignore rules with a full target selector, postBuild
// substitution from an optional Secret and a required ConfigMap, patches,
// components, commonMetadata, SOPS decryption, an inventory naming a Secret,
// an ExternalSecret and a cluster-scoped Namespace), one suspended with a
// GitRepository in its own namespace and no inventory yet.
func kustomizations() []*kustomizev1.Kustomization {
	full := &kustomizev1.Kustomization{
		TypeMeta: metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: "payments", Namespace: "flux-system", ResourceVersion: "42", Generation: 3,
			Labels: map[string]string{"team": "payments"}, Annotations: map[string]string{"note": "fixture"},
		},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{
				APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind, Name: "platform", Namespace: "flux-sources",
			},
			Path:            "./apps/payments",
			TargetNamespace: "payments",
			NamePrefix:      "eu-",
			NameSuffix:      "-v2",
			Interval:        metav1.Duration{Duration: 10 * time.Minute},
			Prune:           true,
			Force:           true,
			Ignore: []kustomizev1.IgnoreRule{
				{Paths: []string{"/data"}, Target: &kustomize.Selector{
					Group: "", Version: "v1", Kind: "Secret", Name: "db-credentials", Namespace: "payments",
					AnnotationSelector: "rotated-by=vault", LabelSelector: "app=payments",
				}},
				{Paths: []string{"/spec/data", "/metadata/annotations/reloader"}, Target: &kustomize.Selector{
					Group: "external-secrets.io", Kind: "ExternalSecret",
				}},
				{Paths: []string{"/spec/replicas"}},
			},
			PostBuild: &kustomizev1.PostBuild{
				Substitute: map[string]string{"cluster_name": "eu-1", "region": "eu-west-1"},
				SubstituteFrom: []kustomizev1.SubstituteReference{
					{Kind: "Secret", Name: "cluster-vars", Optional: true},
					{Kind: "ConfigMap", Name: "cluster-settings"},
				},
				SubstituteStrategy: kustomizev1.SubstituteStrategyWithVariables,
			},
			Patches: []kustomize.Patch{
				{Patch: "- op: add\n  path: /data/extra\n  value: eA==\n", Target: &kustomize.Selector{
					Group: "", Version: "v1", Kind: "Secret", Name: "db-credentials", Namespace: "payments",
					AnnotationSelector: "patch=extra", LabelSelector: "app in (payments)",
				}},
				{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n"},
				{Patch: "- op: remove\n  path: /spec/data/0\n", Target: &kustomize.Selector{Group: "external-secrets.io", Kind: "ExternalSecret"}},
			},
			Components:     []string{"../components/monitoring"},
			CommonMetadata: &kustomizev1.CommonMetadata{Annotations: map[string]string{"owner": "payments"}, Labels: map[string]string{"env": "prod"}},
			Decryption:     &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops-age"}},
			Timeout:        &metav1.Duration{Duration: 5 * time.Minute},
		},
		Status: kustomizev1.KustomizationStatus{
			ReconcileRequestStatus: meta.ReconcileRequestStatus{LastHandledReconcileAt: "2025-03-04T05:08:00Z"},
			ObservedGeneration:     3,
			Conditions:             ready(metav1.ConditionTrue, meta.ReconciliationSucceededReason, "Applied revision: "+rev, 3),
			LastAppliedRevision:    rev,
			LastAttemptedRevision:  rev,
			Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
				{ID: "payments_eu-db-credentials-v2__Secret", Version: "v1"},
				{ID: "payments_eu-db-credentials-v2_external-secrets.io_ExternalSecret", Version: "v1"},
				{ID: "_payments__Namespace", Version: "v1"},
			}},
		},
	}
	suspended := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: "flux-system", Generation: 1},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "infra"},
			Interval:  metav1.Duration{Duration: time.Hour},
			Suspend:   true,
		},
		Status: kustomizev1.KustomizationStatus{
			ObservedGeneration:    1,
			Conditions:            ready(metav1.ConditionFalse, meta.ArtifactFailedReason, "Source artifact not found", 1),
			LastAttemptedRevision: "latest@sha256:3b1e",
		},
	}
	return []*kustomizev1.Kustomization{full, suspended}
}

func artifact(path, url string) *meta.Artifact {
	return &meta.Artifact{
		Path: path, URL: url, Revision: rev,
		Digest:         "sha256:2f8b7c9a0d1e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a",
		LastUpdateTime: t1, Size: ptrTo(int64(20480)), Metadata: map[string]string{"org.opencontainers.image.source": "https://git.example/platform"},
	}
}

// sources are the four source kinds a Kustomization's sourceRef may name,
// each Ready with an artifact, and one suspended GitRepository without one.
func sources() []any {
	src := "http://source-controller.flux-system.svc.cluster.local./"
	return []any{
		&sourcev1.GitRepository{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
			ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: "flux-sources", Generation: 2},
			Spec: sourcev1.GitRepositorySpec{URL: "https://git.example/platform.git", Interval: metav1.Duration{Duration: time.Minute},
				Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
			Status: sourcev1.GitRepositoryStatus{
				ObservedGeneration: 2, Conditions: ready(metav1.ConditionTrue, meta.SucceededReason, "stored artifact for revision '"+rev+"'", 2),
				Artifact: artifact("gitrepository/flux-sources/platform/4e1243bd.tar.gz", src+"gitrepository/flux-sources/platform/4e1243bd.tar.gz"),
			},
		},
		&sourcev1.GitRepository{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
			ObjectMeta: metav1.ObjectMeta{Name: "frozen", Namespace: "flux-system", Generation: 1},
			Spec:       sourcev1.GitRepositorySpec{URL: "ssh://git@git.example/frozen.git", Interval: metav1.Duration{Duration: time.Minute}, Suspend: true},
		},
		&sourcev1.OCIRepository{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
			ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: "flux-system", Generation: 4},
			Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.example/infra", Interval: metav1.Duration{Duration: 5 * time.Minute},
				Reference: &sourcev1.OCIRepositoryRef{Tag: "latest"}},
			Status: sourcev1.OCIRepositoryStatus{
				ObservedGeneration: 4, Conditions: ready(metav1.ConditionTrue, meta.SucceededReason, "stored artifact", 4),
				Artifact: artifact("ocirepository/flux-system/infra/sha256:3b1e.tar.gz", src+"ocirepository/flux-system/infra/sha256:3b1e.tar.gz"),
			},
		},
		// An ExternalArtifact, as source-watcher's ArtifactGenerator writes one
		// (no spec.suspend: the local mirror's stays false).
		&sourcev1.ExternalArtifact{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.ExternalArtifactKind},
			ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system", Generation: 1},
			Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{
				APIVersion: "source.extensions.fluxcd.io/v1beta1", Kind: "ArtifactGenerator", Name: "apps"}},
			Status: sourcev1.ExternalArtifactStatus{
				Conditions: ready(metav1.ConditionTrue, meta.SucceededReason, "stored artifact", 1),
				Artifact:   artifact("externalartifact/flux-system/apps/9f86d081.tar.gz", "http://source-watcher.flux-system.svc.cluster.local./externalartifact/flux-system/apps/9f86d081.tar.gz"),
			},
		},
		&sourcev1.Bucket{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.BucketKind},
			ObjectMeta: metav1.ObjectMeta{Name: "configs", Namespace: "flux-system", Generation: 1},
			Spec: sourcev1.BucketSpec{Provider: sourcev1.BucketProviderAmazon, BucketName: "configs", Endpoint: "s3.amazonaws.com",
				Interval: metav1.Duration{Duration: 5 * time.Minute}},
			Status: sourcev1.BucketStatus{
				ObservedGeneration: 1, Conditions: ready(metav1.ConditionFalse, sourcev1.BucketOperationFailedReason, "access denied", 1),
				Artifact: artifact("bucket/flux-system/configs/e3b0c442.tar.gz", src+"bucket/flux-system/configs/e3b0c442.tar.gz"),
			},
		},
	}
}

// viaUnstructured decodes the way the agent's transforms decode objects from a
// dynamic informer (internal/transform: DefaultUnstructuredConverter over the
// unstructured object).
func viaUnstructured[T any](t *testing.T, obj any) (T, any) {
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
	var uj any
	if err := json.Unmarshal(b, &uj); err != nil {
		t.Fatal(err)
	}
	return out, uj
}

// viaJSON decodes with encoding/json, as `agent lint` reads rendered
// manifests (YAML turned into JSON) and as any client of the raw API does.
func viaJSON[T any](t *testing.T, obj any) (T, any) {
	t.Helper()
	var out T
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("json.Unmarshal %T -> %T: %v", obj, out, err)
	}
	var uj any
	if err := json.Unmarshal(b, &uj); err != nil {
		t.Fatal(err)
	}
	return out, uj
}

type decoder[T any] func(*testing.T, any) (T, any)

func decoders[T any]() map[string]decoder[T] {
	return map[string]decoder[T]{
		"DefaultUnstructuredConverter": viaUnstructured[T],
		"encoding/json":                viaJSON[T],
	}
}

func report(t *testing.T, what string, errs []string) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(errs, "\n  "))
	}
}

func TestStructure(t *testing.T) {
	cases := []struct {
		name            string
		local, upstream any
	}{
		{"Kustomization", local.Kustomization{}, kustomizev1.Kustomization{}},
		{"GitRepository", local.Source{}, sourcev1.GitRepository{}},
		{"OCIRepository", local.Source{}, sourcev1.OCIRepository{}},
		{"Bucket", local.Source{}, sourcev1.Bucket{}},
		{"Artifact", local.Artifact{}, meta.Artifact{}},
		{"Selector", local.Selector{}, kustomize.Selector{}},
		{"ResourceInventory", local.ResourceInventory{}, kustomizev1.ResourceInventory{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			report(t, "local fields without an upstream counterpart",
				apicompat.CheckStructure(reflect.TypeOf(c.local), reflect.TypeOf(c.upstream)))
		})
	}
}

func TestRoundTripKustomization(t *testing.T) {
	for name, decode := range decoders[local.Kustomization]() {
		t.Run(name, func(t *testing.T) {
			c := apicompat.NewValueChecker()
			for _, k := range kustomizations() {
				got, uj := decode(t, k)
				c.Check(got, uj)
			}
			report(t, "Kustomization values", c.Errs)
			report(t, "Kustomization fields never populated by a fixture", c.Uncovered(reflect.TypeFor[local.Kustomization]()))
		})
	}
}

func TestRoundTripSources(t *testing.T) {
	for name, decode := range decoders[local.Source]() {
		t.Run(name, func(t *testing.T) {
			c := apicompat.NewValueChecker()
			for _, s := range sources() {
				got, uj := decode(t, s)
				c.Check(got, uj)
			}
			report(t, "Source values", c.Errs)
			report(t, "Source fields never populated by a fixture", c.Uncovered(reflect.TypeFor[local.Source]()))
		})
	}
}

// TestSpotChecks reads the fields the detectors and the poller depend on.
func TestSpotChecks(t *testing.T) {
	ks := kustomizations()
	k, _ := viaUnstructured[local.Kustomization](t, ks[0])
	switch {
	case k.Spec.SourceRef.Kind != "GitRepository" || k.Spec.SourceRef.Namespace != "flux-sources" || k.Spec.SourceRef.Name != "platform",
		k.Spec.TargetNamespace != "payments" || k.Spec.NamePrefix != "eu-" || k.Spec.NameSuffix != "-v2" || k.Spec.Suspend,
		len(k.Spec.Ignore) != 3 || k.Spec.Ignore[0].Paths[0] != "/data" || k.Spec.Ignore[0].Target == nil ||
			k.Spec.Ignore[0].Target.Kind != "Secret" || k.Spec.Ignore[1].Target.Group != "external-secrets.io" || k.Spec.Ignore[2].Target != nil,
		k.Spec.PostBuild == nil || len(k.Spec.PostBuild.SubstituteFrom) != 2 || !k.Spec.PostBuild.SubstituteFrom[0].Optional ||
			k.Spec.PostBuild.SubstituteFrom[1].Optional || k.Spec.PostBuild.SubstituteFrom[1].Kind != "ConfigMap",
		len(k.Spec.Patches) != 3 || k.Spec.Patches[0].Target == nil || k.Spec.Patches[1].Target != nil,
		k.Spec.Decryption == nil || k.Spec.Decryption.Provider != "sops",
		k.Status.LastAppliedRevision != rev || k.Status.ObservedGeneration != 3 || len(k.Status.Conditions) != 2 ||
			k.Status.Conditions[0].Type != "Ready" || k.Status.Conditions[0].Status != metav1.ConditionTrue,
		k.Status.Inventory == nil || len(k.Status.Inventory.Entries) != 3:
		t.Errorf("Kustomization decoded wrongly: %+v", k)
	}
	want := []local.ObjMetadata{
		{Namespace: "payments", Name: "eu-db-credentials-v2", Kind: "Secret"},
		{Namespace: "payments", Name: "eu-db-credentials-v2", Group: "external-secrets.io", Kind: "ExternalSecret"},
		{Name: "payments", Kind: "Namespace"},
	}
	for i, e := range k.Status.Inventory.Entries {
		if got, ok := local.ParseInventoryID(e.ID); !ok || got != want[i] {
			t.Errorf("inventory entry %q parsed as %+v, %v; want %+v", e.ID, got, ok, want[i])
		}
	}
	if s, _ := viaUnstructured[local.Kustomization](t, ks[1]); !s.Spec.Suspend || s.Status.Inventory != nil || s.Spec.SourceRef.Kind != "OCIRepository" {
		t.Errorf("suspended Kustomization decoded wrongly: %+v", s)
	}
	for _, obj := range sources() {
		src, _ := viaUnstructured[local.Source](t, obj)
		if src.Name == "frozen" {
			if !src.Spec.Suspend || src.Status.Artifact != nil {
				t.Errorf("suspended GitRepository decoded wrongly: %+v", src)
			}
			continue
		}
		if a := src.Status.Artifact; a == nil || a.Revision != rev || !strings.HasPrefix(a.Digest, "sha256:") ||
			!strings.HasSuffix(a.URL, a.Path) || a.Size == nil || *a.Size != 20480 {
			t.Errorf("%s/%s artifact decoded wrongly: %+v", src.Kind, src.Name, src.Status.Artifact)
		}
	}
}

// TestCheckerCatchesMistakes shows both checks fail on a wrong mirror: a
// misspelt JSON name (inventory "version" where Flux writes "v"), a wrong type
// and an invented field.
func TestCheckerCatchesMistakes(t *testing.T) {
	type badRef struct {
		ID      string `json:"id"`
		Version string `json:"version"` // upstream: "v"
	}
	type badKustomization struct {
		Spec struct {
			Suspend string `json:"suspend"`   // upstream: bool
			Nope    string `json:"notAField"` // upstream: absent
		} `json:"spec"`
		Status struct {
			Inventory *struct {
				Entries []badRef `json:"entries"`
			} `json:"inventory"`
		} `json:"status"`
	}
	errs := apicompat.CheckStructure(reflect.TypeFor[badKustomization](), reflect.TypeFor[kustomizev1.Kustomization]())
	for _, want := range []string{".entries[].version: no field", ".spec.suspend: local kind string", ".spec.notAField: no field"} {
		if !containsSubstring(errs, want) {
			t.Errorf("CheckStructure missed %q; got %q", want, errs)
		}
	}

	type loose struct {
		Status struct {
			Inventory *struct {
				Entries []badRef `json:"entries"`
			} `json:"inventory"`
		} `json:"status"`
	}
	c := apicompat.NewValueChecker()
	for _, k := range kustomizations() {
		got, uj := viaUnstructured[loose](t, k)
		c.Check(got, uj)
	}
	if un := c.Uncovered(reflect.TypeFor[loose]()); !containsSubstring(un, ".entries[].version") {
		t.Errorf("the value check did not report the never-populated misspelt field; uncovered %q, errors %q", un, c.Errs)
	}
}

func containsSubstring(list []string, s string) bool {
	for _, e := range list {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}
