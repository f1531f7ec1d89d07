package deploy

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/driftwatch/driftwatch/test/netpol"
)

// The agent's pod as the rendered Deployment makes it: labels and container
// ports (the metrics port 9742, the probe port health.port).
func agentPod(t *testing.T, objs []object) netpol.Pod {
	t.Helper()
	tmpl := deploymentOf(t, objs).Spec.Template
	return netpol.Pod{Namespace: namespace, Labels: tmpl.Labels, Ports: tmpl.Spec.Containers[0].Ports}
}

// conn is one connection the engine-free evaluator judges against a rendered
// policy.
type conn struct {
	what  string
	src   netpol.Source
	proto corev1.Protocol
	port  int32
	want  bool
}

func checkConns(t *testing.T, where string, objs []object, conns []conn) {
	t.Helper()
	np := networkPolicy(t, objs)
	var nps []networkingv1.NetworkPolicy
	if np != nil {
		nps = append(nps, *np)
	}
	dst := agentPod(t, objs)
	for _, c := range conns {
		got, why, err := netpol.IngressAllowed(nps, dst, c.src, c.proto, c.port)
		if err != nil {
			t.Errorf("%s: %s: %v", where, c.what, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: %s %s/%d: allowed=%v (%s), want %v", where, c.what, c.proto, c.port, got, why, c.want)
		}
	}
}

var (
	// kube-prometheus-stack's Prometheus (prometheus-operator's pod labels)
	// and a PrometheusAgent, in namespaces of the user's choosing.
	promLabels  = map[string]string{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/managed-by": "prometheus-operator", "prometheus": "kps-prometheus"}
	agentLabels = map[string]string{"app.kubernetes.io/name": "prometheus-agent", "app.kubernetes.io/managed-by": "prometheus-operator"}
	grafana     = map[string]string{"app.kubernetes.io/name": "grafana"}
	randomPod   = map[string]string{"app": "web"}
)

// Ingress, on by default: the metrics port from Prometheus's pods in any
// namespace and nothing else, judged by the engine-free evaluator on the
// rendered policy; the selectors, extra peers, probe CIDRs and rules follow
// the values.
func TestChartNetworkPolicyIngress(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	const metrics, health = 9742, 8081
	promMon := netpol.PodSource("monitoring", nil, promLabels)
	promKPS := netpol.PodSource("kube-prometheus-stack", nil, promLabels)
	agentObs := netpol.PodSource("observability", nil, agentLabels)
	random := netpol.PodSource("team-a", nil, randomPod)
	sameNS := netpol.PodSource(namespace, nil, randomPod)
	grafanaNS := netpol.PodSource("grafana", nil, grafana)
	grafanaElsewhere := netpol.PodSource("team-a", nil, grafana)
	nodeAddr := netpol.Source{IP: netip.MustParseAddr("10.0.0.5")}

	objs := render(t)
	np := networkPolicy(t, objs)
	if np == nil {
		t.Fatal("no NetworkPolicy by default")
	}
	if len(np.Spec.Ingress) != 1 {
		t.Errorf("defaults: %d ingress rules, want 1 (the metrics port)", len(np.Spec.Ingress))
	}
	checkConns(t, "defaults", objs, []conn{
		{"Prometheus in monitoring", promMon, tcp, metrics, true},
		{"Prometheus in kube-prometheus-stack", promKPS, tcp, metrics, true},
		{"PrometheusAgent in observability", agentObs, tcp, metrics, true},
		{"a random pod", random, tcp, metrics, false},
		{"a random pod of the release's namespace", sameNS, tcp, metrics, false},
		{"Grafana (not admitted until ingress.from says so)", grafanaNS, tcp, metrics, false},
		{"Prometheus on the probe port", promMon, tcp, health, false},
		{"Prometheus on another port", promMon, tcp, 9090, false},
		{"Prometheus over UDP", promMon, udp, metrics, false},
		{"an address outside any pod", nodeAddr, tcp, metrics, false},
		// The kubelet's probes come from the pod's own node, which no policy
		// can block (outside the model): no rule is needed, none is rendered.
		{"an address outside any pod, probe port", nodeAddr, tcp, health, false},
	})

	// Prometheus narrowed to its namespace; a Grafana admitted by ingress.from
	// (both of its selectors must match); the nodes' subnet on the probe
	// port; a moved probe port follows.
	objs = render(t, "-f", valuesFile(t, `
health: {port: 9100}
networkPolicy:
  ingress:
    prometheus:
      namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
    from:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: grafana}}
        podSelector: {matchLabels: {app.kubernetes.io/name: grafana}}
    probeFrom: [10.0.0.0/24]
`))
	checkConns(t, "narrowed", objs, []conn{
		{"Prometheus in monitoring", promMon, tcp, metrics, true},
		{"Prometheus in kube-prometheus-stack", promKPS, tcp, metrics, false},
		{"Grafana in grafana", grafanaNS, tcp, metrics, true},
		{"Grafana's label in team-a", grafanaElsewhere, tcp, metrics, false},
		{"Grafana on the probe port", grafanaNS, tcp, 9100, false},
		{"a random pod", random, tcp, metrics, false},
		{"a node in probeFrom, probe port", nodeAddr, tcp, 9100, true},
		{"a node in probeFrom, the old probe port", nodeAddr, tcp, health, false},
		{"a node in probeFrom, metrics port", nodeAddr, tcp, metrics, false},
		{"an address outside probeFrom", netpol.Source{IP: netip.MustParseAddr("10.0.1.5")}, tcp, 9100, false},
	})

	// namespaceSelector: null admits the release's own namespace only; the
	// podSelector stays.
	objs = render(t, "--set", "networkPolicy.ingress.prometheus.namespaceSelector=null")
	checkConns(t, "namespaceSelector null", objs, []conn{
		{"Prometheus in the release's namespace", netpol.PodSource(namespace, nil, promLabels), tcp, metrics, true},
		{"Prometheus in kube-prometheus-stack", promKPS, tcp, metrics, false},
		{"a random pod of the release's namespace", sameNS, tcp, metrics, false},
	})
	if p := networkPolicy(t, objs).Spec.Ingress[0].From[0]; p.NamespaceSelector != nil || p.PodSelector == nil {
		t.Errorf("namespaceSelector null: peer %+v", p)
	}

	// extra: a rule appended as written.
	objs = render(t, "-f", valuesFile(t, `
networkPolicy:
  ingress:
    extra:
      - from: [{podSelector: {matchLabels: {app: web}}}]
        ports: [{protocol: TCP, port: 9742}]
`))
	checkConns(t, "extra", objs, []conn{
		{"web in the release's namespace", sameNS, tcp, metrics, true},
		{"web in team-a", random, tcp, metrics, false},
		{"Prometheus", promMon, tcp, metrics, true},
	})

	// Ingress off: the policy restricts egress alone and every source reaches
	// the port (as before this chart restricted ingress).
	objs = render(t, "--set", "networkPolicy.ingress.enabled=false")
	if np := networkPolicy(t, objs); !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) || len(np.Spec.Ingress) != 0 {
		t.Errorf("networkPolicy.ingress.enabled=false: policyTypes %v, %d ingress rules", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	checkConns(t, "ingress off", objs, []conn{{"a random pod", random, tcp, metrics, true}})

	// Values the schema refuses.
	for _, bad := range [][]string{
		{"--set", "networkPolicy.ingress.enabled=yes"},
		{"--set", "networkPolicy.ingress.probeFrom={10.0.0.1}"},
		{"--set", "networkPolicy.ingress.prometheus.podSelector.matchLabels=x"},
		{"--set", "networkPolicy.ingress.prometheus.podSelector.matchExpressions[0].key=a", "--set", "networkPolicy.ingress.prometheus.podSelector.matchExpressions[0].operator=Equals"},
		{"--set", "networkPolicy.ingress.prometheus.podSelector=null"},
		{"--set", "networkPolicy.ingress.ports={80}"},
	} {
		if _, err := helm(t, append([]string{"template", release, chart, "--kube-version", kubeVersion}, bad...)...); err == nil {
			t.Errorf("helm template %v: accepted", bad)
		}
	}
}

// /secret/NS/NAME: off unless the metrics port asks for credentials; asked
// for without them, the chart refuses with a message naming the ways out.
func TestChartSecretPage(t *testing.T) {
	secretPageArgs := func(args ...string) []string {
		t.Helper()
		var out []string
		for _, a := range deploymentOf(t, render(t, args...)).Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--ui") {
				out = append(out, a)
			}
		}
		return out
	}
	web := func(extra ...string) []string { return append([]string{"--set", "web.configSecret=dw-web"}, extra...) }
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"defaults", nil, []string{"--ui.secret-page=false"}},
		{"basic auth", web("--set", "web.basicAuth=true"), []string{"--ui.secret-page=true"}},
		{"TLS client certificates", web("--set", "web.tls=true", "--set", "web.clientAuth=true"), []string{"--ui.secret-page=true"}},
		{"TLS alone (no client certificates)", web("--set", "web.tls=true"), []string{"--ui.secret-page=false"}},
		{"basic auth without the Secret (configures nothing)", []string{"--set", "web.basicAuth=true"}, []string{"--ui.secret-page=false"}},
		{"explicit true with basic auth", web("--set", "web.basicAuth=true", "--set", "ui.secretPage=true"), []string{"--ui.secret-page=true"}},
		{"explicit true, acknowledged", []string{"--set", "ui.secretPage=true", "--set", "ui.allowSecretPageWithoutAuth=true"}, []string{"--ui.secret-page=true"}},
		{"the acknowledgement alone turns nothing on", []string{"--set", "ui.allowSecretPageWithoutAuth=true"}, []string{"--ui.secret-page=false"}},
		{"explicit false with basic auth", web("--set", "web.basicAuth=true", "--set", "ui.secretPage=false"), []string{"--ui.secret-page=false"}},
		{"the page off", []string{"--set", "ui.enabled=false", "--set", "ui.secretPage=true"}, []string{"--ui=false"}},
	} {
		if got := secretPageArgs(c.args...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: args %q, want %q", c.name, got, c.want)
		}
	}

	// Refusals: the message says what is wrong and how to fix it.
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"true without authentication", []string{"--set", "ui.secretPage=true"},
			[]string{"WITHOUT AUTHENTICATION", "web.basicAuth=true", "web.clientAuth=true", "ui.secretPage=auto", "ui.allowSecretPageWithoutAuth=true"}},
		{"true with TLS but no client certificates", web("--set", "web.tls=true", "--set", "ui.secretPage=true"),
			[]string{"WITHOUT AUTHENTICATION"}},
		{"client certificates without TLS", web("--set", "web.clientAuth=true"), []string{"web.clientAuth", "web.tls=true"}},
		{"client certificates without TLS, page off", []string{"--set", "ui.enabled=false", "--set", "web.clientAuth=true"}, []string{"web.tls=true"}},
	} {
		_, err := helm(t, append([]string{"template", release, chart, "--kube-version", kubeVersion}, c.args...)...)
		if err == nil {
			t.Errorf("%s: rendered", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error does not say %q:\n%v", c.name, w, err)
			}
		}
	}
}
