package cluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true, ArgoCDCRDs: true}))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// eventually polls f every 100 ms until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAPIServerAnswers(t *testing.T) {
	c := cluster.Get(t)
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.2" {
		t.Errorf("apiserver version %q, want v1.37.2", v.GitVersion)
	}
	b, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx(t))
	if err != nil || string(b) != "ok" {
		t.Fatalf("/readyz: %q %v", b, err)
	}
	// The admin kubeconfig file works with the real kubectl too.
	out, err := c.Kubectl(ctx(t), "", "get", "namespace", "default", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "namespace/default" {
		t.Errorf("kubectl get namespace default: %q", out)
	}
}

func TestNewNamespaceHasDefaultServiceAccount(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	if !strings.HasPrefix(ns, "testnewnamespacehasdefaultserviceaccount-") {
		t.Errorf("namespace %q is not named after the test", ns)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx(t), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The agent's kubeconfig is bound by real RBAC to deploy/manifests/clusterrole.yaml:
// it reads what the ClusterRole lists and nothing else, and writes nothing.
func TestAgentKubeconfigIsRestrictedByRealRBAC(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	agent, err := kubernetes.NewForConfig(c.AgentConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx(t)
	if _, err := agent.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("agent cannot list secrets: %v", err)
	}
	if _, err := agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("agent cannot list pods cluster-wide: %v", err)
	}
	if _, err := agent.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("agent cannot get a serviceaccount: %v", err)
	}
	_, err = agent.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nope"},
		StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("agent creating a secret: got %v, want Forbidden", err)
	}
	if _, err := agent.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent listing configmaps: got %v, want Forbidden", err)
	}
	// CRD-backed resources of the ClusterRole are readable through the same kubeconfig.
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"},
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
	} {
		if _, err := agent.RESTClient().Get().AbsPath("apis", gvr.Group, gvr.Version, "namespaces", ns, gvr.Resource).DoRaw(ctx); err != nil {
			t.Errorf("agent listing %s: %v", gvr, err)
		}
	}
	// Its identity is what the binding names.
	review, err := agent.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != cluster.AgentUser || strings.Contains(strings.Join(u.Groups, ","), "system:masters") {
		t.Errorf("agent identity %q groups %v", u.Username, u.Groups)
	}
}

const esoManifests = `
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata:
  name: fake
spec:
  provider:
    fake:
      data:
        - key: /db/password
          value: s3cr3t
          version: v1
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: db
spec:
  refreshInterval: 1h
  secretStoreRef:
    name: fake
    kind: SecretStore
  target:
    name: db-secret
  data:
    - secretKey: password
      remoteRef:
        key: /db/password
        version: v1
`

