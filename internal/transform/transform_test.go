package transform

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/helmpayload"
	"github.com/driftwatch/driftwatch/internal/model"
)

func newTransformer() *Transformer {
	return &Transformer{FP: model.NewFingerprinterWithKey([]byte("test-key"))}
}

// Values chosen to be findable: if any of them (or a long piece of one) shows up in
// a record's dump, a value leaked into the model.
var secretValues = []string{
	"Zq8v!xK2#mN9-value-one",
	"correct-horse-battery-staple-2",
	"-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
	"stringdata-only-value-3",
}

func assertNoValues(t *testing.T, what string, rec any) {
	t.Helper()
	dumps := []string{fmt.Sprintf("%#v", rec), fmt.Sprintf("%+v", rec)}
	if b, err := json.Marshal(rec); err == nil {
		dumps = append(dumps, string(b))
	}
	for _, d := range dumps {
		for _, v := range secretValues {
			for i := 0; i+8 <= len(v); i++ {
				if strings.Contains(d, v[i:i+8]) {
					t.Fatalf("%s: value fragment %q of a secret value reached the model", what, v[i:i+8])
				}
			}
			if strings.Contains(d, base64.StdEncoding.EncodeToString([]byte(v))[:12]) {
				t.Fatalf("%s: base64 of a secret value reached the model", what)
			}
		}
	}
}

func TestSecretTransformIsValueFree(t *testing.T) {
	la, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "app"},
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(secretValues[0]))},
		"stringData": map[string]any{"token": secretValues[3]}})
	ctrl := true
	in := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app", UID: "u1", ResourceVersion: "7",
			Annotations: map[string]string{model.AnnLastApplied: string(la), model.AnnExpectedKeys: "password, token,cert",
				"reconcile.external-secrets.io/data-hash": "0123456789abcdef", "unrelated": "x"},
			Labels:          map[string]string{model.LabelESOManaged: "true", "team": "a", flux.AnnotationReconcile: "disabled"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "db", UID: "es1", Controller: &ctrl}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "externalsecrets.external-secrets.io/db", Operation: metav1.ManagedFieldsOperationUpdate,
					Time: &metav1.Time{Time: time.Unix(1000, 0)}, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:password":{}}}`)}},
				{Manager: "kubectl-label", Operation: metav1.ManagedFieldsOperationUpdate,
					Time: &metav1.Time{Time: time.Unix(2000, 0)}, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}},
			}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"password": []byte(secretValues[0]),
			"token":    []byte(secretValues[1]),
			"cert":     []byte(secretValues[2]),
		},
	}
	out, err := newTransformer().Secret(in)
	if err != nil {
		t.Fatal(err)
	}
	rec := out.(*model.Secret)
	assertNoValues(t, "secret record", rec)
	if in.Data != nil {
		t.Fatal("transform must drop the object's data")
	}
	if got := rec.Keys.Len(); got != 3 {
		t.Fatalf("keys: got %d want 3", got)
	}
	if keyOf(rec.Keys, "password").Len != len(secretValues[0]) || keyOf(rec.Keys, "cert").Len != len(secretValues[2]) {
		t.Fatalf("byte lengths wrong: %+v", rec.Keys)
	}
	if keyOf(rec.Keys, "password").FP == keyOf(rec.Keys, "token").FP {
		t.Fatal("different values must have different fingerprints")
	}
	if !reflect.DeepEqual(rec.ExpectedKeys, []string{"cert", "password", "token"}) {
		t.Fatalf("expected keys: %v", rec.ExpectedKeys)
	}
	if _, kept := rec.Annotations["reconcile.external-secrets.io/data-hash"]; kept {
		t.Fatal("ESO's data hash must not be kept")
	}
	if _, kept := rec.Annotations[model.AnnLastApplied]; kept {
		t.Fatal("last-applied must be summarised, not kept")
	}
	// kustomize-controller's skip selectors match labels too (flux.SkipReason).
	if rec.Labels[model.LabelESOManaged] != "true" || rec.Labels["team"] != "" || rec.Labels[flux.AnnotationReconcile] != "disabled" {
		t.Fatalf("labels: %v", rec.Labels)
	}
	if len(rec.Owners) != 1 || !rec.Owners[0].Controller || rec.Owners[0].Kind != "ExternalSecret" {
		t.Fatalf("owners: %+v", rec.Owners)
	}
	if len(rec.Managers) != 2 || !rec.Managers[0].OwnsData || rec.Managers[1].OwnsData {
		t.Fatalf("managers: %+v", rec.Managers)
	}
	if rec.LastApplied == nil || rec.LastApplied.Kind != "Secret" || !reflect.DeepEqual(rec.LastApplied.DataKeys, []string{"password", "token"}) {
		t.Fatalf("last applied: %+v", rec.LastApplied)
	}
	// The last-applied copy of password equals the live value: same fingerprint.
	if fpOf(rec.LastApplied.DataFPs, "password") != keyOf(rec.Keys, "password").FP {
		t.Fatal("last-applied fingerprint must match the live one for the same value")
	}
	// Idempotent: a record passes through unchanged.
	again, _ := newTransformer().Secret(rec)
	if again != rec {
		t.Fatal("transform is not idempotent")
	}
}

