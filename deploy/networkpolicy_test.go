package deploy

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Cloud metadata addresses: 169.254.169.254 (AWS, GCP, Azure, OpenStack…)
// and AWS's IPv6 endpoint. No ipBlock of the chart's may admit them.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// networkPolicy is the one NetworkPolicy of a rendering, or nil.
func networkPolicy(t *testing.T, objs []object) *networkingv1.NetworkPolicy {
	t.Helper()
	nps := byKind(objs, "NetworkPolicy")
	switch len(nps) {
	case 0:
		return nil
	case 1:
		return nps[0].obj.(*networkingv1.NetworkPolicy)
	}
	t.Fatalf("want at most one NetworkPolicy, got %d", len(nps))
	return nil
}

// checkNetworkPolicy: ingress and egress, selecting the agent's pods; every
// ipBlock's excepts lie strictly inside its cidr (the API server refuses
// others).
func checkNetworkPolicy(t *testing.T, where string, np *networkingv1.NetworkPolicy, podLabels map[string]string) {
	t.Helper()
	if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) || len(np.Spec.Ingress) == 0 {
		t.Errorf("%s: NetworkPolicy policyTypes %v, %d ingress rules: want [Ingress Egress] and ingress rules", where, np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(podLabels)) {
		t.Errorf("%s: NetworkPolicy podSelector %v does not select the agent's pods %v", where, np.Spec.PodSelector, podLabels)
	}
	if len(np.Spec.Egress) == 0 {
		t.Errorf("%s: NetworkPolicy without egress rules denies everything", where)
	}
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if p.IPBlock == nil {
				continue
			}
			cidr, err := netip.ParsePrefix(p.IPBlock.CIDR)
			if err != nil {
				t.Errorf("%s: ipBlock cidr %q: %v", where, p.IPBlock.CIDR, err)
				continue
			}
			for _, e := range p.IPBlock.Except {
				ex, err := netip.ParsePrefix(e)
				if err != nil || ex.Addr().Is4() != cidr.Addr().Is4() || ex.Bits() <= cidr.Bits() || !cidr.Contains(ex.Addr()) {
					t.Errorf("%s: ipBlock %s: except %q is not strictly inside the cidr", where, cidr, e)
				}
			}
		}
	}
}

// admitted lists the ipBlocks (cidr) that admit addr: it is inside the cidr
// and inside none of its excepts.
func admitted(np *networkingv1.NetworkPolicy, addr netip.Addr) []string {
	var out []string
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if p.IPBlock == nil {
				continue
			}
			cidr, err := netip.ParsePrefix(p.IPBlock.CIDR)
			if err != nil || !cidr.Contains(addr) {
				continue
			}
			excepted := false
			for _, e := range p.IPBlock.Except {
				if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(addr) {
					excepted = true
				}
			}
			if !excepted {
				out = append(out, p.IPBlock.CIDR)
			}
		}
	}
	return out
}

// selects: the peer selects a pod with these labels in the namespace named ns
// (namespaces carry kubernetes.io/metadata.name).
func selects(t *testing.T, p networkingv1.NetworkPolicyPeer, ns string, pod map[string]string) bool {
	t.Helper()
	if p.NamespaceSelector == nil || p.PodSelector == nil || p.IPBlock != nil {
		return false
	}
	nsSel, err1 := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
	podSel, err2 := metav1.LabelSelectorAsSelector(p.PodSelector)
	if err1 != nil || err2 != nil {
		t.Errorf("peer %+v: %v %v", p, err1, err2)
		return false
	}
	return !nsSel.Empty() && !podSel.Empty() &&
		nsSel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}) && podSel.Matches(labels.Set(pod))
}

type port struct {
	proto corev1.Protocol
	port  int
}

func rulePorts(r networkingv1.NetworkPolicyEgressRule) []port {
	var out []port
	for _, p := range r.Ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		n := -1
		if p.Port != nil {
			n = p.Port.IntValue()
		}
		if p.EndPort != nil {
			n = -2 // a range: never what these rules want
		}
		out = append(out, port{proto, n})
	}
	return out
}

