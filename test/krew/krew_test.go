// Package krew checks plugins/driftwatch.yaml with krew's own code: the
// validator krew's index runs on every manifest (sigs.k8s.io/krew
// cmd/validate-krew-manifest) and a real `krew install` of an archive that
// plugins/krew-archives.sh built from the tree. A separate module, so krew's
// dependencies stay out of the agent's go.mod.
package krew

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tools builds krew and its manifest validator from this module's go.mod.
func tools(t *testing.T) (krew, validate string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "sigs.k8s.io/krew/cmd/krew", "sigs.k8s.io/krew/cmd/validate-krew-manifest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building krew: %v\n%s", err, out)
	}
	return filepath.Join(dir, "krew"), filepath.Join(dir, "validate-krew-manifest")
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestManifest(t *testing.T) {
	krew, validate := tools(t)
	r := root(t)
	// The committed manifest: structure, name, semver, sha256 form,
	// selectors matching supported platforms without overlap.
	out := run(t, nil, validate, "-manifest", filepath.Join(r, "plugins", "driftwatch.yaml"), "-skip-install")
	for _, want := range []string{"structural validation OK", "all spec.platform[] items are used", "no overlapping spec.platform[].selector"} {
		if !strings.Contains(out, want) {
			t.Errorf("validator did not say %q:\n%s", want, out)
		}
	}

	// A release as the script makes it, installed by the real krew from the
	// archive (krew checks the archive's sha256 against the manifest).
	dist := t.TempDir()
	manifest := filepath.Join(dist, "driftwatch.yaml")
	env := []string{"MANIFEST_OUT=" + manifest}
	if runtime.GOOS == "linux" {
		// Only the archive installed below: the script's cross-builds of all
		// five platforms cost over 10 minutes with a cold build cache.
		env = append(env, "PLATFORMS=linux/"+runtime.GOARCH)
	}
	run(t, env, "bash", filepath.Join(r, "plugins", "krew-archives.sh"), "v0.1.0", dist)
	out = run(t, nil, validate, "-manifest", manifest, "-skip-install")
	if !strings.Contains(out, "structural validation OK") {
		t.Errorf("validator on the script's manifest:\n%s", out)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the install step runs on linux/amd64 and linux/arm64 (here %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	krewRoot := t.TempDir()
	archive := filepath.Join(dist, "kubectl-driftwatch_v0.1.0_linux_"+runtime.GOARCH+".tar.gz")
	run(t, []string{"KREW_ROOT=" + krewRoot}, krew, "install", "--manifest", manifest, "--archive", archive)
	bin := filepath.Join(krewRoot, "bin", "kubectl-driftwatch")
	if out := run(t, nil, bin, "version"); !strings.Contains(out, "kubectl-driftwatch v0.1.0") {
		t.Errorf("installed plugin: %q", out)
	}
	if out := run(t, nil, bin, "help"); !strings.Contains(out, "kubectl driftwatch compare") {
		t.Errorf("installed plugin help: %q", out)
	}
}