func TestFingerprintsAreKeyed(t *testing.T) {
	a := model.NewFingerprinterWithKey([]byte("k1")).Sum([]byte("v"))
	b := model.NewFingerprinterWithKey([]byte("k2")).Sum([]byte("v"))
	if a == b {
		t.Fatal("fingerprints under different keys must differ")
	}
	r1, r2 := model.NewFingerprinter(), model.NewFingerprinter()
	if r1.Sum([]byte("v")) == r2.Sum([]byte("v")) {
		t.Fatal("two processes' random keys collided")
	}
	k := model.NewFingerprinterWithKey([]byte("k")).Key([]byte("  v\r\n"))
	k2 := model.NewFingerprinterWithKey([]byte("k")).Key([]byte("v"))
	if k.FP == k2.FP || k.TrimFP != k2.TrimFP {
		t.Fatal("TrimFP must equal for values differing only in surrounding white space")
	}
}

func TestHelmReleaseTransformDropsPayload(t *testing.T) {
	manifest := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: " +
		base64.StdEncoding.EncodeToString([]byte(secretValues[0])) + "\nstringData:\n  token: " + secretValues[3] + "\n"
	in := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.rel.v3", Namespace: "app",
		Labels: map[string]string{"owner": "helm", "name": "rel", "status": "deployed", "version": "3"}},
		Type: HelmReleaseType, Data: map[string][]byte{"release": helmPayloadIn("app", manifest)}}
	out, _ := newTransformer().HelmRelease(in)
	rec := out.(*model.HelmRelease)
	assertNoValues(t, "helm record", rec)
	if rec.DecodeErr != "" || rec.Release != "rel" || rec.Revision != 3 || rec.Status != "deployed" {
		t.Fatalf("release: %+v", rec)
	}
	if len(rec.Expectations) != 1 || !reflect.DeepEqual(rec.Expectations[0].Keys, []string{"password", "token"}) ||
		rec.Expectations[0].Name != "creds" || rec.Expectations[0].Namespace != "app" {
		t.Fatalf("expectations: %+v", rec.Expectations)
	}
	if in.Data != nil {
		t.Fatal("payload must be dropped")
	}

	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.bad.v1", Namespace: "app",
		Labels: map[string]string{"owner": "helm", "name": "bad", "status": "deployed", "version": "1"}},
		Type: HelmReleaseType, Data: map[string][]byte{"release": []byte("H4sIAAAA-not-gzip")}}
	out, _ = newTransformer().HelmRelease(bad)
	if r := out.(*model.HelmRelease); r.DecodeErr == "" || len(r.Expectations) != 0 {
		t.Fatalf("corrupt payload must give a decode error: %+v", r)
	}
}

func boolp(b bool) *bool { return &b }

