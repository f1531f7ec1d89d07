package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const lintBad = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: vault}
  target: {name: db}
  data: [{secretKey: user, remoteRef: {key: db}}]
`

func runLint(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := Lint(args, strings.NewReader(stdin), &out, &errs, "test")
	return code, out.String(), errs.String()
}

func TestLintExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(strings.Replace(lintBad, "target: {name: db}", "target: {name: db, creationPolicy: Owner}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"a warning fails by default", lintBad, []string{"-"}, ExitFinding, "<stdin>:6: warning implicit_creation_policy"},
		{"--fail-on critical passes a warning", lintBad, []string{"--fail-on", "critical", "-"}, ExitOK, "PASS: 0 critical, 1 warning"},
		{"a clean file passes", "", []string{"-f", good}, ExitOK, "PASS: 0 critical, 0 warning, 0 info in 1 documents of 1 files"},
		{"flags after paths", lintBad, []string{"-", "--output", "json"}, ExitFinding, `"result": "fail"`},
		{"stdin renamed", lintBad, []string{"--stdin-name", "chart/x.yaml", "-"}, ExitFinding, "chart/x.yaml:6: warning"},
		{"SARIF", lintBad, []string{"--output", "sarif", "-"}, ExitFinding, `"version": "2.1.0"`},
		{"a missing file is exit 2, the rest still checked", lintBad, []string{"-", filepath.Join(dir, "nope.yaml")}, ExitError, "implicit_creation_policy"},
		{"a malformed document is exit 2", lintBad + "---\nkind: [\n", []string{"-"}, ExitError, "error malformed_document"},
		{"--rules", "", []string{"--rules"}, ExitOK, "implicit_creation_policy"},
		{"no input", "", nil, ExitError, ""},
		{"stdin twice", "", []string{"-", "-"}, ExitError, ""},
		{"bad --output", "", []string{"--output", "xml", "-"}, ExitError, ""},
		{"bad --fail-on", "", []string{"--fail-on", "page", "-"}, ExitError, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runLint(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s\nstderr: %s", code, c.code, c.out, out, errs)
			}
		})
	}
}
