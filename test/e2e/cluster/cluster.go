// Package cluster starts the real test stack the end-to-end tests run on:
// etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 (plus,
// optionally, the real External Secrets Operator controller and the ESO and
// Argo CD CRDs), with generated certificates, an admin kubeconfig and a
// restricted kubeconfig for the agent bound by real RBAC to the project's own
// ClusterRole (deploy/manifests/clusterrole.yaml). On request it adds the
// parts its subpackages run on that control plane: the real node (package
// node) and the real Argo CD and Flux (package gitops).
//
// One stack serves one test package: start it from TestMain with Main, get it
// in a test with Get, and give every test its own namespace:
//
//	func TestMain(m *testing.M) {
//		os.Exit(cluster.Main(m, cluster.Options{ESOController: true}))
//	}
//
//	func TestSomething(t *testing.T) {
//		c := cluster.Get(t)
//		ns := c.NewNamespace(t)
//		agent := c.StartAgent(t)
//		agent.WaitReady(t, time.Minute)
//		...
//	}
//
// The binaries come from test/tools/build.sh (`make tools`); set
// DRIFTWATCH_E2E=0 to skip every e2e test.
package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/node"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Options choose the optional parts of the stack.
type Options struct {
	// ESOCRDs installs External Secrets Operator's CRDs (tools.CRDDir()/eso-bundle.yaml).
	ESOCRDs bool
	// ArgoCDCRDs installs Argo CD's Application CRD (tools.CRDDir()/argocd-application-crd.yaml,
	// from v2.14.21) and nothing else of Argo CD. Ignored with ArgoCD, which
	// installs v3.2.9's.
	ArgoCDCRDs bool
	// ArgoCD runs the real Argo CD v3.2.9 (see gitops/argocd.go): its Application and
	// AppProject CRDs, its argocd-cm / argocd-rbac-cm / argocd-secret, an
	// AppProject "default", redis, argocd-repo-server and
	// argocd-application-controller, on 127.0.0.1.
	ArgoCD bool
	// ArgoCDServer also runs argocd-server (plain HTTP, a local account
	// ArgoCDAccount that may read Applications); implies ArgoCD.
	ArgoCDServer bool
	// ESOController starts the real ESO controller; implies ESOCRDs.
	ESOController bool
	// Flux runs the real Flux (see gitops/flux.go): source-controller and
	// kustomize-controller v1.9.6 and helm-controller v1.6.4 with their CRDs,
	// the flux-system namespace,
	// and a Git HTTP server (git http-backend) for the repositories NewGitRepo
	// makes.
	Flux bool
	// Node runs a real node (package node): containerd, runc, CNI bridge
	// networking, kubelet, kube-proxy and kube-scheduler, inside a network
	// namespace of the stack's own. Needs root.
	Node bool
	// Logf receives progress lines; nil writes them to stderr.
	Logf func(format string, args ...any)
}

// AgentUser is the user name in the restricted kubeconfig's client
// certificate; the ClusterRoleBinding "driftwatch" binds it to the ClusterRole
// from deploy/manifests/clusterrole.yaml.
const AgentUser = "driftwatch"

// FieldManager is the field manager this package's server-side applies use.
const FieldManager = "driftwatch-e2e"

// Cluster is a running stack. Its exported fields are read-only.
type Cluster struct {
	// Dir is the stack's temporary folder (certificates, kubeconfigs, etcd
	// data, logs, the agent binary). Stop removes it.
	Dir string
	// LogDir holds one log file per process.
	LogDir string

	// AdminKubeconfig is a kubeconfig file for user "driftwatch-e2e-admin"
	// in group system:masters; AdminConfig is the same as a rest.Config.
	AdminKubeconfig string
	AdminConfig     *rest.Config
	// AgentKubeconfig is a kubeconfig file for user AgentUser (no groups but
	// system:authenticated), bound only to the project's ClusterRole;
	// AgentConfig is the same as a rest.Config.
	AgentKubeconfig string
	AgentConfig     *rest.Config

	// Client and Dynamic are admin clients.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface

	// APIServerURL is https://127.0.0.1:PORT; EtcdURL is http://127.0.0.1:PORT.
	APIServerURL string
	EtcdURL      string
	// ESOMetricsURL is the ESO controller's /metrics URL ("" without it).
	ESOMetricsURL string

	opts      Options
	logf      func(string, ...any)
	etcd      *proc.Process
	apiserver *proc.Process
	kcm       *proc.Process
	eso       *proc.Process
	esoLive   string
	ca        *kube.CA
	argo      *gitops.ArgoCD
	flux      *gitops.Flux
	node      *node.Node

	mu      sync.Mutex
	agents  []*proc.Process // every agent process ever started, for teardown
	extra   []*proc.Process // every StartProcess process, for teardown
	stopped bool
	mapper  *resetMapper
}