func TestPodTransform(t *testing.T) {
	ctrl := true
	started := metav1.NewTime(time.Unix(5000, 0))
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api-7d9f-x", Namespace: "app",
			Labels:          map[string]string{"pod-template-hash": "7d9f"},
			Annotations:     map[string]string{"reloader.stakater.com/auto": "true"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "api-7d9f", Controller: &ctrl}}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "api",
			// Empty names pass validation and the kubelet skips them; a
			// repeated name is one use.
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}, {Name: ""}, {Name: "mirror"}, {Name: "regcred"}},
			InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "init-s"}, Key: "k"}}}}}},
			Containers: []corev1.Container{{Name: "app",
				Env: []corev1.EnvVar{{Name: "A", Value: "literal-not-a-ref"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s1"}, Key: "b", Optional: boolp(true)}}}},
				EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s2"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "v1", MountPath: "/v1"}, {Name: "v2", MountPath: "/v2/f", SubPath: "f"}, {Name: "p", MountPath: "/p"}},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dbg"}, Optional: boolp(true)}}}}}},
			Volumes: []corev1.Volume{
				{Name: "v1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca"}}}}},
				{Name: "v2", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sub"}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}, Items: []corev1.KeyToPath{{Key: "tls.key", Path: "k"}}}}}}}},
				{Name: "unmounted", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "orphan", Optional: boolp(true)}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}},
	}
	out, _ := newTransformer().Pod(in)
	rec := out.(*model.Pod)
	want := []model.SecretUse{
		{Secret: "init-s", Key: "k", Via: model.ViaEnv, Container: "init"},
		{Secret: "s1", Key: "b", Optional: true, Via: model.ViaEnv, Container: "app"},
		{Secret: "s2", Via: model.ViaEnvFrom, Container: "app"},
		{Secret: "vol", Key: "ca.crt", Via: model.ViaVolume, Container: "app"},
		{Secret: "sub", Via: model.ViaVolumeSub, Container: "app"},
		{Secret: "proj", Key: "tls.key", Via: model.ViaProjected, Container: "app"},
		{Secret: "dbg", Optional: true, Via: model.ViaEnvFrom, Container: "debug"},
		{Secret: "orphan", Optional: true, Via: model.ViaVolume},
		{Secret: "regcred", Via: model.ViaImagePull},
		{Secret: "mirror", Via: model.ViaImagePull},
	}
	if !reflect.DeepEqual(rec.Uses, want) {
		t.Fatalf("uses:\n got %+v\nwant %+v", rec.Uses, want)
	}
	if rec.Workload != (model.Workload{Kind: "Deployment", Name: "api"}) {
		t.Fatalf("workload: %+v", rec.Workload)
	}
	if rec.ServiceAccount != "api" || rec.Phase != "Running" || !rec.StartTime.Equal(started.Time) || rec.Terminating {
		t.Fatalf("pod fields: %+v", rec)
	}
	deleted := metav1.NewTime(time.Unix(6000, 0))
	in.DeletionTimestamp = &deleted
	if out, _ := newTransformer().Pod(in); !out.(*model.Pod).Terminating {
		t.Fatal("a pod with a deletionTimestamp is not marked Terminating")
	}
	if len(rec.Containers) != 3 || !rec.Containers[1].Running || !rec.Containers[1].StartedAt.Equal(started.Time) || rec.Containers[0].Running {
		t.Fatalf("containers: %+v", rec.Containers)
	}
	if len(rec.ReloadAnnotations) != 1 {
		t.Fatalf("reload annotations: %v", rec.ReloadAnnotations)
	}
}

