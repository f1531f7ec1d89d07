package node

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/driftwatch/driftwatch/test/netpol"
)

// scraperPod is a pod with the label the chart's default ingress admits
// (prometheus-operator's app.kubernetes.io/name: prometheus): it runs the
// workload image, which needs no port of its own.
func scraperPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app.kubernetes.io/name: prometheus}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: 2
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532}
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
`, name, workloadImage)
}

// testNetworkPolicy: the chart installed its NetworkPolicy (ingress and
// egress, on by default) on this node, and the agent is Ready with it in
// place: the kubelet's probes reach the probe port. What the policy says is
// judged by the engine-free evaluator (test/netpol) on the policy, pods and
// namespaces the apiserver holds: a Prometheus-labelled pod is admitted to
// the metrics port, another pod is not. The node's CNI is the bridge plugin
// (with kube-proxy), which does not enforce NetworkPolicy: both pods reach
// the port from their own network namespaces, and the test says so by
// asserting it. Where a CNI enforces, the second request is refused; the
// policy's semantics are held by the evaluator (deploy/, here) and the
// apiserver's validation (test/e2e/chart).
func testNetworkPolicy(t *testing.T, s *stack) {
	c, n := s.c, s.n
	ctx := ctxT(t, 3*time.Minute)
	nps, err := c.Client.NetworkingV1().NetworkPolicies(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: agentSel})
	if err != nil {
		t.Fatal(err)
	}
	if len(nps.Items) != 1 {
		t.Fatalf("%d NetworkPolicies of the release in %s, want 1", len(nps.Items), releaseNS)
	}
	np := nps.Items[0]
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("the installed NetworkPolicy's policyTypes %v, want [Ingress Egress]", np.Spec.PolicyTypes)
	}

	// The agent, selected by the policy, is Ready: the kubelet's readiness
	// probe reaches the probe port, with no rule for it.
	agent := s.agentPod(t)
	if ready, _ := podReady(agent); !ready {
		t.Fatalf("the agent is not Ready with the NetworkPolicy in place: %s", podState(agent))
	}
	metricsPort, err := containerPort(agent, agentCtr, intstr.FromString("metrics"))
	if err != nil {
		t.Fatal(err)
	}
	healthPort, err := containerPort(agent, agentCtr, intstr.FromString("health"))
	if err != nil {
		t.Fatal(err)
	}
	dst := netpol.Pod{Namespace: agent.Namespace, Labels: agent.Labels, Ports: agent.Spec.Containers[0].Ports}

	// A Prometheus-labelled pod in a namespace of its own, and a pod the
	// policy does not name (testFaultAfterStart's web, app=web).
	scraperNS := c.NewNamespace(s.parent)
	c.Apply(t, scraperNS, scraperPod("scraper"))
	scraper := runningPod(t, c, scraperNS, "app.kubernetes.io/name=prometheus", 2*time.Minute)
	if len(s.faults) == 0 {
		t.Fatal("no workload namespace from fault_after_start")
	}
	outsider := runningPod(t, c, s.faults[0], "app=web", time.Minute)

	source := func(p *corev1.Pod) netpol.Source {
		ns, err := c.Client.CoreV1().Namespaces().Get(ctx, p.Namespace, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return netpol.PodSource(ns.Name, ns.Labels, p.Labels)
	}
	verdict := func(p *corev1.Pod, port int) bool {
		ok, why, err := netpol.IngressAllowed(nps.Items, dst, source(p), corev1.ProtocolTCP, int32(port))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("fact: the policy, judged by test/netpol: %s/%s (labels %v) → %s:%d: allowed=%v (%s)",
			p.Namespace, p.Name, p.Labels, agent.Name, port, ok, why)
		return ok
	}
	if !verdict(scraper, metricsPort) {
		t.Errorf("the installed policy does not admit a Prometheus pod to the metrics port")
	}
	if verdict(outsider, metricsPort) {
		t.Errorf("the installed policy admits a pod outside the Prometheus selector to the metrics port")
	}
	if verdict(scraper, healthPort) {
		t.Errorf("the installed policy admits Prometheus to the probe port")
	}

	// The data plane: each pod's own network namespace dials the agent's pod IP.
	fetch := func(p *corev1.Pod, path string) (int, string) {
		netns, err := n.PodNetns(ctx, p.Namespace, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + net.JoinHostPort(agent.Status.PodIP, strconv.Itoa(metricsPort)) + path
		resp, err := n.HTTPClientIn(netns).Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		t.Logf("fact: from %s/%s (%s, its own network namespace): GET %s → %d (%d bytes)", p.Namespace, p.Name, p.Status.PodIP, url, resp.StatusCode, len(b))
		return resp.StatusCode, string(b)
	}
	if code, body := fetch(scraper, "/metrics"); code != http.StatusOK {
		t.Errorf("the Prometheus-labelled pod cannot scrape the agent: %d %.200s", code, body)
	}
	// Not enforced here: the pod the policy refuses reaches the port. This
	// is the bridge plugin's behaviour (it implements no NetworkPolicy), not
	// the chart's: where this request fails, a policy-enforcing CNI runs on
	// the node, and this assertion (and docs/testing.md) should change.
	code, body := fetch(outsider, "/metrics")
	if code != http.StatusOK {
		t.Errorf("a pod outside the selector got %d %.200s from the metrics port: the node's CNI enforced NetworkPolicy, which the bridge plugin does not; update this test and docs/testing.md", code, body)
	} else {
		t.Logf("fact: the bridge CNI does not enforce NetworkPolicy: %s/%s, refused by the policy, reached %s:%d", outsider.Namespace, outsider.Name, agent.Status.PodIP, metricsPort)
	}
	// Without enforcement the findings API is the outsider's too (what the
	// policy would keep from it), while the chart's defaults still keep
	// /secret/ off (no authentication configured): no Secret's key names,
	// writers or readers, where the page would answer 200 for web-creds.
	if code, body := fetch(outsider, "/api/v1/findings"); code != http.StatusOK || !strings.Contains(body, `"findings":`) {
		t.Errorf("the findings API from a pod outside the selector: %d %.200s (want 200 and the findings document: nothing enforces the policy here)", code, body)
	}
	if code, _ := fetch(outsider, "/secret/"+s.faults[0]+"/web-creds"); code != http.StatusNotFound {
		t.Errorf("/secret/ with the chart's defaults (no authentication): %d, want 404 (ui.secretPage=auto, off)", code)
	}
	if !slices.Contains(agent.Spec.Containers[0].Args, "--ui.secret-page=false") {
		t.Errorf("the agent's args %q lack --ui.secret-page=false", agent.Spec.Containers[0].Args)
	}
}
