package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Argo CD's binaries as test/tools/build.sh installs them: one argocd binary
// (v3.2.9) and symlinks to it, since Argo CD picks the component from the name
// it runs as; redis-server from Debian.
const (
	ArgoCDBin           = "argocd"
	ArgoCDControllerBin = "argocd-application-controller"
	ArgoCDRepoServerBin = "argocd-repo-server"
	ArgoCDServerBin     = "argocd-server"
	RedisBin            = "redis-server"
)

// ArgoCDNamespace is the namespace Argo CD's components run for (their
// ConfigMaps, Secret, AppProjects and Applications).
const ArgoCDNamespace = "argocd"

// ArgoCDAccount is the local Argo CD account the stack configures (with the
// apiKey capability and read access to Applications) when it runs argocd-server:
// ArgoCDToken generates an API token for it.
const ArgoCDAccount = "driftwatch"

// The files test/tools/build.sh copies from the Argo CD v3.2.9 module into
// ArgoCDDir(): its CRDs, its own config objects, and the RBAC roles of the
// controller and the API server.
var argoCDFiles = []string{
	"application-crd.yaml", "appproject-crd.yaml",
	"argocd-cm.yaml", "argocd-rbac-cm.yaml", "argocd-secret.yaml",
	"argocd-application-controller-clusterrole.yaml", "argocd-application-controller-role.yaml",
	"argocd-server-clusterrole.yaml", "argocd-server-role.yaml",
}

// ArgoCDDir is where build.sh copies Argo CD's manifests: $DRIFTWATCH_ARGOCD,
// else ToolsBin()/../argocd.
func ArgoCDDir() string {
	if d := os.Getenv("DRIFTWATCH_ARGOCD"); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(tools.ToolsBin()), "argocd")
}

func argoCDFile(name string) (string, error) {
	p := filepath.Join(ArgoCDDir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("Argo CD manifest %s not found: run `make tools` (or test/tools/build.sh), "+
			"which copies it from the Argo CD module in the Go module cache: %w", p, err)
	}
	return p, nil
}

