package gitops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
)

// Flux's controllers as test/tools/build.sh builds them (source-controller
// and kustomize-controller v1.9.6, helm-controller v1.6.4: the Flux v2.9 line).
const (
	FluxSourceBin    = "source-controller"
	FluxKustomizeBin = "kustomize-controller"
	FluxHelmBin      = "helm-controller"
)

// FluxNamespace is the namespace Flux's controllers run for (RUNTIME_NAMESPACE),
// as `flux install` creates it.
const FluxNamespace = "flux-system"

// The files test/tools/build.sh copies into FluxDir(): every CRD of the
// controllers' modules, and flux2 v2.9.5's RBAC.
var fluxCRDFiles = []string{
	"source.toolkit.fluxcd.io_gitrepositories.yaml", "source.toolkit.fluxcd.io_helmrepositories.yaml",
	"source.toolkit.fluxcd.io_helmcharts.yaml", "source.toolkit.fluxcd.io_buckets.yaml",
	"source.toolkit.fluxcd.io_ocirepositories.yaml", "source.toolkit.fluxcd.io_externalartifacts.yaml",
	"kustomize.toolkit.fluxcd.io_kustomizations.yaml", "helm.toolkit.fluxcd.io_helmreleases.yaml",
}
var fluxManifests = manifests{
	what: "Flux", from: "the Flux modules", dir: FluxDir,
	files: append(append([]string{}, fluxCRDFiles...), "controller.yaml", "reconciler.yaml"),
}

// Flux's resources.
var (
	KustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	GitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	// ExternalArtifactGVR: the artifacts of controllers other than
	// source-controller. No controller of the stack writes them; a test does,
	// as source-watcher would.
	ExternalArtifactGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "externalartifacts"}
	HelmReleaseGVR      = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
)

// FluxDir is where build.sh copies Flux's manifests: $DRIFTWATCH_FLUX, else
// tools.ToolsBin()/../flux.
func FluxDir() string { return manifestDir("DRIFTWATCH_FLUX", "flux") }

// CheckFluxManifests reports the first of Flux's manifests missing from
// FluxDir (the stack checks before it starts anything).
func CheckFluxManifests() error { return fluxManifests.check() }

// FluxTools lists the binaries Flux needs (sopsenc for the tests'
// SOPS-encrypted files: SOPSEncrypt).
func FluxTools() []string {
	return []string{FluxSourceBin, FluxKustomizeBin, FluxHelmBin, SOPSEncBin}
}

// Flux is the running Flux of a stack.
type Flux struct {
	env        Env
	dir        string
	source     *proc.Process
	kustomize  *proc.Process
	helm       *proc.Process
	git        *http.Server
	gitURL     string
	storageURL string
}

// Processes lists Flux's controllers in their stop order (nil-safe).
func (f *Flux) Processes() []*proc.Process {
	if f == nil {
		return nil
	}
	// Stop order: kustomize-controller and helm-controller fetch from
	// source-controller.
	return []*proc.Process{f.helm, f.kustomize, f.source}
}

// StopGitServer closes the Git HTTP server (its CGI children exit with their
// requests); nil-safe.
func (f *Flux) StopGitServer() {
	if f == nil || f.git == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.git.Shutdown(ctx)
}

// GitServerURL is the base URL of the stack's Git HTTP server
// (http://127.0.0.1:PORT; a repository made by NewGitRepo is GitServerURL/NAME),
// "" without Flux (nil).
func (f *Flux) GitServerURL() string {
	if f == nil {
		return ""
	}
	return f.gitURL
}

// StorageURL is source-controller's artifact server
// (http://127.0.0.1:PORT), "" without Flux (nil).
func (f *Flux) StorageURL() string {
	if f == nil {
		return ""
	}
	return f.storageURL
}

// AgentArgs are the agent flags that let it download the stack's
// artifacts: source-controller listens on 127.0.0.1, an address the
// agent's fetch refuses unless allowed (as an operator would allow a
// port-forward), and its artifact URLs name that address.
func (f *Flux) AgentArgs() []string {
	if f == nil {
		return nil
	}
	return []string{"--flux-allowed-hosts", strings.TrimPrefix(f.storageURL, "http://"), "--flux-allowed-cidrs", "127.0.0.0/8"}
}

// KustomizeLog returns the path of kustomize-controller's log.
func (f *Flux) KustomizeLog() string {
	if f == nil || f.kustomize == nil {
		return ""
	}
	return f.kustomize.LogPath
}

// StartFlux serves the stack's Git repositories over smart HTTP, installs
// Flux's CRDs and its namespace, and starts source-controller,
// kustomize-controller and helm-controller on 127.0.0.1, each with a client
// certificate bound to the ClusterRole flux2's install binds it to. The Flux
// is returned on error too once anything of it runs: the stack stops its
// Processes and its Git server.
func StartFlux(ctx context.Context, env Env) (*Flux, error) {
	files, err := fluxManifests.read()
	if err != nil {
		return nil, err
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("Flux needs git to serve repositories: %w", err)
	}
	f := &Flux{env: env, dir: filepath.Join(env.Dir, "flux")}
	return f, f.start(ctx, files, git)
}

