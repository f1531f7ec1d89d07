package node

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/node"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// The kube-prometheus-stack shape this step installs: a Prometheus object
// named after a release "kps" in namespace "monitoring", selecting
// ServiceMonitors and PrometheusRules by the release label users set on the
// chart (plus a custom one), in every namespace.
const (
	promNS   = "monitoring"
	promName = "kps"
	// promVersion is the Prometheus test/tools/prometheus builds; the
	// operator generates its configuration and arguments for the version
	// the Prometheus object names.
	promVersion   = "v3.16.0"
	promImage     = "localhost/driftwatch-e2e/prometheus:" + promVersion
	reloaderImage = "localhost/driftwatch-e2e/prometheus-config-reloader:v0.86.1"
	// opKeepFiringFor is the chart's prometheusRule.keepFiringFor here.
	opKeepFiringFor = "10s"
)

// keepField matches a rule's keep_firing_for field (not the words in a
// description or a comment).
var keepField = regexp.MustCompile(`(?m)^\s+keep_firing_for: `)

var prometheusRuleGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}

// testPrometheusOperator: Prometheus the way most clusters run it. The real
// prometheus-operator (v0.86.1, built from the module proxy) runs against
// the stack with its own CRDs; the chart, upgraded with the values a
// kube-prometheus-stack user sets (serviceMonitor and prometheusRule
// enabled, the release label and a custom one, keepFiringFor), ships a
// ServiceMonitor and a PrometheusRule; a Prometheus object selects them by
// those labels. The operator makes the StatefulSet, its configuration Secret
// and rule ConfigMap; the kubelet runs its pod on this node from images
// built offline (Prometheus v3.16.0 with Kubernetes discovery from
// test/tools/prometheus: Debian's 2.42 has none and refuses the operator's
// configuration; the operator module's config reloader); that Prometheus
// discovers the agent pod through the Endpoints with the ServiceAccount
// token the kubelet mounted, scrapes it (plain HTTP, then TLS with basic
// auth once web.* is set), loads driftwatch's rules, answers the dashboards'
// queries and sends to the real Alertmanager (on the host, reached through a
// selector-less Service). A fault made after start pages and resolves.
//
// What the test changes of the operator's input: every `for:` of the
// PrometheusRule the chart rendered is shortened to 5s in the apiserver (as
// promstack shortens the shipped file's), so that a page fires within the
// test; everything else is as helm rendered it.
func testPrometheusOperator(t *testing.T, s *stack) {
	c, n := s.c, s.n
	ctx := ctxT(t, 15*time.Minute)
	t0 := time.Now()
	buildPromImages(t, ctx, n)
	t.Logf("fact: Prometheus and config-reloader images built offline in %s", time.Since(t0).Round(time.Millisecond))

	// --- the operator's CRDs and a Prometheus's stock RBAC -------------------
	dir := tools.PromOperatorDir()
	crds, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no prometheus-operator CRDs in %s (test/tools/build.sh copies them): %v", dir, err)
	}
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.InstallCRDs(ctx, b); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: promNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"prometheus-service-account.yaml", "prometheus-cluster-role.yaml", "prometheus-cluster-role-binding.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "rbac", f))
		if err != nil {
			t.Fatal(err)
		}
		// The example binds the ServiceAccount of namespace default.
		c.Apply(t, promNS, strings.ReplaceAll(string(b), "namespace: default", "namespace: "+promNS))
	}

	// --- the operator ----------------------------------------------------------
	opBin, err := tools.Tool("prometheus-operator")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	op := c.StartProcess(t, "prometheus-operator", opBin, []string{"KUBECONFIG=" + c.AdminKubeconfig},
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]),
		"--prometheus-config-reloader="+reloaderImage,
		"--log-level=debug",
	)
	op.WaitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0]), 2*time.Minute)

	// --- Alertmanager on the host, a Service for it inside the cluster --------
	hook := promstack.NewWebhook(t)
	am, amAddr := promstack.StartAlertmanager(t, c, hook)
	amHost, amPort, err := net.SplitHostPort(n.Expose(t, amAddr))
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(t, promNS, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: alertmanager}
spec:
  ports: [{name: web, port: %[2]s, targetPort: %[2]s}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: alertmanager}