// Start starts a stack. On error everything already started is torn down.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.ESOController {
		opts.ESOCRDs = true
	}
	if opts.ArgoCDServer {
		opts.ArgoCD = true
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		}
	}
	t0 := time.Now()

	// Find everything before creating anything.
	if opts.Node && os.Geteuid() != 0 {
		// A failure, not a skip: make test runs as root (build.sh installs
		// Debian packages), and a node test that silently did not run would
		// be reported as passing.
		return nil, fmt.Errorf("Options.Node needs root (network namespace, mounts, cgroups, containers); running as uid %d", os.Geteuid())
	}
	need := []string{tools.EtcdBin, tools.APIServerBin, tools.ControllerManagerBin}
	if opts.ESOController {
		need = append(need, tools.ESOControllerBin)
	}
	if opts.ArgoCD {
		need = append(need, gitops.ArgoCDTools(opts.ArgoCDServer)...)
	}
	if opts.Flux {
		need = append(need, gitops.FluxTools()...)
	}
	if opts.Node {
		need = append(need, node.Tools()...)
	}
	bins := map[string]string{}
	for _, n := range need {
		p, err := tools.Tool(n)
		if err != nil {
			return nil, err
		}
		bins[n] = p
	}
	var crdFiles []string
	if opts.ESOCRDs {
		p, err := tools.UpstreamPath(tools.ESOCRDFile)
		if err != nil {
			return nil, err
		}
		crdFiles = append(crdFiles, p)
	}
	if opts.ArgoCD {
		if err := gitops.CheckArgoCDManifests(); err != nil {
			return nil, err
		}
	} else if opts.ArgoCDCRDs {
		p, err := tools.UpstreamPath(tools.ArgoCDCRDFile)
		if err != nil {
			return nil, err
		}
		crdFiles = append(crdFiles, p)
	}
	if opts.Flux {
		if err := gitops.CheckFluxManifests(); err != nil {
			return nil, err
		}
	}
	root, err := tools.RepoRoot()
	if err != nil {
		return nil, err
	}
	clusterRoleYAML, err := os.ReadFile(filepath.Join(root, "deploy", "manifests", "clusterrole.yaml"))
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "driftwatch-e2e-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, LogDir: filepath.Join(dir, "logs"), opts: opts, logf: logf}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.logTails(40))
			c.Stop()
		}
	}()
	for _, d := range []string{c.LogDir, filepath.Join(dir, "pki"), filepath.Join(dir, "etcd"), filepath.Join(dir, "apiserver")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return c, err
		}
	}

	ports, err := proc.FreePorts(5)
	if err != nil {
		return c, err
	}
	etcdClient, etcdPeer, apiPort, esoMetrics, esoLive := ports[0], ports[1], ports[2], ports[3], ports[4]
	c.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	c.APIServerURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	// Certificates and kubeconfigs.
	pki := filepath.Join(dir, "pki")
	ca, err := kube.NewCA()
	if err != nil {
		return c, err
	}
	c.ca = ca
	servingIPs := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(node.APIServiceIP)}
	if opts.Node {
		servingIPs = append(servingIPs, net.ParseIP(node.NodeIP))
	}
	servingCert, servingKey, err := ca.Issue("kube-apiserver", nil, true, servingIPs,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return c, err
	}
	files := map[string][]byte{"ca.crt": ca.CertPEM, "apiserver.crt": servingCert, "apiserver.key": servingKey}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(pki, name), b, 0o600); err != nil {
			return c, err
		}
	}
	saKey, saPub, err := kube.WriteServiceAccountKeys(pki)
	if err != nil {
		return c, err
	}
	c.AdminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if c.AdminConfig, err = ca.ClientKubeconfig(c.AdminKubeconfig, c.APIServerURL, "driftwatch-e2e-admin", []string{"system:masters"}); err != nil {
		return c, err
	}
	c.AgentKubeconfig = filepath.Join(dir, "agent.kubeconfig")
	if c.AgentConfig, err = ca.ClientKubeconfig(c.AgentKubeconfig, c.APIServerURL, AgentUser, nil); err != nil {
		return c, err
	}
	if c.Client, err = kubernetes.NewForConfig(c.AdminConfig); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.AdminConfig); err != nil {
		return c, err
	}
	c.mapper = newResetMapper(c.Client.Discovery())

	// etcd.
	peer := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	c.etcd = &proc.Process{
		Name: "etcd", Path: bins[tools.EtcdBin], LogPath: filepath.Join(c.LogDir, "etcd.log"),
		Args: etcdArgs("e2e", filepath.Join(dir, "etcd"), c.EtcdURL, peer),
	}
	if err := c.StartEtcd(); err != nil {
		return c, err
	}
	tEtcd := time.Now()

	// kube-apiserver. With a node, the Node authorizer lets the kubelet read
	// what its pods reference.
	authzModes := "RBAC"
	if opts.Node {
		authzModes = "Node,RBAC"
	}
	c.apiserver = &proc.Process{
		Name: "kube-apiserver", Path: bins[tools.APIServerBin], LogPath: filepath.Join(c.LogDir, "kube-apiserver.log"),
		Args: append(apiserverArgs(c.EtcdURL, apiPort, dir, pki, saKey, saPub,
			"https://kubernetes.default.svc.cluster.local", node.ServiceCIDR, authzModes), "--allow-privileged=true"),
	}
	if err := c.StartAPIServer(); err != nil {
		return c, err
	}
	tAPI := time.Now()

	// kube-controller-manager: namespaces get their default ServiceAccount,
	// Deployments get ReplicaSets and Pods, owned objects are collected.
	c.kcm = &proc.Process{
		Name: "kube-controller-manager", Path: bins[tools.ControllerManagerBin], LogPath: filepath.Join(c.LogDir, "kube-controller-manager.log"),
		Args: []string{
			"--kubeconfig=" + c.AdminKubeconfig,
			"--leader-elect=false",
			"--secure-port=0",
			"--bind-address=127.0.0.1",
			"--service-account-private-key-file=" + saKey,
			"--root-ca-file=" + filepath.Join(pki, "ca.crt"),
			"--use-service-account-credentials=false",
			"--controllers=*",
		},
	}
	if err := c.kcm.Start(); err != nil {
		return c, err
	}

	// The agent's RBAC: the project's ClusterRole, bound to AgentUser.
	if err := c.installAgentRBAC(ctx, clusterRoleYAML); err != nil {
		return c, fmt.Errorf("agent RBAC: %w", err)
	}

	// CRDs.
	for _, f := range crdFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return c, err
		}
		if err := c.InstallCRDs(ctx, b); err != nil {
			return c, fmt.Errorf("install CRDs from %s: %w", f, err)
		}
	}
	tCRD := time.Now()

	// The controller-manager works once "default" has its ServiceAccount.
	if err := proc.WaitFor(ctx, 60*time.Second, "the default ServiceAccount (kube-controller-manager)", c.kcm, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return c, err
	}

	if opts.Node {
		c.node, err = node.Start(ctx, node.Env{
			Dir: c.Dir, LogDir: c.LogDir,
			AdminKubeconfig: c.AdminKubeconfig, AdminConfig: c.AdminConfig, Client: c.Client, CA: c.ca,
			APIPort: apiPort, Bins: bins, Logf: c.logf,
		})
		if err != nil {
			return c, fmt.Errorf("node: %w", err)
		}
	}

	if opts.ESOController {
		c.eso = &proc.Process{
			Name: "external-secrets", Path: bins[tools.ESOControllerBin], LogPath: filepath.Join(c.LogDir, "external-secrets.log"),
			// controller-runtime's GetConfig reads KUBECONFIG; ESO's cobra
			// command does not expose --kubeconfig.
			Env: []string{"KUBECONFIG=" + c.AdminKubeconfig},
		}
		c.setESOPorts(esoMetrics, esoLive)
		if err := c.startESO(ctx, 60*time.Second); err != nil {
			return c, err
		}
	}
	if opts.ArgoCD {
		tArgo := time.Now()
		if c.argo, err = gitops.StartArgoCD(ctx, c.gitopsEnv(bins), opts.ArgoCDServer); err != nil {
			return c, fmt.Errorf("Argo CD: %w", err)
		}
		logf("Argo CD up in %s", time.Since(tArgo).Round(time.Millisecond))
	}
	if opts.Flux {
		tFlux := time.Now()
		if c.flux, err = gitops.StartFlux(ctx, c.gitopsEnv(bins)); err != nil {
			return c, fmt.Errorf("Flux: %w", err)
		}
		logf("Flux up in %s", time.Since(tFlux).Round(time.Millisecond))
	}
	logf("stack up in %s (etcd %s, kube-apiserver %s, RBAC+CRDs %s, rest %s) in %s",
		time.Since(t0).Round(time.Millisecond), tEtcd.Sub(t0).Round(time.Millisecond), tAPI.Sub(tEtcd).Round(time.Millisecond),
		tCRD.Sub(tAPI).Round(time.Millisecond), time.Since(tCRD).Round(time.Millisecond), dir)
	return c, nil
}

