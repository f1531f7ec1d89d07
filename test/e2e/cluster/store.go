package cluster

// A second control plane as a secret store (issue 32): ESO's `kubernetes`
// provider reads Secrets from a (remote) cluster's apiserver with a
// ServiceAccount token or a client certificate. This is that remote cluster:
// its own etcd and kube-apiserver (the same binaries as the stack's), its own
// CA, RBAC, and service-account token signing, on 127.0.0.1. No
// controller-manager: nothing in the store needs one (ServiceAccounts are
// created by the test, tokens come from the TokenRequest API).

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// StoreServer is the second apiserver a test started with StartStoreServer.
type StoreServer struct {
	// URL is https://127.0.0.1:PORT; CAPEM the CA that signed its serving
	// certificate (and the client certificates ClientCert issues).
	URL   string
	CAPEM []byte
	// Client is an admin (system:masters) client of the store.
	Client kubernetes.Interface

	ca        *kube.CA
	etcd      *Process
	apiserver *Process
	t         testing.TB
}

// StartStoreServer starts the store's etcd and kube-apiserver, waits until
// the apiserver is ready and returns it; both stop when the test ends.
func (c *Cluster) StartStoreServer(t testing.TB) *StoreServer {
	t.Helper()
	etcdBin, err := tools.Tool(tools.EtcdBin)
	if err != nil {
		t.Fatal(err)
	}
	apiBin, err := tools.Tool(tools.APIServerBin)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.TempDir(t, "store")
	pki := filepath.Join(dir, "pki")
	for _, d := range []string{pki, filepath.Join(dir, "etcd"), filepath.Join(dir, "apiserver")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ports, err := proc.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	s := &StoreServer{URL: fmt.Sprintf("https://127.0.0.1:%d", ports[2]), t: t}

	ca, err := kube.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	s.ca, s.CAPEM = ca, ca.CertPEM
	servingCert, servingKey, err := ca.Issue("store-apiserver", nil, true, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	adminCert, adminKey, err := ca.Issue("store-admin", []string{"system:masters"}, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ca.crt": ca.CertPEM, "apiserver.crt": servingCert, "apiserver.key": servingKey} {
		if err := os.WriteFile(filepath.Join(pki, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	saKey, saPub, err := kube.WriteServiceAccountKeys(pki)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kube.WriteKubeconfig(filepath.Join(dir, "admin.kubeconfig"), s.URL, ca.CertPEM, "store-admin", adminCert, adminKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}

	s.etcd = c.StartProcess(t, "store-etcd", etcdBin, nil, etcdArgs("store", filepath.Join(dir, "etcd"), etcdURL, peer)...)
	s.etcd.WaitHTTP(t, etcdURL+"/health", 2*time.Minute)
	s.apiserver = c.StartProcess(t, "store-apiserver", apiBin, nil,
		apiserverArgs(etcdURL, ports[2], dir, pki, saKey, saPub, "https://store.example", "10.97.0.0/24", "RBAC")...)
	s.WaitReady(2 * time.Minute)
	return s
}

// WaitReady waits until the store's apiserver answers /readyz (failing the
// test after timeout or if the process exits).
func (s *StoreServer) WaitReady(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if gone, err := s.apiserver.Exited(); gone {
			s.t.Fatalf("store apiserver exited (%v):\n%s", err, s.apiserver.Tail(60))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = s.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if last == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	s.t.Fatalf("store apiserver not ready within %s: %v\n%s", timeout, last, s.apiserver.Tail(60))
}

// StopAPIServer stops the store's apiserver (SIGTERM, as a node drain or an
// outage of the remote cluster's endpoint): connections to URL are refused
// until StartAPIServer.
func (s *StoreServer) StopAPIServer() { s.apiserver.Stop() }

// StartAPIServer starts the stopped apiserver again on the same port and
// data, and waits until it is ready.
func (s *StoreServer) StartAPIServer() {
	s.t.Helper()
	if err := s.apiserver.proc.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.WaitReady(2 * time.Minute)
}

// ClientCert issues a client certificate of the store's CA for user (no
// groups) valid until notAfter: PEM certificate and key.
func (s *StoreServer) ClientCert(user string, notAfter time.Time) (certPEM, keyPEM []byte) {
	s.t.Helper()
	c, k, err := s.ca.IssueUntil(user, nil, false, nil, nil, notAfter)
	if err != nil {
		s.t.Fatal(err)
	}
	return c, k
}

// Token returns a bound token of ServiceAccount ns/name from the store's
// TokenRequest API, valid for an hour.
func (s *StoreServer) Token(ctx context.Context, ns, name string) string {
	s.t.Helper()
	exp := int64(3600)
	tr, err := s.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return tr.Status.Token
}
