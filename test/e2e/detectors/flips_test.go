package detectors

import (
	"context"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// Field managers of the flip test: what ESO and client-side `kubectl apply`
// record in managedFields.
const (
	managerESO     = "external-secrets"
	managerKubectl = "kubectl-client-side-apply"
)

// writeSecretData sets one key of a Secret with an Update as fieldManager.
func writeSecretData(t *testing.T, ctx context.Context, c *cluster.Cluster, ns, name, key, value, manager string) {
	t.Helper()
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[key] = []byte(value)
	if _, err := c.Client.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatalf("update Secret %s/%s as %s: %v", ns, name, manager, err)
	}
}

// Two writers fight over a Secret: ESO writes the store's value, someone's
// `kubectl apply` puts the old one back, and so on (A→B→A→B). With
// --flap-threshold 2 the Secret is flapping and the finding names both writers.
// A Secret rotated once (A→B) in the same namespace is never a flip.
func TestSecretFlappingBetweenTwoWriters(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx := ctxT(t)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"PASS": []byte("pw-old-e2e")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "rotated"}, Data: map[string][]byte{"TOKEN": []byte("tok-1-e2e")}},
	} {
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{FieldManager: managerKubectl}); err != nil {
			t.Fatal(err)
		}
	}
	a := c.StartAgent(t, "--namespaces", ns, "--flap-threshold", "2")
	a.WaitReady(t, wait)
	expectFindings(t, a, ns)

	writeSecretData(t, ctx, c, ns, "rotated", "TOKEN", "tok-2-e2e", managerESO)
	// managedFields times have one-second resolution: a second between writes
	// keeps "who wrote last" unambiguous, as it is between real writers.
	for i, w := range []struct{ value, manager string }{
		{"pw-new-e2e", managerESO},     // A→B: a rotation
		{"pw-old-e2e", managerKubectl}, // B→A: flip 1
		{"pw-new-e2e", managerESO},     // A→B: flip 2
	} {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond)
		}
		writeSecretData(t, ctx, c, ns, "db", "PASS", w.value, w.manager)
	}
	expectFindings(t, a, ns,
		series("driftwatch_secret_flapping", `namespace="`+ns+`",secret="db",writers="`+managerESO+`,`+managerKubectl+`"`, 2),
	)
	if s := a.WaitForSeries(t, "driftwatch_secret_flips_total", map[string]string{"namespace": ns, "secret": "db"}, wait); s.Value != 2 {
		t.Fatalf("driftwatch_secret_flips_total = %g, want 2", s.Value)
	}
	a.WaitForNoSeries(t, "driftwatch_secret_flips_total", map[string]string{"namespace": ns, "secret": "rotated"}, wait)
}

// markRunning sets a pod's status through the status subresource, as a kubelet
// would (none runs here): Running, started at started, every container running
// since started with restarts restarts.
func markRunning(t *testing.T, ctx context.Context, c *cluster.Cluster, ns, name string, started time.Time, restarts int32) {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.StartTime == nil {
		st := metav1.NewTime(started)
		p.Status.StartTime = &st
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(started)}}
	p.Status.ContainerStatuses = nil
	for _, ctr := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, ImageID: "docker.io/" + ctr.Image + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Ready: true, Started: ptr(true), RestartCount: restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		})
	}
	if _, err := c.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of pod %s/%s: %v", ns, name, err)
	}
}

func ptr[T any](v T) *T { return &v }

// newestDataWrite is the newest managedFields time of the Secrets (what the
// agent derives the last data change from at start-up).
func newestDataWrite(t *testing.T, ctx context.Context, c *cluster.Cluster, ns string, names ...string) time.Time {
	t.Helper()
	var newest time.Time
	for _, n := range names {
		s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range s.ManagedFields {
			if m.Time != nil && m.Time.After(newest) {
				newest = m.Time.Time
			}
		}
	}
	if newest.IsZero() {
		t.Fatal("the Secrets have no managedFields times")
	}
	return newest
}

