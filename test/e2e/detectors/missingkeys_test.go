package detectors

import (
	"testing"
	"time"

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