// gitopsEnv is what the GitOps installers get of the stack.
func (c *Cluster) gitopsEnv(bins map[string]string) gitops.Env {
	return gitops.Env{
		Dir: c.Dir, LogDir: c.LogDir, APIServerURL: c.APIServerURL, CA: c.ca,
		Client: c.Client, Dynamic: c.Dynamic, Bins: bins,
		InstallCRDs: c.InstallCRDs, ApplyYAML: c.ApplyYAML,
	}
}

// Node returns the stack's node (nil without Options.Node).
func (c *Cluster) Node() *node.Node { return c.node }

// ArgoCD returns the stack's Argo CD (nil without Options.ArgoCD).
func (c *Cluster) ArgoCD() *gitops.ArgoCD { return c.argo }

// Flux returns the stack's Flux (nil without Options.Flux).
func (c *Cluster) Flux() *gitops.Flux { return c.flux }

// NewGitRepo creates an empty repository (branch main) named name in the
// stack's folder: Argo CD reads it at its URL (file://), Flux at
// Flux().HTTPURL.
func (c *Cluster) NewGitRepo(t testing.TB, name string) *gitops.GitRepo {
	t.Helper()
	return gitops.NewGitRepo(t, c.Dir, name)
}

// etcdArgs are the flags of a one-member etcd named name (fsync off: test
// data).
func etcdArgs(name, dataDir, clientURL, peerURL string) []string {
	return []string{
		"--name=" + name,
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + name + "=" + peerURL,
		"--unsafe-no-fsync",
	}
}