// Pods that read a Secret once at start (env secretKeyRef, envFrom, a secret
// volume mounted with subPath): changing the Secret's data after the container
// started makes them stale, rolled up per workload (a Deployment's two replicas
// are one workload series with 2 pods); a plain secret volume is refreshed by
// the kubelet and never stale; changing only a label of a Secret changes
// nothing. A container restart after the change clears its finding. Pods have
// no kubelet here: the test writes their status through the status subresource.
func TestStalePodsAfterSecretChange(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx := ctxT(t)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {PASS: pw-one-e2e, USER: app-e2e}
---
apiVersion: v1
kind: Secret
metadata: {name: cfg, labels: {team: web}}
stringData: {URL: "https://cfg.e2e"}
`)
	c.Apply(t, ns, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: app
        image: example/app:1
        env:
        - {name: DB_PASS, valueFrom: {secretKeyRef: {name: db, key: PASS}}}
---
apiVersion: v1
kind: Pod
metadata: {name: cert}
spec:
  containers:
  - name: proxy
    image: example/proxy:1
    volumeMounts: [{name: db, mountPath: /etc/db/pass, subPath: PASS}]
  volumes: [{name: db, secret: {secretName: db}}]
---
apiVersion: v1
kind: Pod
metadata: {name: files}
spec:
  containers:
  - name: reader
    image: example/reader:1
    volumeMounts: [{name: db, mountPath: /etc/db}]
  volumes: [{name: db, secret: {secretName: db}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: web
    image: example/web:1
    envFrom: [{secretRef: {name: cfg}}]
`)
	// The Deployment's pods, made by the real controller-manager.
	var apiPods []string
	deadline := time.Now().Add(wait)
	for len(apiPods) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the Deployment's pods: %v", apiPods)
		}
		time.Sleep(200 * time.Millisecond)
		l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
		if err != nil {
			t.Fatal(err)
		}
		apiPods = apiPods[:0]
		for _, p := range l.Items {
			apiPods = append(apiPods, p.Name)
		}
	}
	sort.Strings(apiPods)

	// The containers started after the Secrets were last written (managedFields
	// times are whole seconds), and in the past.
	started := newestDataWrite(t, ctx, c, ns, "db", "cfg").Add(time.Second)
	for time.Now().Before(started.Add(time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range append([]string{"cert", "files", "web"}, apiPods...) {
		markRunning(t, ctx, c, ns, p, started, 0)
	}

	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	// The detector has looked at the pods' Secrets (start-up estimate from
	// managedFields) and found nothing stale.
	for _, s := range []string{"db", "cfg"} {
		a.WaitForSeries(t, "driftwatch_secret_last_data_change_timestamp_seconds",
			map[string]string{"namespace": ns, "secret": s, "source": "managed_fields"}, wait)
	}
	expectFindings(t, a, ns)

	// Only a label of cfg changes (re-applied by the manager that owns its data,
	// which moves that manager's managedFields time): not a data change.
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: cfg, labels: {team: web, tier: frontend}}
stringData: {URL: "https://cfg.e2e"}
`)
	// Then db's PASS changes: every pod that read it at start runs the old value.
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {PASS: pw-two-e2e, USER: app-e2e}
`)
	stale := func(pod, container, via string) string {
		return seriesAny("driftwatch_pod_stale_secret_seconds", `change_source="observed",container="`+container+`",namespace="`+ns+`",pod="`+pod+`",secret="db",via="`+via+`"`)
	}
	workload := func(kind, name string, pods float64) string {
		return series("driftwatch_workload_stale_pods", `change_source="observed",namespace="`+ns+`",secret="db",workload="`+name+`",workload_kind="`+kind+`"`, pods)
	}
	expectFindingsLoose(t, a, ns,
		stale(apiPods[0], "app", "env"),
		stale(apiPods[1], "app", "env"),
		stale("cert", "proxy", "volume_subpath"),
		workload("Deployment", "api", 2),
		workload("Pod", "cert", 1),
	)
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels["tier"] != "frontend" {
		t.Fatalf("cfg's label change did not land: %v", s.Labels)
	}

	// One replica's container restarts after the change (a second later, so its
	// whole-second startedAt is after the change the agent observed).
	time.Sleep(1100 * time.Millisecond)
	markRunning(t, ctx, c, ns, apiPods[0], time.Now().Truncate(time.Second), 1)
	expectFindingsLoose(t, a, ns,
		stale(apiPods[1], "app", "env"),
		stale("cert", "proxy", "volume_subpath"),
		workload("Deployment", "api", 1),
		workload("Pod", "cert", 1),
	)
	// Then the rest.
	now := time.Now().Truncate(time.Second)
	markRunning(t, ctx, c, ns, apiPods[1], now, 1)
	markRunning(t, ctx, c, ns, "cert", now, 1)
	expectFindings(t, a, ns)
}