// rulesTo: the egress rules with a peer selecting the pod in ns.
func rulesTo(t *testing.T, np *networkingv1.NetworkPolicy, ns string, pod map[string]string) []networkingv1.NetworkPolicyEgressRule {
	t.Helper()
	var out []networkingv1.NetworkPolicyEgressRule
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if selects(t, p, ns, pod) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// checkRuleTo: exactly one rule reaches the pod in ns, on exactly these ports.
func checkRuleTo(t *testing.T, where string, np *networkingv1.NetworkPolicy, ns string, pod map[string]string, want ...port) {
	t.Helper()
	rs := rulesTo(t, np, ns, pod)
	if len(rs) != 1 {
		t.Errorf("%s: %d egress rules reach %v in %s, want 1", where, len(rs), pod, ns)
		return
	}
	if got := rulePorts(rs[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: rule to %v in %s: ports %v, want %v", where, pod, ns, got, want)
	}
}

func deploymentOf(t *testing.T, objs []object) *appsv1.Deployment {
	t.Helper()
	ds := byKind(objs, "Deployment")
	if len(ds) != 1 {
		t.Fatalf("want one Deployment, got %d", len(ds))
	}
	return ds[0].obj.(*appsv1.Deployment)
}

func valuesFile(t *testing.T, yaml string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	sourceController = map[string]string{"app": "source-controller"}
	sourceWatcher    = map[string]string{"app": "source-watcher"}
	argocdServer     = map[string]string{"app.kubernetes.io/name": "argocd-server"}
)

// The egress NetworkPolicy: on by default, egress only; DNS, the API server
// (the metadata addresses excepted), Flux's artifact servers while
// flux.artifacts, argocd-server only with a server; extra rules appended.
func TestChartNetworkPolicy(t *testing.T) {
	objs := render(t)
	np := networkPolicy(t, objs)
	if np == nil {
		t.Fatal("no NetworkPolicy by default")
	}
	d := deploymentOf(t, objs)
	checkNetworkPolicy(t, "defaults", np, d.Spec.Template.Labels)
	if np.Namespace != namespace {
		t.Errorf("NetworkPolicy namespace %q, want the release's %q", np.Namespace, namespace)
	}
	tcp := func(n int) port { return port{corev1.ProtocolTCP, n} }
	checkRuleTo(t, "defaults", np, "kube-system", map[string]string{"k8s-app": "kube-dns"}, port{corev1.ProtocolUDP, 53}, tcp(53))
	checkRuleTo(t, "defaults", np, "flux-system", sourceController, tcp(9090))
	checkRuleTo(t, "defaults", np, "flux-system", sourceWatcher, tcp(9090))
	if rs := rulesTo(t, np, "flux-system", map[string]string{"app": "kustomize-controller"}); len(rs) != 0 {
		t.Errorf("defaults: a rule reaches kustomize-controller: %+v", rs)
	}
	if rs := rulesTo(t, np, "argocd", argocdServer); len(rs) != 0 {
		t.Errorf("defaults: an argocd-server rule without argocd.server: %+v", rs)
	}
	// The API server: any address on 443 and 6443 but link-local, in both families.
	var blocks []networkingv1.IPBlock
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if p.IPBlock != nil {
				blocks = append(blocks, *p.IPBlock)
				if got := rulePorts(r); !reflect.DeepEqual(got, []port{tcp(443), tcp(6443)}) || len(r.To) != 1 {
					t.Errorf("defaults: ipBlock %s: ports %v (peers %d), want TCP 443 and 6443 alone", p.IPBlock.CIDR, got, len(r.To))
				}
			}
		}
	}
	wantBlocks := []networkingv1.IPBlock{
		{CIDR: "0.0.0.0/0", Except: []string{"169.254.0.0/16"}},
		{CIDR: "::/0", Except: []string{"fe80::/10", "fd00:ec2::254/128"}},
	}
	if !reflect.DeepEqual(blocks, wantBlocks) {
		t.Errorf("defaults: ipBlocks %+v, want %+v", blocks, wantBlocks)
	}
	if len(np.Spec.Egress) != 4 {
		t.Errorf("defaults: %d egress rules, want 4 (DNS, two API server blocks, Flux)", len(np.Spec.Egress))
	}
	for _, a := range metadataAddrs {
		if got := admitted(np, a); len(got) != 0 {
			t.Errorf("defaults: ipBlocks %v admit the metadata address %s", got, a)
		}
	}
	for _, a := range []string{"10.0.0.1", "172.18.0.2", "fd00:10:96::1"} {
		if len(admitted(np, netip.MustParseAddr(a))) == 0 {
			t.Errorf("defaults: no ipBlock admits the API server address %s", a)
		}
	}

	// Every scenario, the sharded StatefulSet included, selects its pods.
	for _, sc := range scenarios {
		objs := render(t, sc.args...)
		np := networkPolicy(t, objs)
		if np == nil {
			t.Errorf("%s: no NetworkPolicy", sc.name)
			continue
		}
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *appsv1.Deployment:
				checkNetworkPolicy(t, sc.name+": Deployment", np, v.Spec.Template.Labels)
			case *appsv1.StatefulSet:
				checkNetworkPolicy(t, sc.name+": StatefulSet", np, v.Spec.Template.Labels)
			}
		}
		for _, a := range metadataAddrs {
			if got := admitted(np, a); len(got) != 0 {
				t.Errorf("%s: ipBlocks %v admit the metadata address %s", sc.name, got, a)
			}
		}
	}

	// No Flux downloads, no Flux rule; another Flux namespace, the rule follows it.
	np = networkPolicy(t, render(t, "--set", "flux.artifacts=false"))
	if rs := append(rulesTo(t, np, "flux-system", sourceController), rulesTo(t, np, "flux-system", sourceWatcher)...); len(rs) != 0 {
		t.Errorf("flux.artifacts=false: rules to the Flux artifact servers remain: %+v", rs)
	}
	if len(np.Spec.Egress) != 3 {
		t.Errorf("flux.artifacts=false: %d egress rules, want 3", len(np.Spec.Egress))
	}
	np = networkPolicy(t, render(t, "--set", "flux.namespace=flux"))
	checkRuleTo(t, "flux.namespace=flux", np, "flux", sourceController, tcp(9090))
	if rs := rulesTo(t, np, "flux-system", sourceController); len(rs) != 0 {
		t.Errorf("flux.namespace=flux: a rule still reaches flux-system")
	}

	// Argo CD: only with a server (argocd.server, or --argocd-server in extraArgs).
	for _, args := range [][]string{
		{"--set", "argocd.server=https://argocd-server.argocd.svc"},
		{"--set", "extraArgs={--argocd-server=https://argocd-server.argocd.svc}"},
	} {
		objs := render(t, args...)
		checkRuleTo(t, strings.Join(args, " "), networkPolicy(t, objs), "argocd", argocdServer, tcp(8080))
		if c := deploymentOf(t, objs).Spec.Template.Spec.Containers[0]; !contains(c.Args, "--argocd-server=https://argocd-server.argocd.svc") {
			t.Errorf("%v: args %q", args, c.Args)
		}
	}
	np = networkPolicy(t, render(t, "--set", "argocd.server=https://argocd.example.com", "--set", "networkPolicy.egress.argocd.namespace=gitops",
		"--set", "networkPolicy.egress.argocd.port=8443"))
	checkRuleTo(t, "argocd in gitops", np, "gitops", argocdServer, tcp(8443))
	if rs := rulesTo(t, np, "argocd", argocdServer); len(rs) != 0 {
		t.Errorf("networkPolicy.egress.argocd.namespace=gitops: a rule still reaches argocd")
	}

	// The API server narrowed to its endpoint; extra rules appended as written,
	// and a user's own metadata rule is seen.
	np = networkPolicy(t, render(t, "-f", valuesFile(t, `
networkPolicy:
  egress:
    apiServer:
      - cidr: 172.18.0.2/32
        ports: [6443]
    extra:
      - to:
          - ipBlock: {cidr: 169.254.169.254/32}
        ports:
          - {protocol: TCP, port: 80}
`)))
	last := np.Spec.Egress[len(np.Spec.Egress)-1]
	if len(last.To) != 1 || last.To[0].IPBlock == nil || last.To[0].IPBlock.CIDR != "169.254.169.254/32" || !reflect.DeepEqual(rulePorts(last), []port{tcp(80)}) {
		t.Errorf("extra: last rule %+v, want the user's", last)
	}
	if got := admitted(np, metadataAddrs[0]); !reflect.DeepEqual(got, []string{"169.254.169.254/32"}) {
		t.Errorf("a user's metadata rule: admitted by %v, want the extra rule alone", got)
	}
	if got := admitted(np, netip.MustParseAddr("172.18.0.2")); !reflect.DeepEqual(got, []string{"172.18.0.2/32"}) {
		t.Errorf("apiServer 172.18.0.2/32: admitted by %v", got)
	}
	if got := admitted(np, netip.MustParseAddr("10.0.0.1")); len(got) != 0 {
		t.Errorf("apiServer narrowed, yet 10.0.0.1 admitted by %v", got)
	}

	// Egress off: the policy restricts ingress alone; both off: no policy.
	np = networkPolicy(t, render(t, "--set", "networkPolicy.egress.enabled=false"))
	if np == nil || !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Egress) != 0 {
		t.Errorf("networkPolicy.egress.enabled=false: want an ingress-only policy, got %+v", np)
	}
	if np := networkPolicy(t, render(t, "--set", "networkPolicy.egress.enabled=false", "--set", "networkPolicy.ingress.enabled=false")); np != nil {
		t.Errorf("networkPolicy.{ingress,egress}.enabled=false rendered a NetworkPolicy")
	}
}

