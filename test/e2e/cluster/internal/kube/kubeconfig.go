package kube

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file for user (a client certificate)
// at server, trusting caPEM, and returns it as a rest.Config (QPS 100,
// burst 200).
func WriteKubeconfig(path, server string, caPEM []byte, user string, certPEM, keyPEM []byte) (*rest.Config, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 100, 200
	return rc, nil
}

// ClientKubeconfig issues a client certificate for user in groups and
// writes a kubeconfig for it at path (WriteKubeconfig): the identity of a
// component of the stack (the admin, the agent, a controller, the kubelet).
func (ca *CA) ClientKubeconfig(path, server, user string, groups []string) (*rest.Config, error) {
	cert, key, err := ca.Issue(user, groups, false, nil, nil)
	if err != nil {
		return nil, err
	}
	return WriteKubeconfig(path, server, ca.CertPEM, user, cert, key)
}