// ArgoGVR and AppProjectGVR are Argo CD's resources.
var (
	ArgoGVR       = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

// argoCD is the running Argo CD part of a stack.
type argoCD struct {
	dir        string
	redis      *process
	repoServer *process
	controller *process
	server     *process
	serverURL  string
}

func (a *argoCD) processes() []*process {
	if a == nil {
		return nil
	}
	// Stop order: the API server and the controller before what they use.
	return []*process{a.server, a.controller, a.repoServer, a.redis}
}

// ArgoCDServerURL is argocd-server's plain-HTTP URL (http://127.0.0.1:PORT;
// it runs with --insecure), "" when the stack does not run it.
func (c *Cluster) ArgoCDServerURL() string {
	if c.argo == nil {
		return ""
	}
	return c.argo.serverURL
}

// ArgoCDControllerLog returns the path of the application controller's log.
func (c *Cluster) ArgoCDControllerLog() string {
	if c.argo == nil || c.argo.controller == nil {
		return ""
	}
	return c.argo.controller.logPath
}

// argoCDTools lists the binaries the Argo CD part needs.
func argoCDTools(opts Options) []string {
	if !opts.ArgoCD {
		return nil
	}
	need := []string{RedisBin, ArgoCDBin, ArgoCDRepoServerBin, ArgoCDControllerBin}
	if opts.ArgoCDServer {
		need = append(need, ArgoCDServerBin)
	}
	return need
}

// startArgoCD installs Argo CD's CRDs and config objects and starts redis, the
// repo-server, the application controller and (with Options.ArgoCDServer)
// argocd-server, all on 127.0.0.1 with their own folders under the stack's.
func (c *Cluster) startArgoCD(ctx context.Context, bins map[string]string) error {
	files := map[string][]byte{}
	for _, f := range argoCDFiles {
		p, err := argoCDFile(f)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[f] = b
	}
	a := &argoCD{dir: filepath.Join(c.Dir, "argocd")}
	c.argo = a
	for _, d := range []string{"redis", "tmp", "ssh", "tls", "gpg", "static", "home"} {
		if err := os.MkdirAll(filepath.Join(a.dir, d), 0o700); err != nil {
			return err
		}
	}

	// CRDs, namespace, config objects as Argo CD's manifests define them.
	if err := c.InstallCRDs(ctx, append(append(files["application-crd.yaml"], "\n---\n"...), files["appproject-crd.yaml"]...)); err != nil {
		return fmt.Errorf("Argo CD CRDs: %w", err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ArgoCDNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, f := range []string{"argocd-cm.yaml", "argocd-rbac-cm.yaml", "argocd-secret.yaml"} {
		if _, err := c.ApplyYAML(ctx, ArgoCDNamespace, files[f], "argocd-manifests"); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if c.opts.ArgoCDServer {
		// A local account that may only read Applications, with the apiKey
		// capability (argocd-cm accounts.<name>; policy in argocd-rbac-cm), as
		// Argo CD's user-management docs set one up for an automation.
		patches := map[string]string{
			"argocd-cm":      `{"data":{"accounts.` + ArgoCDAccount + `":"apiKey"}}`,
			"argocd-rbac-cm": `{"data":{"policy.csv":"p, ` + ArgoCDAccount + `, applications, get, */*, allow\n"}}`,
		}
		for name, p := range patches {
			if _, err := c.Client.CoreV1().ConfigMaps(ArgoCDNamespace).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("configure %s: %w", name, err)
			}
		}
	}
	// The AppProject "default" argocd-server would create (it may not run).
	if _, err := c.ApplyYAML(ctx, ArgoCDNamespace, []byte(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default}
spec:
  sourceRepos: ['*']
  destinations: [{namespace: '*', server: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`), ""); err != nil {
		return fmt.Errorf("AppProject default: %w", err)
	}

	// Identities: the controller and the API server each get a client
	// certificate bound to Argo CD's own ClusterRole and Role for them.
	controllerKC, err := c.argoIdentity(ctx, "argocd-application-controller",
		files["argocd-application-controller-clusterrole.yaml"], files["argocd-application-controller-role.yaml"])
	if err != nil {
		return err
	}
	serverKC := ""
	if c.opts.ArgoCDServer {
		if serverKC, err = c.argoIdentity(ctx, "argocd-server",
			files["argocd-server-clusterrole.yaml"], files["argocd-server-role.yaml"]); err != nil {
			return err
		}
	}

	ports, err := freePorts(7)
	if err != nil {
		return err
	}
	redisAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	repoAddr := fmt.Sprintf("127.0.0.1:%d", ports[1])
	metricsPort := func(port int) string { return fmt.Sprintf("--metrics-port=%d", port) }
	tmp := filepath.Join(a.dir, "tmp")
	common := []string{
		"TMPDIR=" + tmp, // repo clones and manifest caches
		"HOME=" + filepath.Join(a.dir, "home"),
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(a.dir, "ssh"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(a.dir, "tls"),
		"ARGOCD_GNUPGHOME=" + filepath.Join(a.dir, "gpg"),
	}

	a.redis = &process{
		name: "redis-server", path: bins[RedisBin], logPath: filepath.Join(c.LogDir, "redis.log"),
		args: []string{"--port", fmt.Sprint(ports[0]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", filepath.Join(a.dir, "redis"), "--protected-mode", "yes"},
	}
	if err := a.redis.start(); err != nil {
		return err
	}
	if err := c.waitTCP(ctx, 30*time.Second, a.redis, redisAddr); err != nil {
		return err
	}

	repoMetrics := ports[2]
	a.repoServer = &process{
		name: "argocd-repo-server", path: bins[ArgoCDRepoServerBin], logPath: filepath.Join(c.LogDir, "argocd-repo-server.log"),
		args: []string{"--disable-tls", "--redis", redisAddr, "--address", "127.0.0.1", fmt.Sprintf("--port=%d", ports[1]),
			"--metrics-address", "127.0.0.1", metricsPort(repoMetrics), "--loglevel", "info"},
		env: common,
	}
	if err := a.repoServer.start(); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, 60*time.Second, a.repoServer, fmt.Sprintf("http://127.0.0.1:%d/healthz", repoMetrics)); err != nil {
		return err
	}

	// The controller's metrics/health server binds 0.0.0.0 (hard-coded in
	// controller/appcontroller.go, no flag): on a random port, it is the one
	// listener of the stack that is not on loopback only.
	ctrlMetrics := ports[3]
	a.controller = &process{
		name: "argocd-application-controller", path: bins[ArgoCDControllerBin], logPath: filepath.Join(c.LogDir, "argocd-application-controller.log"),
		args: []string{"--kubeconfig", controllerKC, "--namespace", ArgoCDNamespace,
			"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
			// Reconcile every 10 s instead of 180 s; a test still annotates
			// refresh=hard after a commit (as a Git webhook would).
			"--app-resync", "10", metricsPort(ctrlMetrics), "--loglevel", "debug"},
		// ARGOCD_FAKE_IN_CLUSTER: the in-cluster destination
		// (https://kubernetes.default.svc) uses the kubeconfig.
		env: append([]string{"ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + controllerKC}, common...),
	}
	if err := a.controller.start(); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, 60*time.Second, a.controller, fmt.Sprintf("http://127.0.0.1:%d/healthz", ctrlMetrics)); err != nil {
		return err
	}

	if c.opts.ArgoCDServer {
		a.serverURL = fmt.Sprintf("http://127.0.0.1:%d", ports[4])
		a.server = &process{
			name: "argocd-server", path: bins[ArgoCDServerBin], logPath: filepath.Join(c.LogDir, "argocd-server.log"),
			args: []string{"--kubeconfig", serverKC, "--namespace", ArgoCDNamespace, "--insecure",
				"--staticassets", filepath.Join(a.dir, "static"),
				"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
				"--address", "127.0.0.1", fmt.Sprintf("--port=%d", ports[4]),
				"--metrics-address", "127.0.0.1", metricsPort(ports[5]), "--loglevel", "info"},
			env: append([]string{"ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + serverKC}, common...),
		}
		if err := a.server.start(); err != nil {
			return err
		}
		if err := c.waitHTTP(ctx, 60*time.Second, a.server, a.serverURL+"/healthz"); err != nil {
			return err
		}
	}
	return nil
}

// argoIdentity issues a client certificate for user, binds it to the
// ClusterRole and the (argocd-namespaced) Role from Argo CD's manifests, and
// writes a kubeconfig for it.
func (c *Cluster) argoIdentity(ctx context.Context, user string, clusterRoleYAML, roleYAML []byte) (string, error) {
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(clusterRoleYAML, &cr); err != nil {
		return "", fmt.Errorf("%s ClusterRole: %w", user, err)
	}
	var r rbacv1.Role
	if err := yaml.UnmarshalStrict(roleYAML, &r); err != nil {
		return "", fmt.Errorf("%s Role: %w", user, err)
	}
	r.Namespace = ArgoCDNamespace
	subj := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   subj,
	}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if _, err := c.Client.RbacV1().Roles(ArgoCDNamespace).Create(ctx, &r, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if _, err := c.Client.RbacV1().RoleBindings(ArgoCDNamespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: ArgoCDNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
		Subjects:   subj,
	}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	cert, key, err := c.ca.issue(user, nil, false, nil, nil)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, user+".kubeconfig")
	if _, err := writeKubeconfig(path, c.APIServerURL, c.ca.certPEM, user, cert, key); err != nil {
		return "", err
	}
	return path, nil
}

func (c *Cluster) waitTCP(ctx context.Context, timeout time.Duration, proc *process, addr string) error {
	return c.waitFor(ctx, timeout, addr, proc, func(ctx context.Context) (bool, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
}

// ArgoCDToken generates an API token for ArgoCDAccount the way `argocd account
// generate-token --account driftwatch` does: it logs in as admin (with the
// initial password argocd-server wrote into argocd-initial-admin-secret) and
// asks POST /api/v1/account/{name}/token. The stack must run argocd-server.
func (c *Cluster) ArgoCDToken(t testing.TB) string {
	t.Helper()
	if c.ArgoCDServerURL() == "" {
		t.Fatal("ArgoCDToken: the stack was started without Options.ArgoCDServer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := c.argoAdminSession(ctx, t)
	var tok struct {
		Token string `json:"token"`
	}
	if err := c.argoAPI(ctx, http.MethodPost, "/api/v1/account/"+ArgoCDAccount+"/token", admin,
		map[string]string{"name": ArgoCDAccount, "id": fmt.Sprintf("e2e-%d", time.Now().UnixNano())}, &tok); err != nil {
		t.Fatalf("argocd account token: %v", err)
	}
	if tok.Token == "" {
		t.Fatal("argocd returned an empty token")
	}
	return tok.Token
}

// argoAdminSession logs in to argocd-server as admin with the initial
// password argocd-server wrote into argocd-initial-admin-secret (as `argocd
// login` does) and returns the session token.
func (c *Cluster) argoAdminSession(ctx context.Context, t testing.TB) string {
	t.Helper()
	var password string
	if err := c.waitFor(ctx, 60*time.Second, "secret argocd-initial-admin-secret", c.argo.server, func(ctx context.Context) (bool, error) {
		s, err := c.Client.CoreV1().Secrets(ArgoCDNamespace).Get(ctx, "argocd-initial-admin-secret", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		password = string(s.Data["password"])
		return password != "", nil
	}); err != nil {
		t.Fatal(err)
	}
	var session struct {
		Token string `json:"token"`
	}
	if err := c.argoAPI(ctx, http.MethodPost, "/api/v1/session", "",
		map[string]string{"username": "admin", "password": password}, &session); err != nil {
		t.Fatalf("argocd login as admin: %v", err)
	}
	return session.Token
}

// argoAPI calls argocd-server's REST API (grpc-gateway) with a JSON body.
func (c *Cluster) argoAPI(ctx context.Context, method, path, token string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.ArgoCDServerURL()+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		// The body is an error message; it carries no token or password.
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// RefreshApp asks Argo CD to compare an Application again now, with a fresh
// look at Git (annotation argocd.argoproj.io/refresh=hard, as a Git webhook or
// `argocd app get --hard-refresh` would): without it a new commit is noticed
// only after the revision cache expires (3 min).
func (c *Cluster) RefreshApp(t testing.TB, namespace, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`
	if _, err := c.Dynamic.Resource(ArgoGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
		t.Fatalf("refresh Application %s/%s: %v", namespace, name, err)
	}
}

// GitRepo is a local git repository Argo CD reads as a file:// URL (the repo
// type Argo CD's own e2e fixtures use), inside the stack's folder.
type GitRepo struct {
	Dir string
	// URL is file://Dir.
	URL string
}

// NewGitRepo creates an empty repository (branch main) named name.
func (c *Cluster) NewGitRepo(t testing.TB, name string) *GitRepo {
	t.Helper()
	dir := filepath.Join(c.Dir, "git", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &GitRepo{Dir: dir, URL: "file://" + dir}
	r.git(t, "init", "--quiet", "--initial-branch=main")
	return r
}

// Commit writes files (path -> content; an empty content deletes the file),
// commits them and returns the commit's SHA.
func (r *GitRepo) Commit(t testing.TB, message string, files map[string]string) string {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.git(t, "add", "--all")
	r.git(t, "commit", "--quiet", "--allow-empty", "-m", message)
	return strings.TrimSpace(r.git(t, "rev-parse", "HEAD"))
}

func (r *GitRepo) git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@driftwatch.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@driftwatch.invalid",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