subsets:
- addresses: [{ip: %[1]s}]
  ports: [{name: web, port: %[2]s}]
`, amHost, amPort))

	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "deploy", "chart", "driftwatch")

	// --- phase 1: the chart as kube-prometheus-stack users install it --------
	// serviceMonitor and prometheusRule on, selected by the release label
	// (and a custom one), the ServiceMonitor in the monitoring namespace;
	// nothing of the Deployment changes, so the agent pod stays.
	agent := s.agentPod(t)
	if out, err := c.Helm(ctx, "upgrade", release, chart, "--namespace", releaseNS, "--reuse-values", "--wait=false",
		"--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.namespace="+promNS,
		"--set", "serviceMonitor.labels.release="+promName, "--set", "serviceMonitor.labels.team=platform",
		"--set", "serviceMonitor.interval=1s", "--set", "serviceMonitor.scrapeTimeout=1s",
		"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.labels.release="+promName,
		"--set", "prometheusRule.labels.team=platform", "--set", "prometheusRule.keepFiringFor="+opKeepFiringFor,
	); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	shortenRuleFor(t, ctx, c)

	// The Prometheus object, and the same object for a Prometheus older than
	// 2.42, never run (no replicas): the operator's rule files for it show
	// what it does with keep_firing_for there.
	c.Apply(t, promNS, prometheusYAML(promName, promVersion, 1))
	c.Apply(t, promNS, prometheusYAML("kps-old", "v2.41.0", 0))

	pod := runningPod(t, c, promNS, "app.kubernetes.io/name=prometheus,app.kubernetes.io/instance="+promName, 5*time.Minute)
	poll(t, 3*time.Minute, time.Second, "the operator's Prometheus pod Ready", func() (bool, string) {
		p, err := c.Client.CoreV1().Pods(promNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		ready, _ := podReady(p)
		return ready, podState(p)
	})
	var images []string
	for _, cs := range pod.Status.ContainerStatuses {
		images = append(images, cs.Name+"="+cs.Image)
	}
	t.Logf("fact: the operator's StatefulSet pod %s/%s runs on %s (pod IP %s): %v", pod.Namespace, pod.Name, pod.Spec.NodeName, pod.Status.PodIP, images)
	t.Cleanup(func() {
		if t.Failed() {
			for _, ctr := range []string{"prometheus", "config-reloader"} {
				if log, err := n.PodLog(pod.Namespace, pod.Name, string(pod.UID), ctr); err == nil {
					t.Logf("----- %s log -----\n%s", ctr, tail(log, 60))
				}
			}
			t.Logf("----- operator log -----\n%s", op.Tail(80))
		}
	})
	ps := am.WithPrometheus("http://" + n.Forward(t, net.JoinHostPort(pod.Status.PodIP, "9090")))

	job := "serviceMonitor/" + promNS + "/" + agentName + "/0"
	cfg := generatedConfig(t, ctx, c, job, "")
	if !strings.Contains(cfg, "honor_labels: true") {
		t.Errorf("the operator's job %s lacks honor_labels: true", job)
	}
	rulesFile := shippedRules(t, root)
	rules := ruleConfigMaps(t, ctx, c, promName)
	if got, want := len(keepField.FindAllString(rules, -1)), len(keepField.FindAllString(rulesFile, -1)); got != want || want == 0 ||
		strings.Count(rules, "keep_firing_for: "+opKeepFiringFor+"\n") != want {
		t.Errorf("the operator's rule files for Prometheus %s hold %d keep_firing_for fields, want %d (every finding alert's, %s)", promVersion, got, want, opKeepFiringFor)
	}
	if oldRules := ruleConfigMaps(t, ctx, c, "kps-old"); keepField.MatchString(oldRules) {
		t.Errorf("for Prometheus v2.41.0 the operator's rule files keep keep_firing_for")
	} else {
		t.Log("fact: for a Prometheus object of version v2.41.0 the operator loads the rules without keep_firing_for (logging \"ignoring 'keep_firing_for' not supported by Prometheus\": 2.42.0 is its minimum)")
	}
	waitOperatorTarget(t, ps, job, "http", agent)

	// The rules the operator loaded: every group of the shipped file, from
	// the operator's rule ConfigMap.
	groups := loadedGroups(t, ps.PromURL)
	for _, g := range shippedGroups(t, rulesFile) {
		got, ok := groups[g.name]
		if !ok {
			t.Errorf("Prometheus /api/v1/rules lacks driftwatch's group %q (has %v)", g.name, keys(groups))
			continue
		}
		if got.rules != g.rules || !strings.Contains(got.file, "/etc/prometheus/rules/prometheus-"+promName+"-rulefiles-0/") {
			t.Errorf("group %q: %d rules from %s, want %d from the operator's rule ConfigMap", g.name, got.rules, got.file, g.rules)
		}
	}
	t.Logf("fact: Prometheus /api/v1/rules lists %d groups: %v", len(groups), keys(groups))

	// The dashboards against this Prometheus: every panel query answers, and
	// every panel that has data on the test's own Prometheus (scraping the
	// same agent through its Service with a static job) has data here too:
	// the operator's target labels (namespace, service, pod, container,
	// endpoint) and honorLabels change no panel's answer.
	// With every namespace selected, and with the namespace of a fault of
	// the earlier steps (where a finding's own namespace label must survive
	// the operator's target labels).
	comparePanels(t, s.ps, ps, "")
	if len(s.faults) > 0 {
		comparePanels(t, s.ps, ps, s.faults[0])
	}

	// --- phase 2: TLS and basic auth from web.* ---------------------------------
	pki := newWebPKI(t)
	pass := "scrape-" + rand.Text()
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := fmt.Sprintf("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: %q\n", hash)
	mkSecret := func(ns, name string, data map[string][]byte) {
		t.Helper()
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkSecret(releaseNS, "dw-web", map[string][]byte{"web-config.yml": []byte(webCfg), "tls.crt": pki.certPEM, "tls.key": pki.keyPEM})
	// The ServiceMonitor lives in the monitoring namespace: the operator
	// reads the Secrets it names there.
	mkSecret(promNS, "dw-scrape", map[string][]byte{"username": []byte("prometheus"), "password": []byte(pass), "ca.crt": pki.caPEM})
	if out, err := c.Helm(ctx, "upgrade", release, chart, "--namespace", releaseNS, "--reuse-values", "--wait=false",
		"--set", "web.configSecret=dw-web", "--set", "web.tls=true", "--set", "web.basicAuth=true",
		"--set", "serviceMonitor.tlsConfig.ca.secret.name=dw-scrape", "--set", "serviceMonitor.tlsConfig.ca.secret.key=ca.crt",
		"--set", "serviceMonitor.tlsConfig.serverName=driftwatch",
		"--set", "serviceMonitor.basicAuth.username.name=dw-scrape", "--set", "serviceMonitor.basicAuth.username.key=username",
		"--set", "serviceMonitor.basicAuth.password.name=dw-scrape", "--set", "serviceMonitor.basicAuth.password.key=password",
	); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	shortenRuleFor(t, ctx, c) // helm put the shipped durations back
	old := agent
	poll(t, 3*time.Minute, time.Second, "the agent's new pod (web config) Ready", func() (bool, string) {
		p := s.agentPod(t)
		if p.UID == old.UID {
			return false, "the old pod"
		}
		agent = p
		ready, _ := podReady(p)
		return ready, podState(p)
	})
	cfg = generatedConfig(t, ctx, c, job, "scheme: https")
	for _, want := range []string{"server_name: driftwatch", "honor_labels: true", "basic_auth:"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the operator's job for the ServiceMonitor lacks %q", want)
		}
	}
	if strings.Contains(cfg, pass) {
		t.Log("fact: the operator writes the basic-auth password into its configuration Secret (prometheus-" + promName + ")")
	}
	waitOperatorTarget(t, ps, job, "https", agent)

	// --- a fault after start pages through Alertmanager, then resolves --------
	ns := c.NewNamespace(t)
	c.Apply(t, ns, secretYAML("op-creds", map[string]string{"user": "app", "token": "node-e2e-token-value-op"}))
	c.Apply(t, ns, deployment("op", `        env:
        - {name: USER_NAME, valueFrom: {secretKeyRef: {name: op-creds, key: user}}}
        - {name: API_TOKEN, valueFrom: {secretKeyRef: {name: op-creds, key: token}}}`, ""))
	runningPod(t, c, ns, "app=op", 2*time.Minute)
	from := hook.Count()
	c.Apply(t, ns, secretYAML("op-creds", map[string]string{"user": "app"}))
	_, a := ps.WaitHook(t, hook, from, alertTimout, "the page through the operator's Prometheus",
		alertIs("DriftwatchSecretMissingKeyConsumed", ns, map[string]string{"secret": "op-creds", "severity": "critical", "job": "driftwatch"}))
	if a.Status != "firing" || !strings.Contains(a.Annotations["description"], "token") {
		t.Errorf("the page: %s %q", a.Status, a.Annotations["description"])
	}
	t.Logf("fact: page %s %s through the operator's Prometheus and the real Alertmanager: %s", a.Labels["alertname"], a.Status, a.Annotations["description"])
	from = hook.Count()
	c.Apply(t, ns, secretYAML("op-creds", map[string]string{"user": "app", "token": "node-e2e-token-value-op"}))
	_, a = ps.WaitHook(t, hook, from, alertTimout, "the page resolved", func(m promstack.Message, a promstack.Alert) bool {
		return alertIs("DriftwatchSecretMissingKeyConsumed", ns, map[string]string{"secret": "op-creds"})(m, a) && a.Status == "resolved"
	})
	t.Logf("fact: the page resolved (keep_firing_for %s), ends at %s", opKeepFiringFor, a.EndsAt.Format(time.RFC3339))

	// Healthy look-alikes: the operator's own Secrets (web-config,
	// tls-assets of two Prometheus objects, identical) raise nothing.
	series, err := s.scrapeTLS(agent, pki, pass)
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range findingSet(series) {
		if f.Labels["namespace"] == promNS {
			t.Errorf("the operator's objects raised %s", k)
		}
	}
}

// scrapeTLS scrapes the agent pod's /metrics from inside the node over
// TLS with basic auth, as the operator's job does.
func (s *stack) scrapeTLS(agent *corev1.Pod, pki webPKI, pass string) ([]scrape.Series, error) {
	port, err := containerPort(agent, agentCtr, intstr.FromString("metrics"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.caPEM)
	client := s.n.HTTPClient()
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool, ServerName: "driftwatch"}
	req, err := http.NewRequest(http.MethodGet, "https://"+net.JoinHostPort(agent.Status.PodIP, strconv.Itoa(port))+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("prometheus", pass)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return scrape.Parse(resp.Body)
}

// waitOperatorTarget waits until the operator's job scrapes the agent pod
// (up == 1 with the operator's target labels) with scheme.
func waitOperatorTarget(t *testing.T, ps *promstack.Stack, job, scheme string, agent *corev1.Pod) {
	t.Helper()
	poll(t, 2*time.Minute, time.Second, fmt.Sprintf(`up{job="driftwatch"} == 1 through the operator's job (%s, pod %s)`, scheme, agent.Name), func() (bool, string) {
		ps.Alive(t)
		res, err := ps.Query(`up{job="driftwatch"} == 1`)
		if err != nil {
			return false, err.Error()
		}
		if len(res) != 1 {
			return false, fmt.Sprint(res)
		}
		m := res[0].Metric
		if m["namespace"] != releaseNS || m["service"] != agentName || m["pod"] != agent.Name || m["endpoint"] != "metrics" || m["container"] != agentCtr {
			return false, fmt.Sprintf("target labels %v", m)
		}
		for _, tg := range activeTargets(t, ps.PromURL) {
			if tg.ScrapePool == job && tg.Labels["pod"] == agent.Name {
				if !strings.HasPrefix(tg.ScrapeURL, scheme+"://"+agent.Status.PodIP+":") || tg.Health != "up" {
					return false, fmt.Sprintf("target %s %s", tg.ScrapeURL, tg.Health)
				}
				t.Logf("fact: target %s %s health %s (labels %v)", tg.ScrapePool, tg.ScrapeURL, tg.Health, tg.Labels)
				return true, ""
			}
		}
		return false, "no active target of " + job + " for " + agent.Name
	})
}