func TestExternalSecretTransform(t *testing.T) {
	mk := func(apiVersion string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiVersion, "kind": "ExternalSecret",
			"metadata": map[string]any{"name": "db", "namespace": "app", "uid": "e1",
				"annotations": map[string]any{model.AnnExpectedKeys: "EXTRA"}},
			"spec": map[string]any{
				"secretStoreRef":  map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
				"refreshInterval": "15m",
				"target": map[string]any{"template": map[string]any{"mergePolicy": "Merge",
					"data": map[string]any{"DSN": "postgres://{{ .user }}"},
					"templateFrom": []any{map[string]any{"configMap": map[string]any{"name": "tpl", "items": []any{
						map[string]any{"key": "config.yaml"}, map[string]any{"key": "dyn", "templateAs": "KeysAndValues"}}}}}}},
				"data": []any{map[string]any{"secretKey": "user", "remoteRef": map[string]any{"key": "db/user"}}},
				"dataFrom": []any{map[string]any{"find": map[string]any{"name": map[string]any{"regexp": ".*"}}},
					map[string]any{"sourceRef": map[string]any{"generatorRef": map[string]any{"kind": "Password", "name": "pw"}}},
					map[string]any{"sourceRef": map[string]any{"storeRef": map[string]any{"name": "other"}}, "extract": map[string]any{"key": "k"}}},
			},
			"status": map[string]any{"refreshTime": "2026-01-01T00:00:00Z",
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "SecretSynced"}}},
		}}
	}
	for _, v := range []string{"external-secrets.io/v1", "external-secrets.io/v1beta1"} {
		out, _ := newTransformer().ExternalSecret(mk(v))
		rec := out.(*model.ExternalSecret)
		if rec.DecodeErr != "" || rec.Target != "db" || rec.CreationPolicy != "Owner" || rec.DeletionPolicy != "Retain" ||
			rec.StoreKind != "ClusterSecretStore" || rec.StoreName != "vault" || rec.RefreshInterval != 15*time.Minute ||
			!rec.RefreshIntervalSet || rec.Ready.Status != "True" || rec.RefreshTime.IsZero() || rec.DataFromFind != 1 ||
			rec.DataFrom != 3 || rec.DataFromGenerators != 1 || rec.TemplateMergePolicy != "Merge" || rec.APIVersion != v {
			t.Fatalf("%s: record %+v", v, rec)
		}
		if !reflect.DeepEqual(rec.DataKeys, []string{"user"}) || !reflect.DeepEqual(rec.TemplateKeys, []string{"DSN", "config.yaml"}) ||
			!reflect.DeepEqual(rec.ExpectedKeys, []string{"EXTRA"}) {
			t.Fatalf("%s: keys %v %v %v", v, rec.DataKeys, rec.TemplateKeys, rec.ExpectedKeys)
		}
	}
	gone := mk("external-secrets.io/v1")
	gone.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(7000, 0)})
	if out, _ := newTransformer().ExternalSecret(gone); !out.(*model.ExternalSecret).Deleting {
		t.Fatal("an ExternalSecret with a deletionTimestamp is not marked Deleting")
	}
	// A spec of the wrong shape is a decode error on the record, not a crash.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "bad", "namespace": "app"}, "spec": map[string]any{"data": "not-a-list"}}}
	out, _ := newTransformer().ExternalSecret(bad)
	if rec := out.(*model.ExternalSecret); rec.DecodeErr == "" || rec.Name != "bad" {
		t.Fatalf("bad spec: %+v", rec)
	}
}