func (f *Flux) start(ctx context.Context, files map[string][]byte, git string) error {
	env, bins := f.env, f.env.Bins
	if err := makeDirs(f.dir, "storage", "source-tmp", "kustomize-tmp", "helm-tmp", "home"); err != nil {
		return err
	}
	if err := os.MkdirAll(gitRoot(env.Dir), 0o755); err != nil {
		return err
	}

	// Git over smart HTTP: git http-backend behind net/http/cgi, serving
	// every repository under Dir/git (source-controller accepts http, https
	// and ssh URLs only).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f.gitURL = "http://" + ln.Addr().String()
	gitLog, err := os.OpenFile(filepath.Join(env.LogDir, "git-http-backend.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		ln.Close()
		return err
	}
	f.git = &http.Server{
		Handler: &cgi.Handler{
			Path: git,
			Args: []string{"http-backend"},
			Env: append([]string{
				"GIT_PROJECT_ROOT=" + gitRoot(env.Dir),
				"GIT_HTTP_EXPORT_ALL=1",
			}, gitIsolation...),
			Stderr: gitLog,
		},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		err := f.git.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(gitLog, "git server: %v\n", err)
		}
		gitLog.Close()
	}()

	var crds [][]byte
	for _, name := range fluxCRDFiles {
		crds = append(crds, files[name])
	}
	if err := env.installCRDs(ctx, "Flux", FluxNamespace, crds...); err != nil {
		return err
	}

	// Identities as flux2's install binds them: source-controller to the
	// ClusterRole crd-controller, kustomize-controller and helm-controller to
	// cluster-admin (ClusterRoleBinding cluster-reconciler).
	crdRole, err := clusterRoleFrom(files["controller.yaml"], "crd-controller")
	if err != nil {
		return err
	}
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, crdRole, metav1.CreateOptions{}); err != nil {
		return err
	}
	adminRole, err := roleRefFrom(files["reconciler.yaml"], "cluster-reconciler")
	if err != nil {
		return err
	}
	sourceKC, err := env.fluxIdentity(ctx, "source-controller", crdRole.Name)
	if err != nil {
		return err
	}
	kustomizeKC, err := env.fluxIdentity(ctx, "kustomize-controller", adminRole)
	if err != nil {
		return err
	}
	helmKC, err := env.fluxIdentity(ctx, "helm-controller", adminRole)
	if err != nil {
		return err
	}

	ports, err := proc.FreePorts(7)
	if err != nil {
		return err
	}
	addr := func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }
	storage := addr(ports[0])
	f.storageURL = "http://" + storage
	common := append([]string{"RUNTIME_NAMESPACE=" + FluxNamespace, "HOME=" + filepath.Join(f.dir, "home")}, gitIsolation...)

	f.source = &proc.Process{
		Name: "source-controller", Path: bins[FluxSourceBin], LogPath: filepath.Join(env.LogDir, "source-controller.log"),
		Args: []string{"--enable-leader-election=false", "--watch-all-namespaces=true",
			"--storage-path=" + filepath.Join(f.dir, "storage"),
			// The artifact URLs in status.artifact.url name this address.
			"--storage-addr=" + storage, "--storage-adv-addr=" + storage,
			"--metrics-addr=" + addr(ports[1]), "--health-addr=" + addr(ports[2]),
			"--log-level=debug"},
		Env: append([]string{"KUBECONFIG=" + sourceKC, "TMPDIR=" + filepath.Join(f.dir, "source-tmp")}, common...),
	}
	if err := startController(ctx, f.source, "http://"+addr(ports[2])+"/readyz"); err != nil {
		return err
	}

	f.kustomize = &proc.Process{
		Name: "kustomize-controller", Path: bins[FluxKustomizeBin], LogPath: filepath.Join(env.LogDir, "kustomize-controller.log"),
		// ExternalArtifact sources, as `flux install --components-extra=source-watcher` enables them.
		Args: []string{"--enable-leader-election=false", "--watch-all-namespaces=true", "--feature-gates=ExternalArtifact=true",
			"--metrics-addr=" + addr(ports[3]), "--health-addr=" + addr(ports[4]),
			"--log-level=debug"},
		Env: append([]string{"KUBECONFIG=" + kustomizeKC, "TMPDIR=" + filepath.Join(f.dir, "kustomize-tmp")}, common...),
	}
	if err := startController(ctx, f.kustomize, "http://"+addr(ports[4])+"/readyz"); err != nil {
		return err
	}

	f.helm = &proc.Process{
		Name: "helm-controller", Path: bins[FluxHelmBin], LogPath: filepath.Join(env.LogDir, "helm-controller.log"),
		Args: []string{"--enable-leader-election=false", "--watch-all-namespaces=true",
			"--metrics-addr=" + addr(ports[5]), "--health-addr=" + addr(ports[6]),
			"--log-level=debug"},
		Env: append([]string{"KUBECONFIG=" + helmKC, "TMPDIR=" + filepath.Join(f.dir, "helm-tmp")}, common...),
	}
	return startController(ctx, f.helm, "http://"+addr(ports[6])+"/readyz")
}

