package gitops

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
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
// ArgoCD.Token generates an API token for it.
const ArgoCDAccount = "driftwatch"

// The files test/tools/build.sh copies from the Argo CD v3.2.9 module into
// ArgoCDDir(): its CRDs, its own config objects, and the RBAC roles of the
// controller and the API server.
var argoCDManifests = manifests{
	what: "Argo CD", from: "the Argo CD module", dir: ArgoCDDir,
	files: []string{
		"application-crd.yaml", "appproject-crd.yaml",
		"argocd-cm.yaml", "argocd-rbac-cm.yaml", "argocd-secret.yaml",
		"argocd-application-controller-clusterrole.yaml", "argocd-application-controller-role.yaml",
		"argocd-server-clusterrole.yaml", "argocd-server-role.yaml",
	},
}

// ArgoCDDir is where build.sh copies Argo CD's manifests: $DRIFTWATCH_ARGOCD,
// else tools.ToolsBin()/../argocd.
func ArgoCDDir() string { return manifestDir("DRIFTWATCH_ARGOCD", "argocd") }

// CheckArgoCDManifests reports the first of Argo CD's manifests missing from
// ArgoCDDir (the stack checks before it starts anything).
func CheckArgoCDManifests() error { return argoCDManifests.check() }

// ArgoGVR and AppProjectGVR are Argo CD's resources.
var (
	ArgoGVR       = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

// ArgoCD is the running Argo CD of a stack.
type ArgoCD struct {
	env        Env
	dir        string
	redis      *proc.Process
	repoServer *proc.Process
	controller *proc.Process
	server     *proc.Process
	serverURL  string
}

// Processes lists Argo CD's processes in their stop order (nil-safe).
func (a *ArgoCD) Processes() []*proc.Process {
	if a == nil {
		return nil
	}
	// Stop order: the API server and the controller before what they use.
	return []*proc.Process{a.server, a.controller, a.repoServer, a.redis}
}

// ServerURL is argocd-server's plain-HTTP URL (http://127.0.0.1:PORT;
// it runs with --insecure), "" when the stack does not run it.
func (a *ArgoCD) ServerURL() string {
	if a == nil {
		return ""
	}
	return a.serverURL
}

// ControllerLog returns the path of the application controller's log.
func (a *ArgoCD) ControllerLog() string {
	if a == nil || a.controller == nil {
		return ""
	}
	return a.controller.LogPath
}

// ArgoCDTools lists the binaries Argo CD needs (with argocd-server if server).
func ArgoCDTools(server bool) []string {
	need := []string{RedisBin, ArgoCDBin, ArgoCDRepoServerBin, ArgoCDControllerBin}
	if server {
		need = append(need, ArgoCDServerBin)
	}
	return need
}

// StartArgoCD installs Argo CD's CRDs and config objects and starts redis, the
// repo-server, the application controller and (with server, as
// cluster.Options.ArgoCDServer asks) argocd-server, all on 127.0.0.1 with
// their own folders under the stack's. The ArgoCD is returned on error too
// once anything of it runs: the stack stops its Processes.
func StartArgoCD(ctx context.Context, env Env, server bool) (*ArgoCD, error) {
	files, err := argoCDManifests.read()
	if err != nil {
		return nil, err
	}
	a := &ArgoCD{env: env, dir: filepath.Join(env.Dir, "argocd")}
	return a, a.start(ctx, files, server)
}

func (a *ArgoCD) start(ctx context.Context, files map[string][]byte, server bool) error {
	env, bins := a.env, a.env.Bins
	if err := makeDirs(a.dir, "redis", "tmp", "ssh", "tls", "gpg", "static", "home"); err != nil {
		return err
	}

	// CRDs, namespace, config objects as Argo CD's manifests define them.
	if err := env.installCRDs(ctx, "Argo CD", ArgoCDNamespace, files["application-crd.yaml"], files["appproject-crd.yaml"]); err != nil {
		return err
	}
	for _, f := range []string{"argocd-cm.yaml", "argocd-rbac-cm.yaml", "argocd-secret.yaml"} {
		if _, err := env.ApplyYAML(ctx, ArgoCDNamespace, files[f], "argocd-manifests"); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if server {
		// A local account that may only read Applications, with the apiKey
		// capability (argocd-cm accounts.<name>; policy in argocd-rbac-cm), as
		// Argo CD's user-management docs set one up for an automation.
		patches := map[string]string{
			"argocd-cm":      `{"data":{"accounts.` + ArgoCDAccount + `":"apiKey"}}`,
			"argocd-rbac-cm": `{"data":{"policy.csv":"p, ` + ArgoCDAccount + `, applications, get, */*, allow\n"}}`,
		}
		for name, p := range patches {
			if _, err := env.Client.CoreV1().ConfigMaps(ArgoCDNamespace).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("configure %s: %w", name, err)
			}
		}
	}
	// The AppProject "default" argocd-server would create (it may not run).
	if _, err := env.ApplyYAML(ctx, ArgoCDNamespace, []byte(`apiVersion: argoproj.io/v1alpha1
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
	controllerKC, err := env.argoIdentity(ctx, "argocd-application-controller",
		files["argocd-application-controller-clusterrole.yaml"], files["argocd-application-controller-role.yaml"])
	if err != nil {
		return err
	}
	serverKC := ""
	if server {
		if serverKC, err = env.argoIdentity(ctx, "argocd-server",
			files["argocd-server-clusterrole.yaml"], files["argocd-server-role.yaml"]); err != nil {
			return err
		}
	}

	ports, err := proc.FreePorts(7)
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

	a.redis = &proc.Process{
		Name: "redis-server", Path: bins[RedisBin], LogPath: filepath.Join(env.LogDir, "redis.log"),
		Args: []string{"--port", fmt.Sprint(ports[0]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", filepath.Join(a.dir, "redis"), "--protected-mode", "yes"},
	}
	if err := a.redis.Start(); err != nil {
		return err
	}
	if err := proc.WaitTCP(ctx, 30*time.Second, a.redis, redisAddr); err != nil {
		return err
	}

	repoMetrics := ports[2]
	a.repoServer = &proc.Process{
		Name: "argocd-repo-server", Path: bins[ArgoCDRepoServerBin], LogPath: filepath.Join(env.LogDir, "argocd-repo-server.log"),
		Args: []string{"--disable-tls", "--redis", redisAddr, "--address", "127.0.0.1", fmt.Sprintf("--port=%d", ports[1]),
			"--metrics-address", "127.0.0.1", metricsPort(repoMetrics), "--loglevel", "info"},
		Env: common,
	}
	if err := startController(ctx, a.repoServer, fmt.Sprintf("http://127.0.0.1:%d/healthz", repoMetrics)); err != nil {
		return err
	}

	// The controller's metrics/health server binds 0.0.0.0 (hard-coded in
	// controller/appcontroller.go, no flag): on a random port, it is the one
	// listener of the stack that is not on loopback only.
	ctrlMetrics := ports[3]
	a.controller = &proc.Process{
		Name: "argocd-application-controller", Path: bins[ArgoCDControllerBin], LogPath: filepath.Join(env.LogDir, "argocd-application-controller.log"),
		Args: []string{"--kubeconfig", controllerKC, "--namespace", ArgoCDNamespace,
			"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
			// Reconcile every 10 s instead of 180 s; a test still annotates
			// refresh=hard after a commit (as a Git webhook would).
			"--app-resync", "10", metricsPort(ctrlMetrics), "--loglevel", "debug"},
		// ARGOCD_FAKE_IN_CLUSTER: the in-cluster destination
		// (https://kubernetes.default.svc) uses the kubeconfig.
		Env: append([]string{"ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + controllerKC}, common...),
	}
	if err := startController(ctx, a.controller, fmt.Sprintf("http://127.0.0.1:%d/healthz", ctrlMetrics)); err != nil {
		return err
	}

	if server {
		a.serverURL = fmt.Sprintf("http://127.0.0.1:%d", ports[4])
		a.server = &proc.Process{
			Name: "argocd-server", Path: bins[ArgoCDServerBin], LogPath: filepath.Join(env.LogDir, "argocd-server.log"),
			Args: []string{"--kubeconfig", serverKC, "--namespace", ArgoCDNamespace, "--insecure",
				"--staticassets", filepath.Join(a.dir, "static"),
				"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
				"--address", "127.0.0.1", fmt.Sprintf("--port=%d", ports[4]),
				"--metrics-address", "127.0.0.1", metricsPort(ports[5]), "--loglevel", "info"},
			Env: append([]string{"ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + serverKC}, common...),
		}
		if err := startController(ctx, a.server, a.serverURL+"/healthz"); err != nil {
			return err
		}
	}
	return nil
}

// argoIdentity binds user to the ClusterRole and the (argocd-namespaced) Role
// from Argo CD's manifests and writes a kubeconfig for it (a client
// certificate), whose path it returns.
func (e Env) argoIdentity(ctx context.Context, user string, clusterRoleYAML, roleYAML []byte) (string, error) {
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(clusterRoleYAML, &cr); err != nil {
		return "", fmt.Errorf("%s ClusterRole: %w", user, err)
	}
	var r rbacv1.Role
	if err := yaml.UnmarshalStrict(roleYAML, &r); err != nil {
		return "", fmt.Errorf("%s Role: %w", user, err)
	}
	r.Namespace = ArgoCDNamespace
	if _, err := e.Client.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if err := kube.BindClusterRole(ctx, e.Client, cr.Name, cr.Name, user); err != nil {
		return "", err
	}
	if _, err := e.Client.RbacV1().Roles(ArgoCDNamespace).Create(ctx, &r, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if _, err := e.Client.RbacV1().RoleBindings(ArgoCDNamespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: ArgoCDNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	return e.kubeconfig(user)
}

// Refresh asks Argo CD to compare an Application again now, with a fresh
// look at Git (annotation argocd.argoproj.io/refresh=hard, as a Git webhook or
// `argocd app get --hard-refresh` would): without it a new commit is noticed
// only after the revision cache expires (3 min).
func (a *ArgoCD) Refresh(t testing.TB, namespace, name string) {
	t.Helper()
	annotate(t, a.env.Dynamic, ArgoGVR, namespace, name, "argocd.argoproj.io/refresh", "hard",
		fmt.Sprintf("refresh Application %s/%s", namespace, name))
}