func TestSecretStoreAuthResolution(t *testing.T) {
	cases := []struct {
		kind, ns string
		provider map[string]any
		authType string
		sa       *model.Ref
		clientID bool
	}{
		{"SecretStore", "app", map[string]any{"aws": map[string]any{"service": "SecretsManager", "auth": map[string]any{"jwt": map[string]any{"serviceAccountRef": map[string]any{"name": "eso"}}}}}, "jwt", &model.Ref{Namespace: "app", Name: "eso"}, false},
		{"ClusterSecretStore", "", map[string]any{"aws": map[string]any{"service": "SecretsManager", "auth": map[string]any{"jwt": map[string]any{"serviceAccountRef": map[string]any{"name": "eso", "namespace": "infra"}}}}}, "jwt", &model.Ref{Namespace: "infra", Name: "eso"}, false},
		{"SecretStore", "app", map[string]any{"aws": map[string]any{"service": "SecretsManager"}}, "ambient", nil, false},
		{"SecretStore", "app", map[string]any{"azurekv": map[string]any{"authType": "WorkloadIdentity", "serviceAccountRef": map[string]any{"name": "wi"}}}, "workload_identity", &model.Ref{Namespace: "app", Name: "wi"}, false},
		{"SecretStore", "app", map[string]any{"azurekv": map[string]any{"authType": "WorkloadIdentity", "serviceAccountRef": map[string]any{"name": "wi"}, "authSecretRef": map[string]any{"clientId": map[string]any{"name": "s", "key": "id"}}}}, "workload_identity", &model.Ref{Namespace: "app", Name: "wi"}, true},
		{"SecretStore", "app", map[string]any{"gcpsm": map[string]any{"auth": map[string]any{"workloadIdentity": map[string]any{"serviceAccountRef": map[string]any{"name": "gsa"}}}}}, "workload_identity", &model.Ref{Namespace: "app", Name: "gsa"}, false},
		{"SecretStore", "app", map[string]any{"fake": map[string]any{"data": []any{}}}, "", nil, false},
	}
	for i, c := range cases {
		md := map[string]any{"name": "s"}
		if c.ns != "" {
			md["namespace"] = c.ns
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "external-secrets.io/v1", "kind": c.kind,
			"metadata": md, "spec": map[string]any{"provider": c.provider}}}
		out, _ := newTransformer().SecretStore(c.kind)(u)
		rec := out.(*model.SecretStore)
		if rec.AuthType != c.authType || !reflect.DeepEqual(rec.AuthSA, c.sa) || rec.ClientIDSet != c.clientID || rec.StoreKind != c.kind {
			t.Errorf("case %d: got type=%q sa=%+v clientID=%v", i, rec.AuthType, rec.AuthSA, rec.ClientIDSet)
		}
		for name := range c.provider {
			if rec.Provider != name {
				t.Errorf("case %d: provider %q want %q", i, rec.Provider, name)
			}
		}
	}
}

func TestCreationPolicyApplied(t *testing.T) {
	entry := func(op metav1.ManagedFieldsOperationType, sub, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "m", Operation: op, Subresource: sub, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	withPolicy := `{"f:spec":{"f:target":{"f:name":{},"f:creationPolicy":{}}}}`
	without := `{"f:spec":{"f:target":{"f:name":{}},"f:data":{}}}`
	cases := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{"apply with policy", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationApply, "", withPolicy)}, "set"},
		{"apply without policy", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationApply, "", without)}, "unset"},
		{"one of two appliers sets it", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationApply, "", without), entry(metav1.ManagedFieldsOperationApply, "", withPolicy)}, "set"},
		{"update owns defaults: unknowable", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationUpdate, "", without)}, ""},
		{"status apply ignored", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationApply, "status", `{"f:status":{}}`)}, ""},
		{"malformed ignored", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationApply, "", `{"f:spec":`)}, ""},
		{"metadata-only apply", []metav1.ManagedFieldsEntry{entry(metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:labels":{}}}`)}, ""},
	}
	for _, c := range cases {
		if got := creationPolicyApplied(c.entries); got != c.want {
			t.Errorf("%s: got %q want %q", c.name, got, c.want)
		}
	}
}

func TestDecodeErrorsCountedOncePerVersion(t *testing.T) {
	tr := newTransformer()
	mk := func(rv, la string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "u", ResourceVersion: rv,
			Annotations: map[string]string{model.AnnLastApplied: la}}}
	}
	huge := `{"kind":"Secret","data":{"k":"` + strings.Repeat("A", 2<<20) + `"}}`
	for i := 0; i < 3; i++ { // a relist transforms the same version again
		_, _ = tr.Secret(mk("1", `{"kind":`))
	}
	_, _ = tr.Secret(mk("2", huge))
	got := tr.DecodeErrors()
	if got[[3]string{"secrets", "last-applied", "malformed"}] != 1 || got[[3]string{"secrets", "last-applied", "too_large"}] != 1 {
		t.Fatalf("decode errors: %v", got)
	}
}