// The real ESO controller reconciles a fake-provider ExternalSecret into a Secret.
func TestESOControllerReconcilesExternalSecret(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, esoManifests)
	ctx := ctx(t)

	var secret *corev1.Secret
	eventually(t, 60*time.Second, "ESO to write Secret db-secret", func() error {
		var err error
		secret, err = c.Client.CoreV1().Secrets(ns).Get(ctx, "db-secret", metav1.GetOptions{})
		return err
	})
	if got := string(secret.Data["password"]); got != "s3cr3t" {
		t.Errorf("db-secret password = %q, want s3cr3t", got)
	}
	if secret.Annotations["reconcile.external-secrets.io/data-hash"] == "" {
		t.Errorf("db-secret has no reconcile.external-secrets.io/data-hash annotation: %v", secret.Annotations)
	}
	var managers []string
	for _, mf := range secret.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	if !strings.Contains(strings.Join(managers, " "), "external-secrets") {
		t.Errorf("db-secret managedFields managers %v, want one from external-secrets", managers)
	}
	owned := false
	for _, o := range secret.OwnerReferences {
		owned = owned || (o.Kind == "ExternalSecret" && o.Name == "db")
	}
	if !owned {
		t.Errorf("db-secret ownerReferences %v, want the ExternalSecret", secret.OwnerReferences)
	}

	esGVR := schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	eventually(t, 30*time.Second, "ExternalSecret Ready=True", func() error {
		es, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(es.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})

	// The controller's own metrics parse with the same parser the agent helper uses.
	series, err := scrape.URL(c.ESOMetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	if len(scrape.Find(series, "controller_runtime_reconcile_total", map[string]string{"controller": "externalsecret"})) == 0 {
		t.Errorf("ESO metrics have no controller_runtime_reconcile_total{controller=externalsecret}; %d series", len(series))
	}
}

// Argo CD's Application CRD is installed and its objects are stored.
func TestArgoCDApplicationCRD(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	objs := c.Apply(t, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
spec:
  project: default
  source:
    repoURL: https://example.invalid/guestbook.git
    path: guestbook
    targetRevision: HEAD
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
`)
	if len(objs) != 1 || objs[0].GetUID() == "" {
		t.Fatalf("applied %v", objs)
	}
	repo, _, _ := unstructured.NestedString(objs[0].Object, "spec", "source", "repoURL")
	if repo != "https://example.invalid/guestbook.git" {
		t.Errorf("stored repoURL %q", repo)
	}
}

// The agent helper, gated on the agent's main package existing.
func TestAgentHelperScrapesTheAgent(t *testing.T) {
	c := cluster.Get(t)
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "agent")); err != nil {
		t.Skip("cmd/agent does not exist yet")
	}
	a := c.StartAgent(t)
	a.WaitReady(t, 90*time.Second)
	series, err := a.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if len(series) == 0 {
		t.Fatal("the agent's /metrics has no series")
	}
	if err := a.Stop(); err != nil {
		t.Errorf("agent did not exit cleanly on SIGTERM: %v", err)
	}
}

// Restart hooks: clients reconnect to the same URL, and etcd keeps its data
// across a graceful stop and a SIGKILL. Keep this test last: it takes the
// shared stack down for a while.
func TestRestartAPIServerAndEtcd(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx := ctx(t)
	secrets := c.Client.CoreV1().Secrets(ns)
	var names []string
	mk := func(name string) {
		t.Helper()
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create secret %s: %v", name, err)
		}
		names = append(names, name)
	}
	checkAll := func(when string) {
		t.Helper()
		for _, name := range names {
			if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatalf("%s: secret %s: %v", when, name, err)
			}
		}
	}
	timed := func(what string, f func()) {
		t.Helper()
		t0 := time.Now()
		f()
		t.Logf("%s: %s", what, time.Since(t0).Round(time.Millisecond))
	}
	start := func(what string, f func() error) {
		t.Helper()
		timed(what, func() {
			if err := f(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		})
	}
	apiserverDown := func() {
		t.Helper()
		if _, err := secrets.Get(ctx, names[0], metav1.GetOptions{}); err == nil {
			t.Fatal("the apiserver still answers after it was stopped")
		}
	}
	etcdDown := func() {
		t.Helper()
		eventually(t, 30*time.Second, "the apiserver to report etcd down", func() error {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if b, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx); err == nil {
				return fmt.Errorf("/readyz still %q", b)
			}
			return nil
		})
	}
	mk("before")

	oldPID := c.PIDs()["kube-apiserver"]
	timed("StopAPIServer", c.StopAPIServer)
	apiserverDown()
	start("StartAPIServer", c.StartAPIServer)
	if pid := c.PIDs()["kube-apiserver"]; pid == 0 || pid == oldPID {
		t.Errorf("kube-apiserver pid %d after restart (was %d)", pid, oldPID)
	}
	checkAll("after an apiserver restart")
	mk("after-apiserver-stop")

	timed("KillAPIServer", c.KillAPIServer)
	apiserverDown()
	start("StartAPIServer", c.StartAPIServer)
	checkAll("after an apiserver kill")
	mk("after-apiserver-kill")

	timed("StopEtcd", c.StopEtcd)
	timed("apiserver reports etcd down", etcdDown)
	start("StartEtcd (until the apiserver is ready again)", c.StartEtcd)
	checkAll("after an etcd restart")
	mk("after-etcd-stop")

	timed("KillEtcd", c.KillEtcd)
	timed("apiserver reports etcd down", etcdDown)
	start("StartEtcd (until the apiserver is ready again)", c.StartEtcd)
	checkAll("after an etcd kill")
	mk("after-etcd-kill")

	// The controller-manager came back too: a new namespace still gets its ServiceAccount.
	timed("NewNamespace", func() { c.NewNamespace(t) })
}

// A port of the ESO controller taken while it is down (as another process on
// the machine can take one between the moment the stack chooses it and ESO's
// bind) does not fail the stack: ESO exits with "address already in use" and
// is started again on new ports. Both of its ports: the health endpoint's bind
// fails at once, the metrics port's after the health endpoint answers.
func TestESOStartsAgainOnNewPortsWhenOneIsTaken(t *testing.T) {
	c := cluster.Get(t)
	for _, which := range []string{"health", "metrics"} {
		t.Run(which, func(t *testing.T) {
			oldMetrics, oldLive := c.ESOMetricsURL, c.ESOLiveURL()
			url := oldLive
			if which == "metrics" {
				url = oldMetrics
			}
			addr := strings.SplitN(strings.TrimPrefix(url, "http://"), "/", 2)[0]
			logPath := filepath.Join(c.LogDir, "external-secrets.log")
			before, _ := os.ReadFile(logPath)
			c.StopESOController()
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("take ESO's %s port %s: %v", which, addr, err)
			}
			defer l.Close()
			if err := c.StartESOController(); err != nil {
				t.Fatalf("ESO with its %s port taken: %v", which, err)
			}
			if c.ESOMetricsURL == oldMetrics || c.ESOLiveURL() == oldLive {
				t.Fatalf("ESO still on %s and %s, one of them the port this test holds", c.ESOMetricsURL, c.ESOLiveURL())
			}
			after, _ := os.ReadFile(logPath)
			if len(after) < len(before) || !strings.Contains(string(after[len(before):]), "address already in use") {
				t.Errorf("ESO's log does not show the refused bind: the retry was not exercised")
			}
			series, err := scrape.URL(c.ESOMetricsURL)
			if err != nil || len(series) == 0 {
				t.Fatalf("ESO's metrics on the new port %s: %d series, %v", c.ESOMetricsURL, len(series), err)
			}
		})
	}
}
