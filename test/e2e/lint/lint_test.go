// Package lint runs the real agent binary's `agent lint` on what the real tools
// render: ESO v0.20.4's Helm chart through the real helm, Argo CD v2.14.21's
// install.yaml, and the "done when" chart (internal/lint/testdata). No
// cluster: lint is offline by design.
package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/driftwatch/driftwatch/internal/lint"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

var agentBin, repoRoot string

func TestMain(m *testing.M) {
	if tools.E2EDisabled() {
		os.Exit(m.Run())
	}
	root, err := tools.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "driftwatch-lint-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if agentBin, err = tools.BuildAgent(filepath.Join(dir, "agent")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func skipIfDisabled(t *testing.T) {
	if tools.E2EDisabled() {
		t.Skip("DRIFTWATCH_E2E=0")
	}
}

// helmTemplate renders a chart with the real helm.
func helmTemplate(t *testing.T, args ...string) []byte {
	t.Helper()
	helm, err := tools.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm, append([]string{"template"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// agentLint runs the real agent binary's lint with stdin; it returns stdout,
// stderr and the exit status.
func agentLint(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(agentBin, append([]string{"lint"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func lintJSON(t *testing.T, stdin []byte, args ...string) (lint.JSONReport, int) {
	t.Helper()
	out, errs, code := agentLint(t, stdin, append([]string{"--output", "json"}, args...)...)
	var r lint.JSONReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("agent lint --output json: %v\nstdout: %s\nstderr: %s", err, out, errs)
	}
	return r, code
}

func lineOf(t *testing.T, doc []byte, after, needle string) int {
	t.Helper()
	lines := strings.Split(string(doc), "\n")
	started := after == ""
	for i, l := range lines {
		if !started && strings.Contains(l, after) {
			started = true
		}
		if started && strings.Contains(l, needle) {
			return i + 1
		}
	}
	t.Fatalf("%q (after %q) not in the rendering", needle, after)
	return 0
}

// TestDoneWhen is the acceptance case: helm template of a chart with an
// ExternalSecret lacking creationPolicy and a Deployment reading a key nothing
// provides fails `agent lint -` with both findings at the right lines; the SARIF
// validates; the text output names both.
func TestDoneWhen(t *testing.T) {
	skipIfDisabled(t)
	chart := filepath.Join(repoRoot, "internal", "lint", "testdata", "charts", "shop")
	doc := helmTemplate(t, "shop", chart, "--namespace", "shop")
	keyLine := lineOf(t, doc, "kind: Deployment", "key: url")
	targetLine := lineOf(t, doc, "kind: ExternalSecret", "  target:")

	// helm template --namespace does not write metadata.namespace (helm
	// install places the objects); agent lint --namespace does the same.
	out, errs, code := agentLint(t, doc, "--namespace", "shop", "-")
	t.Logf("agent lint --namespace shop -:\n%s", out)
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (stderr %s)", code, errs)
	}
	for _, want := range []string{
		fmt.Sprintf(`<stdin>:%d: critical missing_key: Deployment shop-web reads key "url" of Secret shop/shop-db, which nothing in the rendering provides (ExternalSecret shop-db writes "password", "username")`, keyLine),
		fmt.Sprintf(`<stdin>:%d: warning implicit_creation_policy: ExternalSecret shop/shop-db does not set spec.target.creationPolicy`, targetLine),
		"FAIL: 1 critical, 1 warning, 0 info in 3 documents of 1 files",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}

	r, code := lintJSON(t, doc, "--stdin-name", "charts/shop/rendered.yaml", "-")
	if code != 1 || r.Result != lint.ResultFail || len(r.Findings) != 2 {
		t.Fatalf("JSON: exit %d, %+v", code, r)
	}
	got := map[string]int{}
	for _, f := range r.Findings {
		got[f.Rule] = f.Locations[0].Line
		if f.Locations[0].File != "charts/shop/rendered.yaml" {
			t.Errorf("%s reported in %s", f.Rule, f.Locations[0].File)
		}
	}
	if got["missing_key"] != keyLine || got["implicit_creation_policy"] != targetLine {
		t.Errorf("lines %v, want missing_key %d, implicit_creation_policy %d", got, keyLine, targetLine)
	}
	// --fail-on critical still fails (missing_key is critical); a fixed chart
	// passes.
	if _, _, code := agentLint(t, doc, "--fail-on", "critical", "-"); code != 1 {
		t.Errorf("--fail-on critical: exit %d, want 1", code)
	}
	fixed := helmTemplate(t, "shop", chart, "--namespace", "shop", "--set", "fixed=true")
	if bytes.Equal(fixed, doc) {
		t.Fatal("the chart has no fixed variant")
	}
	if out, _, code := agentLint(t, fixed, "-"); code != 0 {
		t.Errorf("the fixed chart: exit %d\n%s", code, out)
	}

	sarif, _, code := agentLint(t, doc, "--output", "sarif", "--stdin-name", "charts/shop/rendered.yaml", "-")
	if code != 1 {
		t.Errorf("sarif: exit %d", code)
	}
	validateSARIF(t, []byte(sarif))
	for _, want := range []string{`"ruleId": "missing_key"`, `"ruleId": "implicit_creation_policy"`,
		fmt.Sprintf(`"startLine": %d`, keyLine), `"uri": "charts/shop/rendered.yaml"`} {
		if !strings.Contains(sarif, want) {
			t.Errorf("SARIF lacks %s", want)
		}
	}
}

func validateSARIF(t *testing.T, b []byte) {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "internal", "lint", "testdata", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("SARIF output does not validate against SARIF 2.1.0: %v", err)
	}
}

// TestESOChartIsClean: ESO v0.20.4's own chart, rendered by the real helm with
// its defaults, comes out clean, without assumptions, in strict mode too.
func TestESOChartIsClean(t *testing.T) {
	skipIfDisabled(t)
	chart, err := tools.UpstreamPath(tools.ESOChartDir)
	if err != nil {
		t.Fatal(err)
	}
	doc := helmTemplate(t, "external-secrets", chart, "--namespace", "external-secrets")
	for _, strict := range []string{"--strict=false", "--strict=true"} {
		r, code := lintJSON(t, doc, strict, "--fail-on", "info", "-")
		if code != 0 || r.Result != lint.ResultPass || len(r.Findings) != 0 || len(r.Assumptions) != 0 || len(r.Problems) != 0 {
			t.Errorf("%s: exit %d: %+v", strict, code, r)
		}
		// Not vacuous: the chart's workloads and the webhook's Secret were read.
		// The webhook Deployment mounts the (empty, cert-controller-filled)
		// external-secrets-webhook Secret as a whole volume: no key expected.
		if r.Documents < 15 || r.Checked["Deployment"] != 3 || r.Checked["Secret"] != 1 || r.Checked["ServiceAccount"] != 3 {
			t.Errorf("%s: documents %d, checked %v", strict, r.Documents, r.Checked)
		}
	}
	// The SARIF of a clean run validates too.
	sarif, _, _ := agentLint(t, doc, "--output", "sarif", "-")
	validateSARIF(t, []byte(sarif))
}

// TestArgoCDInstallIsClean: Argo CD v2.14.21's install.yaml passes. Its only
// assumption is explained: four workloads read key auth of Secret argocd-redis,
// which is not in the manifest: the argocd-redis Deployment's init container
// (`argocd admin redis-initial-password`) creates it at start. With --strict it
// is the one finding.
func TestArgoCDInstallIsClean(t *testing.T) {
	skipIfDisabled(t)
	path, err := tools.UpstreamPath(tools.ArgoCDInstallFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("redis-initial-password")) {
		t.Fatal("install.yaml no longer creates argocd-redis with an init container: revisit the explanation")
	}
	r, code := lintJSON(t, nil, "--fail-on", "info", path)
	if code != 0 || r.Result != lint.ResultPass || len(r.Findings) != 0 || len(r.Problems) != 0 {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if r.Documents < 50 || r.Checked["Deployment"] < 5 || r.Checked["StatefulSet"] != 1 || r.Checked["Secret"] < 2 {
		t.Errorf("documents %d, checked %v", r.Documents, r.Checked)
	}
	if len(r.Assumptions) != 1 || r.Assumptions[0].Rule != "absent_secret" || !strings.Contains(r.Assumptions[0].Message, "Secret default/argocd-redis") {
		t.Errorf("assumptions %+v, want only argocd-redis", r.Assumptions)
	}
	r, code = lintJSON(t, nil, "--strict", path)
	if code != 1 || len(r.Findings) != 1 || r.Findings[0].Rule != "absent_secret" || r.Findings[0].Object.Name != "argocd-redis" {
		t.Errorf("--strict: exit %d, findings %+v", code, r.Findings)
	}
}

// TestUnreadableInput: a missing file exits 2 while the rest is still checked.
func TestUnreadableInput(t *testing.T) {
	skipIfDisabled(t)
	chart := filepath.Join(repoRoot, "internal", "lint", "testdata", "charts", "shop")
	doc := helmTemplate(t, "shop", chart)
	out, errs, code := agentLint(t, append(doc, []byte("---\nkind: [\n")...), "-", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != 2 || !strings.Contains(out, "missing_key") || !strings.Contains(out, "cannot read") || !strings.Contains(out, "malformed document") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := agentLint(t, nil); code != 2 || !strings.Contains(errs, "no input") {
		t.Errorf("no input: exit %d, %s", code, errs)
	}
}

// TestGoldenOutput: the real binary's JSON, SARIF and verbose text output of
// internal/lint's golden rendering are byte for byte the golden files its unit
// test holds lint's writers to (internal/lint/testdata/golden).
func TestGoldenOutput(t *testing.T) {
	skipIfDisabled(t)
	dir := filepath.Join(repoRoot, "internal", "lint")
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"rich.json", []string{"--output", "json"}},
		{"rich.strict.json", []string{"--output", "json", "--strict"}},
		{"rich.sarif", []string{"--output", "sarif"}},
		{"rich.strict.sarif", []string{"--output", "sarif", "--strict"}},
		{"rich.txt", []string{"-v"}},
		{"rich.strict.txt", []string{"-v", "--strict"}},
	} {
		want, err := os.ReadFile(filepath.Join(dir, "testdata", "golden", c.golden))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(agentBin, append(append([]string{"lint"}, c.args...), "testdata/golden/rich.yaml")...)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("agent lint %v: %v, want exit status 2 (a malformed document)", c.args, err)
		}
		if !bytes.Equal(stdout.Bytes(), want) {
			t.Errorf("agent lint %v differs from %s:\n%s", c.args, c.golden, stdout.String())
		}
	}
}
