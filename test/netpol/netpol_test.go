package netpol

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

func policies(t *testing.T, docs ...string) []networkingv1.NetworkPolicy {
	t.Helper()
	var out []networkingv1.NetworkPolicy
	for _, d := range docs {
		var np networkingv1.NetworkPolicy
		if err := yaml.UnmarshalStrict([]byte(d), &np); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		out = append(out, np)
	}
	return out
}

var (
	web = Pod{Namespace: "app", Labels: map[string]string{"app": "web"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}
	tcp = corev1.ProtocolTCP
	udp = corev1.ProtocolUDP
)

// The evaluator against the API's documented semantics, case by case: each
// case has a connection the policy admits and one it does not, so a verdict
// that ignored the field under test fails one of them.
func TestSemantics(t *testing.T) {
	monFront := PodSource("monitoring", nil, map[string]string{"role": "front"})
	monOther := PodSource("monitoring", nil, map[string]string{"role": "other"})
	teamFront := PodSource("team", map[string]string{"tier": "x"}, map[string]string{"role": "front"})
	appFront := PodSource("app", nil, map[string]string{"role": "front"})
	node := Source{IP: netip.MustParseAddr("10.1.2.3")}
	type conn struct {
		src   Source
		proto corev1.Protocol
		port  int32
		want  bool
	}
	cases := []struct {
		name   string
		policy string
		conns  []conn
	}{
		{"not selected: open", `
metadata: {name: p, namespace: app}
spec: {podSelector: {matchLabels: {app: db}}, policyTypes: [Ingress]}`,
			[]conn{{teamFront, tcp, 8080, true}}},
		{"another namespace's policy: open", `
metadata: {name: p, namespace: other}
spec: {podSelector: {}, policyTypes: [Ingress]}`,
			[]conn{{teamFront, tcp, 8080, true}}},
		{"egress only: ingress open", `
metadata: {name: p, namespace: app}
spec: {podSelector: {}, policyTypes: [Egress]}`,
			[]conn{{teamFront, tcp, 8080, true}}},
		{"no policyTypes, no rules: ingress denied", `
metadata: {name: p, namespace: app}
spec: {podSelector: {}}`,
			[]conn{{teamFront, tcp, 8080, false}, {appFront, tcp, 8080, false}}},
		{"rule without from or ports: everything", `
metadata: {name: p, namespace: app}
spec: {podSelector: {}, policyTypes: [Ingress], ingress: [{}]}`,
			[]conn{{teamFront, tcp, 8080, true}, {node, udp, 53, true}}},
		{"podSelector alone: the policy's namespace", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {role: front}}}]}]`,
			[]conn{{appFront, tcp, 8080, true}, {teamFront, tcp, 8080, false}, {monFront, tcp, 8080, false}}},
		{"namespaceSelector alone: every pod there", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress: [{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}]`,
			[]conn{{monFront, tcp, 8080, true}, {monOther, tcp, 8080, true}, {teamFront, tcp, 8080, false}, {node, tcp, 8080, false}}},
		{"both in one peer: AND", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress:
    - from:
        - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
          podSelector: {matchLabels: {role: front}}`,
			[]conn{{monFront, tcp, 8080, true}, {monOther, tcp, 8080, false}, {teamFront, tcp, 8080, false}}},
		{"two peers: OR", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress:
    - from:
        - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
        - podSelector: {matchLabels: {role: front}}`,
			[]conn{{monOther, tcp, 8080, true}, {appFront, tcp, 8080, true}, {teamFront, tcp, 8080, false}}},
		{"empty namespaceSelector: any namespace; empty podSelector: any pod", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress:
    - from: [{namespaceSelector: {}, podSelector: {matchLabels: {role: front}}}]
    - from: [{namespaceSelector: {matchLabels: {tier: x}}, podSelector: {}}]
      ports: [{port: 9000}]`,
			[]conn{{teamFront, tcp, 8080, true}, {monFront, tcp, 8080, true}, {monOther, tcp, 8080, false},
				{PodSource("team", map[string]string{"tier": "x"}, nil), tcp, 9000, true}, {monOther, tcp, 9000, false}, {node, tcp, 8080, false}}},
		{"matchExpressions", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress:
    - from: [{namespaceSelector: {}, podSelector: {matchExpressions: [{key: role, operator: In, values: [front, back]}]}}]`,
			[]conn{{teamFront, tcp, 8080, true}, {monOther, tcp, 8080, false}}},
		{"ports: protocol defaults to TCP, number, range, name", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress:
    - ports: [{port: 9000}, {protocol: TCP, port: 7000, endPort: 7010}, {port: http}, {protocol: UDP, port: dns}]`,
			[]conn{{teamFront, tcp, 9000, true}, {teamFront, udp, 9000, false}, {teamFront, tcp, 7005, true}, {teamFront, tcp, 7011, false},
				{teamFront, tcp, 8080, true}, {teamFront, tcp, 8081, false}, {teamFront, udp, 53, true}, {teamFront, tcp, 53, false}}},
		{"a port without number: every port of its protocol", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress: [{ports: [{protocol: UDP}]}]`,
			[]conn{{teamFront, udp, 1234, true}, {teamFront, tcp, 1234, false}}},
		{"ipBlock with except; selectors never match an address", `
metadata: {name: p, namespace: app}
spec:
  podSelector: {}
  ingress:
    - from: [{ipBlock: {cidr: 10.1.0.0/16, except: [10.1.9.0/24]}}]`,
			[]conn{{node, tcp, 8080, true}, {Source{IP: netip.MustParseAddr("10.1.9.9")}, tcp, 8080, false},
				{Source{IP: netip.MustParseAddr("10.2.0.1")}, tcp, 8080, false}, {teamFront, tcp, 8080, false}}},
	}
	for _, c := range cases {
		nps := policies(t, c.policy)
		for _, cn := range c.conns {
			got, why, err := IngressAllowed(nps, web, cn.src, cn.proto, cn.port)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if got != cn.want {
				t.Errorf("%s: from %+v %s/%d: allowed=%v (%s), want %v", c.name, cn.src, cn.proto, cn.port, got, why, cn.want)
			}
		}
	}

	// Policies add up: one admits what another does not.
	nps := policies(t, `
metadata: {name: a, namespace: app}
spec: {podSelector: {}, ingress: [{from: [{podSelector: {matchLabels: {role: front}}}]}]}`, `
metadata: {name: b, namespace: app}
spec: {podSelector: {matchLabels: {app: web}}, ingress: [{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}]}`)
	for _, cn := range []conn{{appFront, tcp, 1, true}, {monOther, tcp, 1, true}, {teamFront, tcp, 1, false}} {
		if got, why, err := IngressAllowed(nps, web, cn.src, cn.proto, cn.port); err != nil || got != cn.want {
			t.Errorf("two policies: from %+v: %v %s %v, want %v", cn.src, got, why, err, cn.want)
		}
	}
	// Malformed peers are errors, not verdicts.
	for _, bad := range []string{`
metadata: {name: p, namespace: app}
spec: {podSelector: {}, ingress: [{from: [{}]}]}`, `
metadata: {name: p, namespace: app}
spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}]}`, `
metadata: {name: p, namespace: app}
spec: {podSelector: {}, ingress: [{from: [{podSelector: {matchExpressions: [{key: a, operator: Bogus}]}}]}]}`} {
		if _, _, err := IngressAllowed(policies(t, bad), web, teamFront, tcp, 1); err == nil {
			t.Errorf("no error for %s", bad)
		}
	}
}
