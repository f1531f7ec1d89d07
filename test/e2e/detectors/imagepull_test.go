package detectors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// imagePullSecrets are readers, never expectations. On the real apiserver the
// ServiceAccount admission plugin copies a ServiceAccount's imagePullSecrets
// into a pod created without any (and only then: a pod naming its own keeps
// them), so the pod's spec is what the agent reads. The Deployment's pods
// (made by the real controller-manager) pull with sa-pull, which does not
// exist: no finding (the kubelet fails loudly on it), yet the Secret is in
// the inventory and its page names the readers. own-pull lacks a key its
// annotation expects: a finding that names its reader, without the consumer
// series the page alerts need.
func TestImagePullSecretsAreReaders(t *testing.T) {
	c := cluster.Get(t)
	ctx := ctxT(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, `
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
imagePullSecrets: [{name: sa-pull}]
---
apiVersion: v1
kind: Secret
metadata:
  name: own-pull
  annotations: {driftwatch.io/expected-keys: ".dockerconfigjson, .dockercfg"}
type: kubernetes.io/dockerconfigjson
stringData: {.dockerconfigjson: '{"auths":{}}'}
`)
	c.Apply(t, ns, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: builder
      containers: [{name: app, image: registry.example/web:1}]
---
apiVersion: v1
kind: Pod
metadata: {name: own}
spec:
  serviceAccountName: builder
  imagePullSecrets: [{name: own-pull}]
  containers: [{name: app, image: registry.example/own:1}]
`)
	// What admission did, read back from the API.
	deadline := time.Now().Add(wait)
	var webPods []corev1.Pod
	for {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if webPods = pods.Items; len(webPods) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Deployment has %d pods, want 2", len(webPods))
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, p := range webPods {
		if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "sa-pull" {
			t.Fatalf("pod %s: imagePullSecrets %v; the ServiceAccount admission plugin should have copied sa-pull", p.Name, p.Spec.ImagePullSecrets)
		}
	}
	own, err := c.Client.CoreV1().Pods(ns).Get(ctx, "own", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(own.Spec.ImagePullSecrets) != 1 || own.Spec.ImagePullSecrets[0].Name != "own-pull" {
		t.Fatalf("pod own: imagePullSecrets %v, want its own only", own.Spec.ImagePullSecrets)
	}
	t.Logf("fact: kube-apiserver admission gave the Deployment's pods the ServiceAccount's imagePullSecrets %v; a pod naming its own kept %v",
		webPods[0].Spec.ImagePullSecrets, own.Spec.ImagePullSecrets)

	a := c.StartAgent(t, "--namespaces", ns, "--inventory", "--ui.secret-page=true")
	a.WaitReady(t, wait)
	// The finding of own-pull, and nothing about sa-pull: no absent, and no
	// short_consumer_pods (the page alerts' consumer condition) for either.
	expectFindings(t, a, ns,
		series("driftwatch_secret_missing_key", `key=".dockercfg",namespace="`+ns+`",optional="false",secret="own-pull",source="annotation"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="own-pull",source="annotation"`, 1),
	)
	// The inventory: each Secret and the workloads that pull with it.
	a.WaitForSeries(t, "driftwatch_secret_consumer_pods", map[string]string{"namespace": ns, "secret": "sa-pull", "workload_kind": "Deployment", "workload": "web"}, wait)
	a.WaitForSeries(t, "driftwatch_secret_consumer_pods", map[string]string{"namespace": ns, "secret": "own-pull", "workload_kind": "Pod", "workload": "own"}, wait)
	all, err := a.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scrape.Find(all, "driftwatch_secret_consumer_pods", map[string]string{"namespace": ns}) {
		if s.Labels["secret"] == "sa-pull" && (s.Labels["workload"] != "web" || s.Value != 2) {
			t.Errorf("sa-pull: %s; want Deployment web with 2 pods only (pod own names its own pull Secret)", s)
		}
	}
	// Who reads own-pull, on its finding.
	code, body, err := a.Get("/api/v1/findings?namespace=" + ns)
	if err != nil || code != 200 {
		t.Fatalf("/api/v1/findings: %d %v", code, err)
	}
	var rep struct {
		Findings []struct {
			Metric    string
			Object    struct{ Name string }
			Consumers []struct {
				Kind, Name string
				Pods       int
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	named := false
	for _, f := range rep.Findings {
		if f.Metric == "driftwatch_secret_missing_key" && f.Object.Name == "own-pull" {
			named = len(f.Consumers) == 1 && f.Consumers[0].Kind == "Pod" && f.Consumers[0].Name == "own" && f.Consumers[0].Pods == 1
		}
	}
	if !named {
		t.Errorf("the own-pull finding does not name pod own as its reader:\n%s", body)
	}
	// The Secret page of an absent pull Secret: its readers, by that way.
	code, body, err = a.Get("/secret/" + ns + "/sa-pull")
	if err != nil || code != 200 || !strings.Contains(body, ">web</text>") || !strings.Contains(body, "2 pods · imagePullSecret") {
		t.Errorf("/secret/%s/sa-pull: %d %v; want Deployment web, 2 pods, by imagePullSecret", ns, code, err)
	}
}
