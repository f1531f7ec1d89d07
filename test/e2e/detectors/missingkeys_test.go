package detectors

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// A pod reads a key through an optional secretKeyRef; the Secret lacks it. The
// pod would start without the variable. The finding must appear, and go away
// when the key is added. Healthy consumers in the same namespace yield nothing.
func TestOptionalKeyRefMissing(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {DB_USER: admin}
---
apiVersion: v1
kind: Secret
metadata: {name: fine}
stringData: {A: one, B: two}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: DB_USER, valueFrom: {secretKeyRef: {name: app, key: DB_USER}}}
    - {name: STRIPE_KEY, valueFrom: {secretKeyRef: {name: app, key: STRIPE_KEY, optional: true}}}
---
apiVersion: v1
kind: Pod
metadata: {name: healthy}
spec:
  containers:
  - name: app
    image: example/app:1
    envFrom: [{secretRef: {name: fine}}]
    env: [{name: B, valueFrom: {secretKeyRef: {name: fine, key: B}}}]
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns,
		series("driftwatch_secret_missing_key", `key="STRIPE_KEY",namespace="`+ns+`",optional="true",secret="app",source="pod"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="true",secret="app",source="pod"`, 1),
		series("driftwatch_secret_missing_key_consumer_pods", `namespace="`+ns+`",secret="app",workload="api",workload_kind="Pod"`, 1),
		series("driftwatch_secret_short_consumer_pods", `namespace="`+ns+`",secret="app",workload="api",workload_kind="Pod"`, 1),
	)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {DB_USER: admin, STRIPE_KEY: sk-live}
`)
	expectFindings(t, a, ns)
}

// A Deployment's pods (created by the real controller-manager, with real owner
// references) read a Secret that does not exist yet: one absent finding for the
// workload, with its pod count; creating the Secret clears it.
func TestDeploymentAbsentSecretGroupedByWorkload(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: checkout}
spec:
  replicas: 3
  selector: {matchLabels: {app: checkout}}
  template:
    metadata: {labels: {app: checkout}}
    spec:
      containers:
      - name: app
        image: example/app:1
        envFrom: [{secretRef: {name: checkout-env}}]
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns,
		series("driftwatch_secret_absent", `namespace="`+ns+`",secret="checkout-env",source="pod"`, 1),
		series("driftwatch_secret_missing_key_consumer_pods", `namespace="`+ns+`",secret="checkout-env",workload="checkout",workload_kind="Deployment"`, 3),
		series("driftwatch_secret_short_consumer_pods", `namespace="`+ns+`",secret="checkout-env",workload="checkout",workload_kind="Deployment"`, 3),
	)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: checkout-env}
stringData: {X: "1"}
`)
	expectFindings(t, a, ns)
}

// The expected-keys annotation: the chart author lists the keys.
func TestExpectedKeysAnnotation(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata:
  name: legacy
  annotations: {driftwatch.io/expected-keys: "URL, TOKEN"}
stringData: {URL: "https://legacy.example"}
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns,
		series("driftwatch_secret_missing_key", `key="TOKEN",namespace="`+ns+`",optional="false",secret="legacy",source="annotation"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="legacy",source="annotation"`, 1),
	)
	_ = time.Second
}

// helm uninstall / kubectl delete -f removes an app's Secret at once while its
// pods drain; a pod on an unreachable node stays Terminating until the node is
// gone. A terminating pod starts no container again: what it reads is no
// finding. No kubelet runs here, so a pod bound to a node keeps its
// deletionTimestamp, as on a dead node. The control pod, not deleted, reads a
// Secret deleted after the draining pod's: its finding proves the agent has
// processed the delete events, and nothing about the draining pod shows.
func TestTerminatingPodsReadNothing(t *testing.T) {
	c := cluster.Get(t)
	ctx := ctxT(t)
	ns := c.NewNamespace(t)
	node := "gone-" + ns
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// No kubelet confirms a graceful delete: force it, or the
		// namespace's deletion would wait for these pods for ever.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for _, p := range []string{"draining", "control"} {
			_ = c.Client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
		_ = c.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	})
	pod := func(name, secret string) string {
		return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  nodeName: ` + node + `
  tolerations: [{operator: Exists}] # no eviction from the kubelet-less node
  containers:
  - name: app
    image: example/app:1
    envFrom: [{secretRef: {name: ` + secret + `}}]
---
apiVersion: v1
kind: Secret
metadata: {name: ` + secret + `}
stringData: {A: ` + name + `}
`
	}
	c.Apply(t, ns, pod("draining", "app-env")+"---"+pod("control", "control-env"))
	started := time.Now() // after the Secrets were written: not stale
	markRunning(t, ctx, c, ns, "draining", started, 0)
	markRunning(t, ctx, c, ns, "control", started, 0)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns)

	pods := c.Client.CoreV1().Pods(ns)
	if err := pods.Delete(ctx, "draining", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(ctx, "draining", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the deleted pod on a node without kubelet is not Terminating: %v", err)
	}
	for _, s := range []string{"app-env", "control-env"} {
		if err := c.Client.CoreV1().Secrets(ns).Delete(ctx, s, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		series("driftwatch_secret_absent", `namespace="`+ns+`",secret="control-env",source="pod"`, 1),
		series("driftwatch_secret_missing_key_consumer_pods", `namespace="`+ns+`",secret="control-env",workload="control",workload_kind="Pod"`, 1),
		series("driftwatch_secret_short_consumer_pods", `namespace="`+ns+`",secret="control-env",workload="control",workload_kind="Pod"`, 1),
	}
	expectFindings(t, a, ns, want...)
	for range 8 { // and it stays so
		time.Sleep(250 * time.Millisecond)
		if got := findings(t, a, ns); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("findings changed:\n  %s", strings.Join(got, "\n  "))
		}
	}
	if p, err := pods.Get(ctx, "draining", metav1.GetOptions{}); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the draining pod was gone before the check ended: %v", err)
	}
}
