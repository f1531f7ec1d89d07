package chart

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

var networkPolicies = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}

// The chart's NetworkPolicy, rendered with each value set that shapes it,
// passes the real apiserver's validation: a server-side dry-run create with
// strict field validation (an unknown or misplaced field is an error, not
// dropped). A policy the apiserver must refuse is refused the same way, so
// the dry run is seen to validate. (The default policy is also created for
// real by TestChartInstalledForReal and test/e2e/node's helm install.)
func TestChartNetworkPolicyServerValidated(t *testing.T) {
	c := cluster.Get(t)
	ctx := ctxT(t, 2*time.Minute)
	ns := c.NewNamespace(t)
	dir := c.TempDir(t, "netpol")
	render := func(t *testing.T, args ...string) *unstructured.Unstructured {
		t.Helper()
		out, err := c.Helm(ctx, append([]string{"template", release, chartDir(t), "--namespace", ns,
			"--kube-version", "v1.37.2", "--show-only", "templates/networkpolicy.yaml"}, args...)...)
		if err != nil {
			t.Fatalf("helm template %v: %v\n%s", args, err, out)
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return &unstructured.Unstructured{Object: obj}
	}
	dryRun := func(u *unstructured.Unstructured) error {
		_, err := c.Dynamic.Resource(networkPolicies).Namespace(ns).Create(ctx, u,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		return err
	}
	values := func(y string) []string {
		f := filepath.Join(dir, "values.yaml")
		if err := os.WriteFile(f, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"-f", f}
	}
	cases := []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"egress off", []string{"--set", "networkPolicy.egress.enabled=false"}},
		{"ingress off", []string{"--set", "networkPolicy.ingress.enabled=false"}},
		{"argocd and flux namespace", []string{"--set", "argocd.server=https://argocd-server.argocd.svc", "--set", "flux.namespace=flux"}},
		{"everything configurable", values(`
health: {port: 9100}
networkPolicy:
  ingress:
    prometheus:
      namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
      podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
    from:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: grafana}}
        podSelector: {matchLabels: {app.kubernetes.io/name: grafana}}
      - ipBlock: {cidr: 192.0.2.0/24}
    probeFrom: [10.0.0.0/16, "fd00:10::/64"]
    extra:
      - from: [{podSelector: {matchLabels: {app: debug}}}]
        ports: [{protocol: TCP, port: 9742}]
  egress:
    apiServer:
      - {cidr: 172.18.0.2/32, ports: [6443]}
    extra:
      - to: [{ipBlock: {cidr: 169.254.20.10/32}}]
        ports: [{protocol: UDP, port: 53}]
`)},
		{"prometheus in the release namespace only", []string{"--set", "networkPolicy.ingress.prometheus.namespaceSelector=null"}},
	}
	for _, tc := range cases {
		u := render(t, tc.args...)
		if err := dryRun(u); err != nil {
			t.Errorf("%s: the apiserver refuses the chart's NetworkPolicy: %v", tc.name, err)
			continue
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		t.Logf("fact: %s: policyTypes %v, %d ingress and %d egress rules accepted by the apiserver (dry run, strict)",
			tc.name, spec["policyTypes"], len(asSlice(spec["ingress"])), len(asSlice(spec["egress"])))
	}

	// Controls: what the apiserver must refuse, it refuses through the same
	// dry run (a misplaced field under strict validation; an except outside
	// its cidr; a peer with an ipBlock and a selector).
	for name, mutate := range map[string]func(u *unstructured.Unstructured){
		"a misplaced field": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(9742), "spec", "port")
		},
		"an except outside its cidr": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"from": []any{
				map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16", "except": []any{"10.1.0.0/24"}}}}}}, "spec", "ingress")
		},
		"a peer with an ipBlock and a selector": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"from": []any{
				map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}, "podSelector": map[string]any{}}}}}, "spec", "ingress")
		},
	} {
		u := render(t)
		mutate(u)
		if err := dryRun(u); err == nil {
			t.Errorf("control %s: the dry run accepted it", name)
		} else {
			t.Logf("fact: control %s refused: %v", name, err)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
