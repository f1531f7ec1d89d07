package modeltest_test

// The builders claim to build records "the way the transforms of
// internal/transform would": these tests hold them to it by running the real
// transforms on API objects shaped as the apiserver returns them (for
// ExternalSecrets: after the ESO v0.20.4 CRD's defaulting of refreshInterval,
// creationPolicy and deletionPolicy) and comparing the whole records.

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/helmpayload"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
	"github.com/driftwatch/driftwatch/internal/transform"
)

func transformer() *transform.Transformer { return &transform.Transformer{FP: mt.FP} }

func meta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ntransform: %+v\n  builder: %+v", what, got, want)
	}
}

func TestSecretValuesIsTheSecretTransform(t *testing.T) {
	kv := []string{"user", "app", "password", "pw\n", "crlf", "a\r\nb", "empty", ""}
	in := &corev1.Secret{ObjectMeta: meta("shop", "db"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for i := 0; i < len(kv); i += 2 {
		in.Data[kv[i]] = []byte(kv[i+1])
	}
	out, err := transformer().Secret(in)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "SecretValues", out, mt.SecretValues("shop", "db", kv...))
	// The white-space variants are told apart the way the transform tells them.
	if k, _ := mt.SecretValues("shop", "db", kv...).Keys.Get("password"); k.TrimFP == k.FP || k.TrimFP != mt.FP.Sum([]byte("pw")) {
		t.Errorf("password: TrimFP is not the fingerprint of the trimmed value: %+v", k)
	}
}

func TestPodIsThePodTransform(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	yes := true
	in := &corev1.Pod{ObjectMeta: meta("shop", "web"),
		Spec: corev1.PodSpec{ServiceAccountName: "default",
			ImagePullSecrets: []corev1.LocalObjectReference{ref("regcred")},
			Containers: []corev1.Container{{Name: "app",
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("db"), Key: "USER"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("db"), Key: "PASS", Optional: &yes}}},
				},
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("cfg")}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("extra"), Optional: &yes}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}, {Name: "dex", MountPath: "/dex"}, {Name: "p", MountPath: "/p"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "c"}}}}},
				{Name: "dex", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dex", Optional: &yes, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "c"}}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: ref("bundle"), Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca"}}}}}}}},
			}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	out, err := transformer().Pod(in)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Pod", out, mt.Pod("shop", "web", mt.Env("db", "USER"), mt.OptEnv("db", "PASS"), mt.EnvFrom("cfg"), mt.OptEnvFrom("extra"),
		mt.VolItem("tls", "tls.crt"), mt.OptVolItem("dex", "ca.crt"), mt.ProjItem("bundle", "ca.crt"), mt.ImagePull("regcred")))

	// A replica of a Deployment: owned by the ReplicaSet <deploy>-<hash>.
	ctrl := true
	rs := &corev1.Pod{ObjectMeta: meta("shop", "web-7d9c5b-00002"), Spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	rs.Labels = map[string]string{"pod-template-hash": "7d9c5b"}
	rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c5b", Controller: &ctrl}}
	out, err = transformer().Pod(rs)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "DeployPod", out, mt.DeployPod("shop", "web", 2))
}

func TestESIsTheExternalSecretTransform(t *testing.T) {
	ts := mt.T0.Format(time.RFC3339)
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "db", "namespace": "shop", "uid": "uid-shop-db"},
		"spec": map[string]any{
			"secretStoreRef":  map[string]any{"kind": "SecretStore", "name": "vault"},
			"refreshInterval": "1h", // the CRD's default
			"target":          map[string]any{"creationPolicy": "Owner", "deletionPolicy": "Retain"},
			"data": []any{map[string]any{"secretKey": "USER", "remoteRef": map[string]any{"key": "db/user"}},
				map[string]any{"secretKey": "PASS", "remoteRef": map[string]any{"key": "db/pass"}}},
		},
		"status": map[string]any{"refreshTime": ts, "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "SecretSynced", "lastTransitionTime": ts}}},
	}}
	out, err := transformer().ExternalSecret(in)
	if err != nil {
		t.Fatal(err)
	}
	// metav1.Time decodes into the local zone: the same instant as T0 (UTC).
	e := out.(*model.ExternalSecret)
	e.Ready.LastTransitionTime, e.RefreshTime = e.Ready.LastTransitionTime.UTC(), e.RefreshTime.UTC()
	same(t, "ES", e, mt.ES("shop", "db", mt.ESData("USER", "PASS")))
}

