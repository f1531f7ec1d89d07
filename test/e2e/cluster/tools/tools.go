// Package tools finds what test/tools/build.sh (`make tools`) builds and
// copies for the e2e tests: the tool binaries, the CRD bundles and upstream
// manifests, and the repository they test.
package tools

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tool binaries the stack runs, as test/tools/build.sh names them.
const (
	EtcdBin              = "etcd"
	APIServerBin         = "kube-apiserver"
	ControllerManagerBin = "kube-controller-manager"
	KubectlBin           = "kubectl"
	ESOControllerBin     = "external-secrets"
	HelmBin              = "helm"
)

// CacheDir is the tool cache test/tools/build.sh writes to:
// $DRIFTWATCH_CACHE, else $XDG_CACHE_HOME/driftwatch, else ~/.cache/driftwatch.
func CacheDir() string {
	if d := os.Getenv("DRIFTWATCH_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "driftwatch")
}

// ToolsBin is the folder holding the tool binaries: $DRIFTWATCH_TOOLS_BIN,
// else CacheDir()/bin.
func ToolsBin() string {
	if d := os.Getenv("DRIFTWATCH_TOOLS_BIN"); d != "" {
		return d
	}
	return filepath.Join(CacheDir(), "bin")
}

// CRDDir is where build.sh copies the CRD bundles: $DRIFTWATCH_CRDS, else
// ToolsBin()/../crds.
func CRDDir() string {
	if d := os.Getenv("DRIFTWATCH_CRDS"); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(ToolsBin()), "crds")
}

// PromOperatorDir is where build.sh copies prometheus-operator's CRDs
// (crds/) and its example RBAC of a Prometheus (rbac/): ToolsBin()/../promoperator.
func PromOperatorDir() string {
	return filepath.Join(filepath.Dir(ToolsBin()), "promoperator")
}

// CRD bundle file names inside CRDDir.
const (
	ESOCRDFile    = "eso-bundle.yaml"
	ArgoCDCRDFile = "argocd-application-crd.yaml"
)

// Tool returns the path of a tool binary, or an error telling how to build it.
func Tool(name string) (string, error) {
	p := filepath.Join(ToolsBin(), name)
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("e2e tool %q not found at %s: build the tools with `make tools` "+
			"(or test/tools/build.sh), or point DRIFTWATCH_TOOLS_BIN at a folder holding them; "+
			"set DRIFTWATCH_E2E=0 to skip the e2e tests", name, p)
	}
	return p, nil
}

// Upstream manifests test/tools/build.sh copies next to the CRD bundles
// (CRDDir), from the modules' own sources in the Go module cache.
const (
	// ArgoCDInstallFile is Argo CD v2.14.21's manifests/install.yaml.
	ArgoCDInstallFile = "argocd-install.yaml"
	// ESOChartDir is ESO v0.20.4's deploy/charts/external-secrets (a folder).
	ESOChartDir = "eso-chart"
)

// UpstreamPath returns the path of a file or folder build.sh copied into
// CRDDir (ArgoCDInstallFile, ESOChartDir, the CRD bundles), or an error
// telling how to get it.
func UpstreamPath(name string) (string, error) {
	p := filepath.Join(CRDDir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("CRD bundle %s not found: run `make tools` (or test/tools/build.sh), "+
			"which copies it from the Go module cache: %w", p, err)
	}
	return p, nil
}

// RepoRoot walks up from the working directory to the folder holding the
// main module's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isMainModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod of github.com/driftwatch/driftwatch not found above the working directory")
		}
		dir = parent
	}
}

func isMainModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if strings.TrimSpace(line) == "module github.com/driftwatch/driftwatch" {
			return true
		}
	}
	return false
}

// PrebuiltAgent is the agent binary test/run.sh builds once from the checkout
// before the unit and end-to-end step and names in $DRIFTWATCH_AGENT_BIN, or ""
// when that is unset. Every e2e package ran the same `go build ./cmd/agent`
// (about 9 s of CPU for the link each, some fifteen times a run).
func PrebuiltAgent() string { return os.Getenv("DRIFTWATCH_AGENT_BIN") }

// BuildAgent returns PrebuiltAgent() when set (an error if it is not an
// executable file), else builds ./cmd/agent of RepoRoot() to out, as the suite
// builds it (the go command's environment: test/run.sh sets CGO_ENABLED=0
// GOFLAGS=-trimpath).
func BuildAgent(out string) (string, error) {
	if p := PrebuiltAgent(); p != "" {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("DRIFTWATCH_AGENT_BIN: %w", err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("DRIFTWATCH_AGENT_BIN=%s is not an executable file", p)
		}
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/agent")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agent: %w\n%s", err, b)
	}
	return out, nil
}

// E2EDisabled reports whether DRIFTWATCH_E2E=0 asks to skip the e2e tests.
func E2EDisabled() bool { return os.Getenv("DRIFTWATCH_E2E") == "0" }