func TestStoreAndAppDecodeErrorsCounted(t *testing.T) {
	tr := newTransformer()
	st := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "SecretStore",
		"metadata": map[string]any{"name": "s", "namespace": "ns", "uid": "u1", "resourceVersion": "1"},
		"spec":     map[string]any{"provider": map[string]any{"aws": "not-an-object"}}}}
	app := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u2", "resourceVersion": "1"},
		"spec":     map[string]any{"ignoreDifferences": "not-a-list"}}}
	out, _ := tr.SecretStore("SecretStore")(st)
	if out.(*model.SecretStore).DecodeErr == "" {
		t.Fatal("a malformed store must carry a decode error")
	}
	out, _ = tr.Application(app)
	if out.(*model.ArgoApp).DecodeErr == "" {
		t.Fatal("a malformed Application must carry a decode error")
	}
	got := tr.DecodeErrors()
	if got[[3]string{"secretstores", "spec", "malformed"}] != 1 || got[[3]string{"applications", "spec", "malformed"}] != 1 {
		t.Fatalf("decode errors: %v", got)
	}
}

func keyOf(ks model.KeySet, name string) model.KeyInfo {
	ki, _ := ks.Get(name)
	return ki
}

func fpOf(l model.FPList, name string) model.Fingerprint {
	fp, _ := l.Get(name)
	return fp
}

func TestWorkloadOf(t *testing.T) {
	ctrl := true
	mk := func(name string, labels map[string]string, kind, owner string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: &ctrl}}
		}
		return p
	}
	cases := []struct {
		pod  *corev1.Pod
		want model.Workload
	}{
		{mk("api-7d9f-x", map[string]string{"pod-template-hash": "7d9f"}, "ReplicaSet", "api-7d9f"), model.Workload{Kind: "Deployment", Name: "api"}},
		// Argo Rollouts: the ReplicaSet belongs to a Rollout; its pods carry
		// rollouts-pod-template-hash instead of pod-template-hash.
		{mk("web-6c5b8d-q", map[string]string{"rollouts-pod-template-hash": "6c5b8d"}, "ReplicaSet", "web-6c5b8d"), model.Workload{Kind: "Rollout", Name: "web"}},
		{mk("rs-x", nil, "ReplicaSet", "bare-rs"), model.Workload{Kind: "ReplicaSet", Name: "bare-rs"}},
		// A CronJob's Job is "<cronjob>-<minutes since the epoch>"
		// (29458080 is 2026-01-04 00:00 UTC).
		{mk("backup-29458080-abcde", nil, "Job", "backup-29458080"), model.Workload{Kind: "CronJob", Name: "backup"}},
		{mk("db-backup-nightly-29458080-x", nil, "Job", "db-backup-nightly-29458080"), model.Workload{Kind: "CronJob", Name: "db-backup-nightly"}},
		{mk("migrate-2-x", nil, "Job", "migrate-2"), model.Workload{Kind: "Job", Name: "migrate-2"}},
		{mk("migrate-20240101-x", nil, "Job", "migrate-20240101"), model.Workload{Kind: "Job", Name: "migrate-20240101"}},
		{mk("ss-0", nil, "StatefulSet", "ss"), model.Workload{Kind: "StatefulSet", Name: "ss"}},
		{mk("solo", nil, "", ""), model.Workload{Kind: "Pod", Name: "solo"}},
	}
	for _, c := range cases {
		if got := workloadOf(c.pod); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.pod.Name, got, c.want)
		}
	}
}

// helmPayloadIn is a release payload of namespace ns (Helm writes the release's
// namespace into it: manifests without one are rendered there).
func helmPayloadIn(ns, manifest string) []byte {
	return helmpayload.Release{Name: "rel", Namespace: ns, Version: 3, Manifest: manifest}.Payload()
}

// A Kustomization keeps driftwatch.io/ignore (and the skip selectors), and no
// other annotation: what View.Meta reads for it comes from here.
func TestKustomizationKeepsTheIgnoreAnnotation(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": "flux-system", "annotations": map[string]any{
			model.AnnIgnore: "flux_substitute", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		"spec": map[string]any{"path": "./", "sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"}},
	}}
	out, err := newTransformer().Kustomization(u)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := out.(*model.FluxKustomization)
	if !ok {
		t.Fatalf("%T", out)
	}
	if want := map[string]string{model.AnnIgnore: "flux_substitute"}; !reflect.DeepEqual(k.Annotations, want) {
		t.Errorf("annotations %v, want %v", k.Annotations, want)
	}
	if !k.Ignores("flux_substitute") {
		t.Error("the record does not ignore flux_substitute")
	}
}