func TestSecretStoreIsTheStoreTransform(t *testing.T) {
	store := func(kind, ns string) *unstructured.Unstructured {
		md := map[string]any{"name": "vault", "uid": "uid-" + ns + "-vault"}
		if ns != "" {
			md["namespace"] = ns
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": kind, "metadata": md,
			"spec":   map[string]any{"provider": map[string]any{"fake": map[string]any{"data": []any{}}}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Valid"}}},
		}}
	}
	out, err := transformer().SecretStore("SecretStore")(store("SecretStore", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	same(t, "SecretStore", out, mt.SecretStore("shop", "vault"))
	out, err = transformer().SecretStore("ClusterSecretStore")(store("ClusterSecretStore", ""))
	if err != nil {
		t.Fatal(err)
	}
	same(t, "ClusterSecretStore", out, mt.ClusterSecretStore("vault"))
}

func TestServiceAccountIsTheTransform(t *testing.T) {
	in := &corev1.ServiceAccount{ObjectMeta: meta("shop", "reader")}
	in.Annotations = map[string]string{model.AnnAWSRoleARN: "arn:aws:iam::1:role/r"}
	out, err := transformer().ServiceAccount(in)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "ServiceAccount", out, mt.ServiceAccount("shop", "reader", model.AnnAWSRoleARN, "arn:aws:iam::1:role/r"))
}

func TestHelmReleaseIsTheTransform(t *testing.T) {
	manifest := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: cHc=\nstringData:\n  token: t\n" +
		"---\napiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: api\nspec:\n  target:\n    name: api-creds\n" +
		"  data:\n  - secretKey: KEY\n    remoteRef:\n      key: k\n"
	in := helmpayload.Release{Name: "shop", Namespace: "shop", Version: 3, Manifest: manifest}.Secret()
	in.ObjectMeta = meta("shop", "sh.helm.release.v1.shop.v3")
	in.Labels = map[string]string{"owner": "helm", "name": "shop", "status": "deployed", "version": "3"}
	out, err := transformer().HelmRelease(in)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "HelmRelease", out, mt.HelmRelease("shop", "shop", 3, "deployed",
		mt.HelmSecret("shop", "creds", "password", "token"), mt.HelmES("shop", "api", "api-creds", "KEY")))
}

func TestAppIsTheApplicationTransform(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "shop", "namespace": "argocd", "uid": "uid-argocd-shop"},
		"spec": map[string]any{
			"ignoreDifferences": []any{map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret",
				"jsonPointers": []any{"/spec/data/0/remoteRef"}}},
			"syncPolicy": map[string]any{"syncOptions": []any{"RespectIgnoreDifferences=true"}},
		},
		"status": map[string]any{"sync": map[string]any{"status": "Synced"},
			"resources": []any{map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret", "namespace": "shop", "name": "x"}}},
	}}
	out, err := transformer().Application(in)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "App", out, mt.App("argocd", "shop", mt.AppRespect(),
		mt.AppIgnore(mt.Ignore("external-secrets.io", "ExternalSecret", []string{"/spec/data/0/remoteRef"}, nil)),
		mt.AppManages("external-secrets.io", "ExternalSecret")))
}

// NewStore puts every kind where the view finds it; the availability helpers
// and the Health fake say what their doc comments say.
func TestStoreAndAvailability(t *testing.T) {
	app := model.Ref{Namespace: "argocd", Name: "shop"}
	s := mt.NewStore(t, mt.Secret("shop", "db", "A"), []*model.Pod{mt.Pod("shop", "p", mt.Env("db", "A"))},
		mt.ES("shop", "db"), mt.SecretStore("shop", "vault"), mt.ClusterSecretStore("vault"), mt.ServiceAccount("shop", "sa"),
		mt.HelmRelease("shop", "rel", 1, "deployed"), mt.App("argocd", "shop"), mt.Namespace("shop"),
		[]any{mt.Desired{App: app, Objects: []model.Declared{{Kind: "Secret", Namespace: "shop", Name: "db"}}}},
		mt.Kustomization("flux-system", "apps"), mt.GitRepository("flux-system", "apps"),
		&model.FluxSource{ObjectMeta: mt.Meta("flux-system", "oci"), Kind: "OCIRepository"},
		&model.FluxSource{ObjectMeta: mt.Meta("flux-system", "bucket"), Kind: "Bucket"},
		&model.FluxSource{ObjectMeta: mt.Meta("flux-system", "generated"), Kind: "ExternalArtifact"})
	got := mt.Read(s, func(v model.View) map[model.Resource]int { return v.Counts() })
	for _, r := range model.AllResources {
		if got[r] != 1 {
			t.Errorf("%s: %d records, want 1", r, got[r])
		}
	}
	if d := s.ArgoDesiredApps(); !reflect.DeepEqual(d, []model.Ref{app}) {
		t.Errorf("desired state of %v", d)
	}

	for name, c := range map[string]struct {
		a         model.Availability
		available []model.Resource
	}{
		"All": {mt.All(), model.AllResources},
		"AllBut": {mt.AllBut(model.ResPods, model.ResSecrets), []model.Resource{model.ResServiceAccounts, model.ResExternalSecrets, model.ResSecretStores, model.ResClusterSecretStores, model.ResHelmReleases, model.ResApplications, model.ResNamespaces,
			model.ResKustomizations, model.ResGitRepositories, model.ResOCIRepositories, model.ResBuckets, model.ResExternalArtifacts}},
		"Only":      {mt.Only(model.ResPods), []model.Resource{model.ResPods}},
		"Health":    {model.AvailabilityOf(mt.HealthOnly(model.ResPods).States()), []model.Resource{model.ResPods}},
		"HealthAll": {model.AvailabilityOf(mt.HealthAll().States()), model.AllResources},
	} {
		var got []model.Resource
		for _, r := range model.AllResources {
			if c.a[r] {
				got = append(got, r)
			}
		}
		if !reflect.DeepEqual(got, c.available) {
			t.Errorf("%s: available %v, want %v", name, got, c.available)
		}
	}
	if st := mt.HealthOnly().States(); len(st) != len(model.AllResources) {
		t.Errorf("Health lists %d states, want one per resource", len(st))
	}
}