// comparePanels runs every dashboard panel query (for namespace, or every
// namespace when "") on want (the test's Prometheus) and got (the
// operator's): each must answer on got, and a panel with data on want (the
// vector(0) fallbacks dropped) must have data on got.
func comparePanels(t *testing.T, want, got *promstack.Stack, namespace string) {
	t.Helper()
	targets := promstack.DashboardTargets(t)
	var problems []string
	deadline := time.Now().Add(time.Minute)
	for {
		problems = problems[:0]
		compared := 0
		for _, tg := range targets {
			q := promstack.Strict(promstack.SubstituteAll(tg.Expr))
			if namespace != "" {
				q = promstack.Strict(promstack.SubstituteNamespace(tg.Expr, namespace))
			}
			w, err := want.Query(q)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s on the test's Prometheus: %v", tg.ID(), err))
				continue
			}
			g, err := got.Query(q)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s on the operator's Prometheus: %v", tg.ID(), err))
				continue
			}
			if len(w) > 0 {
				compared++
				if len(g) == 0 {
					problems = append(problems, fmt.Sprintf("%s: %d series on the test's Prometheus, none on the operator's\n    %s", tg.ID(), len(w), q))
				}
			}
		}
		if len(problems) == 0 {
			t.Logf("fact: namespace %q: %d of %d dashboard queries have data on the test's Prometheus; each has data on the operator's", namespace, compared, len(targets))
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("dashboards on the operator's Prometheus:\n  %s", strings.Join(problems, "\n  "))
			return
		}
		time.Sleep(5 * time.Second)
	}
}