// clusterRoleFrom returns the ClusterRole named name from a multi-document
// manifest.
func clusterRoleFrom(data []byte, name string) (*rbacv1.ClusterRole, error) {
	objs, err := kube.DecodeYAML(data)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" || o.GetName() != name {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		var cr rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(b, &cr); err != nil {
			return nil, fmt.Errorf("ClusterRole %s: %w", name, err)
		}
		return &cr, nil
	}
	return nil, fmt.Errorf("no ClusterRole %s in Flux's RBAC manifest", name)
}

// roleRefFrom returns the ClusterRole a ClusterRoleBinding named name binds.
func roleRefFrom(data []byte, name string) (string, error) {
	objs, err := kube.DecodeYAML(data)
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRoleBinding" && o.GetName() == name {
			ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			if ref != "" {
				return ref, nil
			}
		}
	}
	return "", fmt.Errorf("no ClusterRoleBinding %s in Flux's RBAC manifest", name)
}

// fluxIdentity binds user to clusterRole (ClusterRoleBinding flux-<user>)
// and writes a kubeconfig for it (a client certificate), whose path it
// returns.
func (e Env) fluxIdentity(ctx context.Context, user, clusterRole string) (string, error) {
	if err := kube.BindClusterRole(ctx, e.Client, "flux-"+user, clusterRole, user); err != nil {
		return "", err
	}
	return e.kubeconfig(user)
}

// HTTPURL is the repository's URL on the stack's Git HTTP server (Options.Flux).
func (f *Flux) HTTPURL(r *GitRepo) string {
	if f == nil {
		return ""
	}
	return f.gitURL + "/" + filepath.Base(r.Dir)
}

// Reconcile asks Flux to reconcile an object now, as `flux reconcile`
// does: it sets the annotation reconcile.fluxcd.io/requestedAt.
func (f *Flux) Reconcile(t testing.TB, gvr schema.GroupVersionResource, namespace, name string) {
	t.Helper()
	annotate(t, f.env.Dynamic, gvr, namespace, name, "reconcile.fluxcd.io/requestedAt", time.Now().Format(time.RFC3339Nano),
		fmt.Sprintf("reconcile %s %s/%s", gvr.Resource, namespace, name))
}

// Condition returns the status, reason and message of a Flux object's
// condition typ, and the object's status (nil when absent).
func (f *Flux) Condition(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, typ string) (status, reason, message string, obj *unstructured.Unstructured, err error) {
	obj, err = f.env.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", "", nil, err
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, raw := range conds {
		m, _ := raw.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg, obj, nil
		}
	}
	return "", "", "", obj, nil
}

// WaitKustomizationApplied waits until a Kustomization is Ready=True with
// status.lastAppliedRevision ending in revision (a commit SHA; Flux writes
// "main@sha1:<sha>"), and returns the object.
func (f *Flux) WaitKustomizationApplied(t testing.TB, namespace, name, revision string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	var lastMsg string
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, _, msg, obj, err := f.Condition(ctx, KustomizationGVR, namespace, name, "Ready")
		cancel()
		if err == nil {
			last, lastMsg = obj, msg
			rev, _, _ := unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
			if st == "True" && strings.HasSuffix(rev, revision) {
				return obj
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var status any
	if last != nil {
		status = last.Object["status"]
	}
	t.Fatalf("Kustomization %s/%s not Ready at %s within %s: %s; status: %v", namespace, name, revision, timeout, lastMsg, status)
	return nil
}

// GitRepositoryYAML renders a GitRepository named name reading url's main
// branch.
func GitRepositoryYAML(name, url string) string {
	return fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %s}
spec:
  interval: 10m
  url: %s
  ref: {branch: main}
`, name, url)
}

// KustomizationYAML renders a Kustomization named name applying path of
// GitRepository source into namespace target; spec adds to the spec (lines
// indented two spaces).
func KustomizationYAML(name, source, path, target, spec string) string {
	return fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: %s}
  path: ./%s
  prune: true
  targetNamespace: %s
%s`, name, source, path, target, spec)
}

// WriteExternalArtifact creates (or updates) the ExternalArtifact ns/name and
// writes its status as a third-party artifact producer does (source-watcher's
// ArtifactGenerator): Ready=True with the given artifact (a status.artifact
// map: url, revision, digest, path, size, lastUpdateTime).
func (f *Flux) WriteExternalArtifact(t testing.TB, ns, name string, artifact map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := f.env.Dynamic.Resource(ExternalArtifactGVR).Namespace(ns)
	obj, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "ExternalArtifact",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"sourceRef": map[string]any{"apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator", "name": "e2e"}},
		}}
		if obj, err = res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ExternalArtifact %s/%s: %v", ns, name, err)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	rev, _ := artifact["revision"].(string)
	obj.Object["status"] = map[string]any{
		"artifact": artifact,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded",
			"message": "stored artifact for revision '" + rev + "'", "lastTransitionTime": now, "observedGeneration": obj.GetGeneration()}},
	}
	if _, err := res.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write ExternalArtifact %s/%s status: %v", ns, name, err)
	}
}