// The Flux values render their flags, each only when it differs from the
// agent's default.
func TestChartFluxArgs(t *testing.T) {
	fluxArgs := func(objs []object) []string {
		var out []string
		for _, a := range deploymentOf(t, objs).Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--flux-") || strings.HasPrefix(a, "--argocd-") {
				out = append(out, a)
			}
		}
		return out
	}
	if got := fluxArgs(render(t)); len(got) != 0 {
		t.Errorf("defaults render %q: the chart's defaults are the agent's", got)
	}
	got := fluxArgs(render(t, "--set", "flux.artifacts=false", "--set", "flux.namespace=flux",
		"--set", "flux.sourceHost=localhost:9090", "--set", "flux.allowedHosts={artifacts.example.com,minio.storage.svc:9000}",
		"--set", "flux.allowedCIDRs={10.0.0.0/8,fd00::/8}", "--set", "flux.pollInterval=1m", "--set", "flux.timeout=10s",
		"--set", "flux.maxArtifactBytes=134217728", "--set", "flux.buildTimeout=1m30s"))
	want := []string{"--flux-artifacts=false", "--flux-namespace=flux", "--flux-source-host=localhost:9090",
		"--flux-allowed-hosts=artifacts.example.com,minio.storage.svc:9000", "--flux-allowed-cidrs=10.0.0.0/8,fd00::/8",
		"--flux-poll-interval=1m", "--flux-timeout=10s", "--flux-max-artifact-bytes=134217728", "--flux-build-timeout=1m30s"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flux args\ngot  %q\nwant %q", got, want)
	}
	// A number from a values file is a float64 to the template: printed whole,
	// and the default compared as a number.
	if got := fluxArgs(render(t, "-f", valuesFile(t, "flux: {maxArtifactBytes: 134217728}\n"))); !reflect.DeepEqual(got, []string{"--flux-max-artifact-bytes=134217728"}) {
		t.Errorf("maxArtifactBytes from a values file: %q", got)
	}
	if got := fluxArgs(render(t, "-f", valuesFile(t, "flux: {maxArtifactBytes: 67108864}\n"))); len(got) != 0 {
		t.Errorf("maxArtifactBytes equal to the default: %q", got)
	}
}