// buildPromImages builds the two images the operator's StatefulSet names,
// FROM scratch: Prometheus (test/tools/prometheus: v3.16.0 with Kubernetes
// service discovery, which Debian's 2.42 is built without) and the operator
// module's config reloader, both static, user nobody as upstream's images.
func buildPromImages(t *testing.T, ctx context.Context, n *node.Node) {
	t.Helper()
	for _, img := range []struct{ ref, tool, dst string }{
		{promImage, "prometheus3", "/bin/prometheus"},
		{reloaderImage, "prometheus-config-reloader", "/bin/prometheus-config-reloader"},
	} {
		bin, err := tools.Tool(img.tool)
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		for _, d := range []string{"prometheus", "etc/prometheus", "tmp"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o777); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.ScratchImage(ctx, img.ref, root, []node.ImageFile{{Src: bin, Dst: img.dst}}, []string{img.dst}, "65534", nil); err != nil {
			t.Fatalf("image %s: %v", img.ref, err)
		}
		if err := n.ImportImage(ctx, img.ref); err != nil {
			t.Fatal(err)
		}
	}
}

// prometheusYAML is a Prometheus object as kube-prometheus-stack's values
// make it: ServiceMonitors and PrometheusRules of every namespace selected
// by the release label, alerts to the Alertmanager Service.
func prometheusYAML(name, version string, replicas int) string {
	return fmt.Sprintf(`apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: %s}
spec:
  version: %s
  image: %s
  replicas: %d
  serviceAccountName: prometheus
  scrapeInterval: 1s
  evaluationInterval: 1s
  serviceMonitorSelector: {matchLabels: {release: %s}}
  serviceMonitorNamespaceSelector: {}
  ruleSelector:
    matchLabels: {release: %s}
    matchExpressions: [{key: team, operator: In, values: [platform]}]
  ruleNamespaceSelector: {}
  podMonitorSelector: {matchLabels: {release: %s}}
  probeSelector: {matchLabels: {release: %s}}
  alerting:
    alertmanagers: [{namespace: %s, name: alertmanager, port: web}]
  additionalArgs: [{name: rules.alert.resend-delay, value: 1s}]
`, name, version, promImage, replicas, promName, promName, promName, promName, promNS)
}

