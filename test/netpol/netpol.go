// Package netpol decides, without a policy engine, whether Kubernetes
// NetworkPolicies (networking.k8s.io/v1) admit a connection to a pod. The
// chart tests (deploy/) run it on the rendered policy and the node e2e
// (test/e2e/node) on the policy the real apiserver holds, next to what the
// node's data plane does.
//
// It follows the API's documented semantics
// (https://kubernetes.io/docs/concepts/services-networking/network-policies/):
//   - a policy applies to the pods of its own namespace its podSelector
//     selects ({} every pod);
//   - it restricts ingress when its policyTypes name Ingress; without
//     policyTypes, ingress is always restricted (egress only with egress
//     rules);
//   - a pod no ingress-restricting policy selects admits every connection;
//     one that such a policy selects admits only what some rule of some
//     such policy admits (rules and policies add up; none denies);
//   - a rule admits a connection when one of its ports matches (no ports:
//     every port; a port without a number: every port of that protocol; a
//     protocol left out is TCP; endPort makes a range; a port name is the
//     destination pod's containerPort of that name and protocol) and one of
//     its peers matches (no from: every source);
//   - peers OR; within one peer, namespaceSelector AND podSelector; a
//     podSelector alone means the policy's own namespace; a selector {}
//     matches everything, a missing one is no constraint of that peer; an
//     ipBlock matches the source address inside cidr and outside every
//     except.
//
// Traffic from the destination pod's own node (the kubelet's probes) is
// outside the model: the API lets no policy block it ("What you can't do with
// network policies"), so the evaluator is not asked about it.
package netpol

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod is the destination of a connection.
type Pod struct {
	Namespace string
	Labels    map[string]string
	// Ports are its containers' ports, for rules that name a port.
	Ports []corev1.ContainerPort
}

// Source is where a connection comes from: a pod (Labels non-nil, with its
// namespace and the namespace's labels) or an address outside any pod (Labels
// nil), which only an ipBlock can match.
type Source struct {
	Namespace       string
	NamespaceLabels map[string]string
	Labels          map[string]string
	IP              netip.Addr
}

// PodSource is a pod in namespace ns (whose labels are nsLabels; the
// kubernetes.io/metadata.name label the apiserver sets on every namespace is
// added when missing) with the given labels.
func PodSource(ns string, nsLabels, podLabels map[string]string) Source {
	l := map[string]string{corev1.LabelMetadataName: ns}
	for k, v := range nsLabels {
		l[k] = v
	}
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	return Source{Namespace: ns, NamespaceLabels: l, Labels: podLabels}
}

// restrictsIngress: the policy's policyTypes name Ingress, or it has none
// (then ingress is always restricted).
func restrictsIngress(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return true
	}
	return slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("selector %v: %w", s, err)
	}
	return sel, nil
}

// IngressAllowed reports whether the policies admit a connection from src to
// dst on proto/port, and why: the policy and rule that admit it, or that dst
// is not isolated, or that no rule admits it.
func IngressAllowed(policies []networkingv1.NetworkPolicy, dst Pod, src Source, proto corev1.Protocol, port int32) (bool, string, error) {
	isolated := false
	for i := range policies {
		np := &policies[i]
		if np.Namespace != dst.Namespace || !restrictsIngress(np) {
			continue
		}
		sel, err := selector(&np.Spec.PodSelector)
		if err != nil {
			return false, "", err
		}
		if !sel.Matches(labels.Set(dst.Labels)) {
			continue
		}
		isolated = true
		for j, r := range np.Spec.Ingress {
			pm, err := portMatches(r.Ports, dst, proto, port)
			if err != nil || !pm {
				if err != nil {
					return false, "", fmt.Errorf("%s/%s ingress[%d]: %w", np.Namespace, np.Name, j, err)
				}
				continue
			}
			fm, err := fromMatches(r.From, np.Namespace, src)
			if err != nil {
				return false, "", fmt.Errorf("%s/%s ingress[%d]: %w", np.Namespace, np.Name, j, err)
			}
			if fm {
				return true, fmt.Sprintf("admitted by %s/%s ingress[%d]", np.Namespace, np.Name, j), nil
			}
		}
	}
	if !isolated {
		return true, "no policy restricts ingress to the pod", nil
	}
	return false, "no ingress rule admits it", nil
}

func portMatches(ports []networkingv1.NetworkPolicyPort, dst Pod, proto corev1.Protocol, port int32) (bool, error) {
	if len(ports) == 0 {
		return true, nil
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true, nil
		}
		lo := p.Port.IntVal
		if p.Port.Type == intstr.String {
			// A named port: the destination's containerPort of that name
			// and protocol (none: the rule admits nothing on this pod).
			lo = -1
			for _, cp := range dst.Ports {
				cpp := cp.Protocol
				if cpp == "" {
					cpp = corev1.ProtocolTCP
				}
				if cp.Name == p.Port.StrVal && cpp == proto {
					lo = cp.ContainerPort
				}
			}
			if p.EndPort != nil {
				return false, fmt.Errorf("endPort with the named port %q", p.Port.StrVal)
			}
		}
		hi := lo
		if p.EndPort != nil {
			hi = *p.EndPort
		}
		if lo >= 0 && port >= lo && port <= hi {
			return true, nil
		}
	}
	return false, nil
}

func fromMatches(peers []networkingv1.NetworkPolicyPeer, policyNS string, src Source) (bool, error) {
	if len(peers) == 0 {
		return true, nil
	}
	for _, p := range peers {
		ok, err := peerMatches(p, policyNS, src)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func peerMatches(p networkingv1.NetworkPolicyPeer, policyNS string, src Source) (bool, error) {
	if p.IPBlock != nil {
		if p.PodSelector != nil || p.NamespaceSelector != nil {
			return false, fmt.Errorf("a peer with ipBlock and a selector")
		}
		cidr, err := netip.ParsePrefix(p.IPBlock.CIDR)
		if err != nil {
			return false, err
		}
		if !src.IP.IsValid() || !cidr.Contains(src.IP) {
			return false, nil
		}
		for _, e := range p.IPBlock.Except {
			ex, err := netip.ParsePrefix(e)
			if err != nil {
				return false, err
			}
			if ex.Contains(src.IP) {
				return false, nil
			}
		}
		return true, nil
	}
	if p.PodSelector == nil && p.NamespaceSelector == nil {
		return false, fmt.Errorf("an empty peer")
	}
	// Both selectors parsed first: a malformed one is an error whatever
	// the source.
	var nsSel, podSel labels.Selector
	var err error
	if p.NamespaceSelector != nil {
		if nsSel, err = selector(p.NamespaceSelector); err != nil {
			return false, err
		}
	}
	if p.PodSelector != nil {
		if podSel, err = selector(p.PodSelector); err != nil {
			return false, err
		}
	}
	if src.Labels == nil {
		return false, nil // not a pod: no selector matches it
	}
	if nsSel == nil && src.Namespace != policyNS {
		return false, nil // a podSelector alone: the policy's namespace
	}
	if nsSel != nil && !nsSel.Matches(labels.Set(src.NamespaceLabels)) {
		return false, nil
	}
	return podSel == nil || podSel.Matches(labels.Set(src.Labels)), nil
}
