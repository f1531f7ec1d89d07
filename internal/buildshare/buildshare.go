// Package buildshare compares the module versions two builds of separate Go
// modules use, for the tests that keep a test module (test/apicompat/...) on
// the same module versions as the tool it shares packages with
// (test/tools/...), so that those packages compile once in a cold make test.
//
// With -trimpath (make test sets it) a package's build cache key names its
// module's required version as well as the code (the replacement), so two
// builds share a package only when both agree on both.
package buildshare

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Modules maps each module that provides a package to `go list -deps args...`
// run in dir (with CGO_ENABLED=0 and -trimpath, as make test builds) to its
// required version, followed by " => path version" when it is replaced.
func Modules(dir string, args ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f",
		"{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}{{end}}"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %w\n%s", dir, err, stderr.String())
	}
	mods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, v, _ := strings.Cut(strings.TrimSpace(line), " "); path != "" {
			mods[path] = v // "" for the main module
		}
	}
	return mods, nil
}

// Diff returns how many modules a and b share (skip aside) and, sorted, the
// shared ones whose versions differ, each as "module: A vs B".
func Diff(a, b map[string]string, skip func(module string) bool) (shared int, diffs []string) {
	for mod, av := range a {
		bv, ok := b[mod]
		if !ok || skip != nil && skip(mod) {
			continue
		}
		shared++
		if av != bv {
			diffs = append(diffs, fmt.Sprintf("%s: %s vs %s", mod, av, bv))
		}
	}
	sort.Strings(diffs)
	return shared, diffs
}

// CheckSameVersions is the body of the apicompat modules'
// TestSameVersionsAsTheTool: it compares `go list -deps -test ./...` in the
// current folder with `go list -deps toolPkg` in toolDir, leaving out the
// driftwatch modules and those skip names, and reports every shared module
// whose versions differ, and too few shared modules (a wrong listing).
func CheckSameVersions(t testing.TB, toolDir, toolPkg string, minShared int, skip ...string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	here, err := Modules(".", "-test", "./...")
	if err != nil {
		t.Fatal(err)
	}
	tool, err := Modules(toolDir, toolPkg)
	if err != nil {
		t.Fatal(err)
	}
	shared, diffs := Diff(here, tool, func(m string) bool {
		return strings.HasPrefix(m, "github.com/driftwatch/") || slices.Contains(skip, m)
	})
	for _, d := range diffs {
		t.Errorf("%s (here vs %s)", d, toolDir)
	}
	if shared < minShared {
		t.Fatalf("only %d modules shared with %s: the listing is wrong", shared, toolDir)
	}
	t.Logf("%d modules shared with %s, %d differ", shared, toolDir, len(diffs))
}