// shortenRuleFor sets every `for` of the chart's PrometheusRule to
// promstack.ShortFor in the apiserver (the shipped 5m–1h would outlast the
// test).
func shortenRuleFor(t *testing.T, ctx context.Context, c *cluster.Cluster) {
	t.Helper()
	ri := c.Dynamic.Resource(prometheusRuleGVR).Namespace(releaseNS)
	var pr *unstructured.Unstructured
	poll(t, time.Minute, time.Second, "the chart's PrometheusRule", func() (bool, string) {
		var err error
		pr, err = ri.Get(ctx, agentName, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	n := 0
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			if rm := r.(map[string]any); rm["for"] != nil {
				rm["for"] = promstack.ShortFor
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("the chart's PrometheusRule has no `for`")
	}
	if err := unstructured.SetNestedSlice(pr.Object, groups, "spec", "groups"); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Update(ctx, pr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// generatedConfig is the operator's Prometheus configuration (its Secret
// prometheus-<name>, key prometheus.yaml.gz) as text, once it has a scrape
// job named job whose section holds want (if not empty).
func generatedConfig(t *testing.T, ctx context.Context, c *cluster.Cluster, job, want string) string {
	t.Helper()
	var out string
	poll(t, 2*time.Minute, time.Second, "the operator's configuration with job "+job+" "+want, func() (bool, string) {
		sec, err := c.Client.CoreV1().Secrets(promNS).Get(ctx, "prometheus-"+promName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		zr, err := gzip.NewReader(bytes.NewReader(sec.Data["prometheus.yaml.gz"]))
		if err != nil {
			return false, err.Error()
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return false, err.Error()
		}
		out = string(b)
		_, section, ok := strings.Cut(out, "job_name: "+job+"\n")
		if !ok {
			return false, "no job " + job
		}
		if next := strings.Index(section, "job_name: "); next >= 0 {
			section = section[:next]
		}
		return want == "" || strings.Contains(section, want), "the job lacks " + want
	})
	return out
}

// ruleConfigMaps is the text of the operator's rule ConfigMaps of the
// Prometheus object name.
func ruleConfigMaps(t *testing.T, ctx context.Context, c *cluster.Cluster, name string) string {
	t.Helper()
	var out string
	poll(t, time.Minute, time.Second, "the operator's rule ConfigMaps of "+name, func() (bool, string) {
		cms, err := c.Client.CoreV1().ConfigMaps(promNS).List(ctx, metav1.ListOptions{LabelSelector: "prometheus-name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var b strings.Builder
		for _, cm := range cms.Items {
			for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
				b.WriteString(cm.Data[k])
			}
		}
		out = b.String()
		return strings.Contains(out, "DriftwatchSecretMissingKeyConsumed") && strings.Contains(out, "for: "+promstack.ShortFor), fmt.Sprintf("%d ConfigMaps", len(cms.Items))
	})
	return out
}

func shippedRules(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "alerts", "driftwatch.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type ruleGroup struct {
	name, file string
	rules      int
}

// shippedGroups lists the groups of the shipped rule file.
func shippedGroups(t *testing.T, rules string) []ruleGroup {
	t.Helper()
	var f struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal([]byte(rules), &f); err != nil {
		t.Fatal(err)
	}
	var out []ruleGroup
	for _, g := range f.Groups {
		out = append(out, ruleGroup{name: g.Name, rules: len(g.Rules)})
	}
	if len(out) == 0 {
		t.Fatal("alerts/driftwatch.rules.yaml has no groups")
	}
	return out
}

// loadedGroups reads Prometheus's /api/v1/rules.
func loadedGroups(t *testing.T, promURL string) map[string]ruleGroup {
	t.Helper()
	code, body, err := promstack.HTTPGet(promURL + "/api/v1/rules")
	if err != nil || code != 200 {
		t.Fatalf("/api/v1/rules: %d %v", code, err)
	}
	var resp struct {
		Data struct {
			Groups []struct {
				Name  string            `json:"name"`
				File  string            `json:"file"`
				Rules []json.RawMessage `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string]ruleGroup{}
	for _, g := range resp.Data.Groups {
		out[g.Name] = ruleGroup{name: g.Name, file: g.File, rules: len(g.Rules)}
	}
	return out
}

type activeTarget struct {
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	Labels     map[string]string `json:"labels"`
}

func activeTargets(t *testing.T, promURL string) []activeTarget {
	t.Helper()
	code, body, err := promstack.HTTPGet(promURL + "/api/v1/targets?state=active")
	if err != nil || code != 200 {
		t.Fatalf("/api/v1/targets: %d %v", code, err)
	}
	var resp struct {
		Data struct {
			ActiveTargets []activeTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Data.ActiveTargets
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type webPKI struct{ caPEM, certPEM, keyPEM []byte }

// newWebPKI makes a CA and a serving certificate for name "driftwatch" (the
// ServiceMonitor's tlsConfig.serverName).
func newWebPKI(t *testing.T) webPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch-e2e-web-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "driftwatch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"driftwatch"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return webPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}
}
