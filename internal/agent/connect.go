package agent

import (
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/internal/kube"
)

// RESTConfig resolves the connection: --kubeconfig, else in-cluster, else the
// default loading rules ($KUBECONFIG, ~/.kube/config); kubeContext picks a
// context of the kubeconfig.
func RESTConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	if kubeconfig == "" && kubeContext == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to connect to (try --kubeconfig, or --demo): %w", err)
	}
	return cfg, nil
}

// ClientsFor builds the agent's clients on rc: the typed clientset over
// protobuf (Secrets, Pods, ServiceAccounts decode much faster), the protobuf
// connection of the wire decoder (Secrets and Pods read straight into records),
// the dynamic and discovery clients over JSON (CRDs have no protobuf encoding).
func ClientsFor(rc *rest.Config, userAgent string) (Clients, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = userAgent
	rc.QPS, rc.Burst = 20, 40
	pb := kube.ProtobufConfig(rc)
	cs, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return Clients{}, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Clients{}, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Core: cs, Dynamic: dyn, Discovery: disco, Wire: pb}, nil
}

// Connect resolves the connection and builds the clients.
func Connect(kubeconfig, kubeContext, userAgent string) (Clients, *rest.Config, error) {
	rc, err := RESTConfig(kubeconfig, kubeContext)
	if err != nil {
		return Clients{}, nil, err
	}
	c, err := ClientsFor(rc, userAgent)
	return c, rc, err
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