// apiserverArgs are the flags of a kube-apiserver on 127.0.0.1:port with its
// certificates in pki (ca.crt, apiserver.crt/.key), its cert-dir under dir,
// the service-account key pair and issuer given, and no endpoint reconciler.
func apiserverArgs(etcdURL string, port int, dir, pki, saKey, saPub, issuer, serviceCIDR, authz string) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(dir, "apiserver"),
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-account-issuer=" + issuer,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=" + authz,
		"--endpoint-reconciler-type=none",
		// Without it a SIGTERM waits for open watches until the request timeout.
		"--shutdown-watch-termination-grace-period=2s",
	}
}

func (c *Cluster) installAgentRBAC(ctx context.Context, clusterRoleYAML []byte) error {
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(clusterRoleYAML, &role); err != nil {
		return fmt.Errorf("deploy/manifests/clusterrole.yaml: %w", err)
	}
	if role.Kind != "ClusterRole" {
		return fmt.Errorf("deploy/manifests/clusterrole.yaml holds a %q, not a ClusterRole", role.Kind)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := kube.BindClusterRole(ctx, c.Client, "driftwatch-e2e-agent", role.Name, AgentUser); err != nil {
		return err
	}
	// The RBAC authorizer reads through an informer: wait until it sees the
	// binding, as the agent would.
	agent, err := kubernetes.NewForConfig(c.AgentConfig)
	if err != nil {
		return err
	}
	return proc.WaitFor(ctx, 30*time.Second, "the agent's ClusterRoleBinding to take effect", c.apiserver, func(ctx context.Context) (bool, error) {
		_, err := agent.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

// ESOControllerLog returns the path of the ESO controller's log file.
func (c *Cluster) ESOControllerLog() string {
	if c.eso == nil {
		return ""
	}
	return c.eso.LogPath
}

// Kubectl runs the real kubectl with the admin kubeconfig, stdin (if not
// empty) on its standard input, and returns its standard output.
func (c *Cluster) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	kubectl, err := tools.Tool(tools.KubectlBin)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + c.AdminKubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

var nsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// NewNamespace creates a fresh namespace named after the test, waits until
// the controller-manager has given it its "default" ServiceAccount, and
// deletes it when the test ends.
func (c *Cluster) NewNamespace(t testing.TB) string {
	t.Helper()
	prefix := strings.Trim(nsUnsafe.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.Trim(prefix[:40], "-")
	}
	if prefix == "" {
		prefix = "e2e"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: map[string]string{"driftwatch-e2e": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	name := ns.Name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err := c.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete namespace %s: %v", name, err)
		}
	})
	if err := proc.WaitFor(ctx, 60*time.Second, "ServiceAccount "+name+"/default", c.kcm, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	return name
}
