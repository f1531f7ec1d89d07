// Package gitops installs the e2e stack's real GitOps controllers on its
// control plane: Argo CD (argocd.go, argocdapi.go; cluster.Options.ArgoCD)
// and Flux (flux.go, sops.go; cluster.Options.Flux), and makes the Git
// repositories both read (git.go). What the two installers share is in this
// file: the manifests test/tools/build.sh copies for them, the identities
// their controllers run as, and starting a controller until it is healthy.
package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Env is what the installers need of the control plane they run on.
type Env struct {
	// Dir is the stack's folder (each installer keeps its state in a folder
	// of its own there, the controllers' kubeconfigs are Dir/<user>.kubeconfig,
	// the Git repositories are under Dir/git); LogDir holds the process logs.
	Dir, LogDir string
	// APIServerURL is the apiserver the controllers' kubeconfigs name; CA
	// signs their client certificates.
	APIServerURL string
	CA           *kube.CA
	// Client and Dynamic are admin clients.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Bins maps every name of ArgoCDTools or FluxTools to its path.
	Bins map[string]string
	// InstallCRDs and ApplyYAML are the stack's (cluster.Cluster's).
	InstallCRDs func(ctx context.Context, data []byte) error
	ApplyYAML   func(ctx context.Context, namespace string, data []byte, fieldManager string) ([]*unstructured.Unstructured, error)
}

// manifests are the files test/tools/build.sh copies for one controller set
// into dir(), from the set's modules in the Go module cache.
type manifests struct {
	what  string        // "Argo CD"
	from  string        // "the Argo CD module"
	dir   func() string // ArgoCDDir
	files []string
}

// manifestDir is $envVar, else the folder name next to tools.ToolsBin().
func manifestDir(envVar, name string) string {
	if d := os.Getenv(envVar); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(tools.ToolsBin()), name)
}

// path returns the path of one manifest, or an error telling how to get it.
func (m manifests) path(name string) (string, error) {
	p := filepath.Join(m.dir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s manifest %s not found: run `make tools` (or test/tools/build.sh), "+
			"which copies it from %s in the Go module cache: %w", m.what, p, m.from, err)
	}
	return p, nil
}

// check reports the first manifest missing.
func (m manifests) check() error {
	for _, f := range m.files {
		if _, err := m.path(f); err != nil {
			return err
		}
	}
	return nil
}

// read reads every manifest, by file name.
func (m manifests) read() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, f := range m.files {
		p, err := m.path(f)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files[f] = b
	}
	return files, nil
}

// makeDirs creates the folders names under base.
func makeDirs(base string, names ...string) error {
	for _, d := range names {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// installCRDs installs the CRDs of the YAML documents (what's, for an
// error) and creates the namespace the controllers run for.
func (e Env) installCRDs(ctx context.Context, what, namespace string, docs ...[]byte) error {
	var crds []byte
	for _, d := range docs {
		crds = append(append(crds, d...), "\n---\n"...)
	}
	if err := e.InstallCRDs(ctx, crds); err != nil {
		return fmt.Errorf("%s CRDs: %w", what, err)
	}
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	return err
}

// kubeconfig issues a client certificate for user and writes a kubeconfig
// for it, Dir/<user>.kubeconfig, whose path it returns.
func (e Env) kubeconfig(user string) (string, error) {
	path := filepath.Join(e.Dir, user+".kubeconfig")
	if _, err := e.CA.ClientKubeconfig(path, e.APIServerURL, user, nil); err != nil {
		return "", err
	}
	return path, nil
}

// startController starts a controller and waits up to a minute until its
// health endpoint url answers 200.
func startController(ctx context.Context, p *proc.Process, url string) error {
	if err := p.Start(); err != nil {
		return err
	}
	return proc.WaitHTTP(ctx, 60*time.Second, p, url)
}

// annotate sets one annotation on an object (a merge patch), as a
// controller's CLI asks it to act now; failed names the request in the
// test's failure.
func annotate(t testing.TB, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace, name, key, value, failed string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if _, err := dyn.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
		t.Fatalf("%s: %v", failed, err)
	}
}
