package detectors

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/internal/transform"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// The wire decoder against the real apiserver: every Secret and Pod the
// package's tests left (ESO-written Secrets with owner references and
// managedFields, kubectl's client-side apply with its last-applied annotation,
// server-side apply, Pods with every way of reading a Secret including
// imagePullSecrets of their own or copied from their ServiceAccount by the
// admission plugin, status written through the subresource) is listed as protobuf, as the agent's informers
// receive it, and decoded both ways: the typed decoder followed by the
// transform, and the wire decoder. Every record must be identical (the file
// runs last: its name sorts after the others).
func TestWireRecordsEqualTypedOnRealObjects(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: ssa, labels: {app: x, kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}, annotations: {driftwatch.io/expected-keys: "A,B", reloader.stakater.com/match: "true", kustomize.toolkit.fluxcd.io/reconcile: disabled}}
type: kubernetes.io/basic-auth
stringData: {username: admin, password: "  padded\r\n"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app}
imagePullSecrets: [{name: sa-pull}]
---
apiVersion: v1
kind: Pod
metadata: {name: sa-pull}
spec:
  serviceAccountName: app
  containers: [{name: app, image: example/app:1}]
---
apiVersion: v1
kind: Pod
metadata: {name: every-read, labels: {pod-template-hash: abc}, annotations: {secret.reloader.stakater.com/reload: "ssa"}}
spec:
  serviceAccountName: app
  imagePullSecrets: [{name: ssa}, {name: regcred}]
  initContainers:
  - name: init
    image: example/app:1
    envFrom: [{secretRef: {name: ssa, optional: true}}]
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: U, valueFrom: {secretKeyRef: {name: ssa, key: username}}}
    - {name: P, valueFrom: {secretKeyRef: {name: absent, key: password, optional: true}}}
    - {name: F, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumeMounts:
    - {name: whole, mountPath: /w}
    - {name: items, mountPath: /i/x, subPath: x}
    - {name: proj, mountPath: /p}
  volumes:
  - {name: whole, secret: {secretName: ssa}}
  - {name: items, secret: {secretName: ssa, optional: true, items: [{key: username, path: x}]}}
  - name: proj
    projected:
      sources:
      - secret: {name: ssa, items: [{key: password, path: p}]}
      - configMap: {name: cm}
      - serviceAccountToken: {path: token}
  - {name: unmounted, secret: {secretName: other}}
`)
	if p, err := c.Client.CoreV1().Pods(ns).Get(ctxT(t), "sa-pull", metav1.GetOptions{}); err != nil ||
		len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "sa-pull" {
		t.Fatalf("pod sa-pull: the ServiceAccount admission plugin should have copied sa-pull (%v)", err)
	}
	// imagePullSecrets repeated and empty: server-side apply refuses the
	// duplicate (the list is keyed by name), a create keeps both.
	dups := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pull-dups"}, Spec: corev1.PodSpec{
		Containers:       []corev1.Container{{Name: "app", Image: "example/app:1"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "ssa"}, {Name: ""}, {Name: "regcred"}, {Name: "ssa"}}}}
	created, err := c.Client.CoreV1().Pods(ns).Create(ctxT(t), dups, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod with repeated imagePullSecrets: %v", err)
	}
	if len(created.Spec.ImagePullSecrets) != 4 {
		t.Fatalf("the apiserver kept imagePullSecrets %v", created.Spec.ImagePullSecrets)
	}
	// A Secret the real ESO controller writes: its owner reference, labels,
	// annotations and managedFields are ESO's.
	c.Apply(t, ns, fakeStore("wire-store", "db-user", "admin", "api-token", " padded\r\n"))
	c.Apply(t, ns, `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: eso-written}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: wire-store, kind: SecretStore}
  target: {name: eso-written, creationPolicy: Owner}
  data:
  - {secretKey: USER, remoteRef: {key: db-user}}
  - {secretKey: TOKEN, remoteRef: {key: api-token}}
`)
	deadline := time.Now().Add(wait)
	for {
		s, err := c.Client.CoreV1().Secrets(ns).Get(ctxT(t), "eso-written", metav1.GetOptions{})
		if err == nil && len(s.OwnerReferences) > 0 && len(s.Data) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ESO did not write its Secret: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := c.Kubectl(ctxT(t), `apiVersion: v1
kind: Secret
metadata: {name: csa, namespace: `+ns+`}
data: {token: c2VjcmV0LXRva2Vu, key: a2V5}
`, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	for res, atLeast := range map[string]int{"secrets": 3, "pods": 1} { // at least this test's own
		data, err := c.Client.CoreV1().RESTClient().Get().Resource(res).
			SetHeader("Accept", "application/vnd.kubernetes.protobuf").DoRaw(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		n, err := transform.CheckWireDecode(res, data)
		if err != nil {
			t.Fatalf("%s: %v", res, err)
		}
		if n < atLeast {
			t.Fatalf("%s: only %d objects compared", res, n)
		}
		t.Logf("%s: %d records identical both ways", res, n)
	}
	// ExternalSecrets, as JSON (the agent's JSON reader, crdwire.go): every
	// one the package's tests left, some of them reconciled by the real ESO
	// controller (its status, finalizers and managedFields).
	gv := schema.GroupVersion{Group: "external-secrets.io", Version: "v1"}
	data, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/apis/external-secrets.io/v1/externalsecrets").
		SetHeader("Accept", "application/json").DoRaw(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := transform.CheckCRDDecode(gv, data)
	if err != nil {
		t.Fatalf("externalsecrets: %v", err)
	}
	if n < 1 {
		t.Fatalf("externalsecrets: only %d objects compared", n)
	}
	t.Logf("externalsecrets: %d records identical both ways", n)
}
