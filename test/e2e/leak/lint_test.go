package leak

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// lintManifests renders the manifests of the lint leak test with value(i) for
// every value (the real values, or "" for the public vocabulary): Secret
// manifests carrying them in data, stringData and a last-applied annotation, a
// duplicate, invalid base64 and a non-string stringData entry holding values,
// a workload with a literal env value reading keys (some missing), an
// ExternalSecret without creationPolicy, and a malformed document with a value
// before its syntax error.
func lintManifests(t *testing.T, n int, value func(i int) string) map[string]string {
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	data, stringData := map[string]string{}, map[string]string{}
	for i := 0; i < n; i++ {
		data[fmt.Sprintf("k%02d", i)] = b64(value(i))
		stringData[fmt.Sprintf("s%02d", i)] = value((i + 1) % n)
	}
	lastApplied := js(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "applied", "namespace": "shop"},
		"data":     map[string]string{"d0": b64(value(2)), "d1": b64(value(4))}, "stringData": map[string]string{"s0": value(0)}})
	secrets := []string{
		js(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "plain", "namespace": "shop"},
			"data": data, "stringData": stringData}),
		js(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "copy", "namespace": "shop"},
			"data": data, "stringData": stringData}),
		js(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "applied", "namespace": "shop",
			"annotations": map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied}},
			"data": map[string]string{"d0": b64(value(3)), "d1": b64(value(4))}}),
		js(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "broken", "namespace": "shop"},
			"data": map[string]any{"bad": value(5) + "!!", "num": 12345}, "stringData": map[string]any{"n": 9876543210123, "list": []string{value(6)}}}),
	}
	workload := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - {name: LITERAL, value: ` + js(value(7)) + `}
            - {name: A, valueFrom: {secretKeyRef: {name: plain, key: k00}}}
            - {name: B, valueFrom: {secretKeyRef: {name: plain, key: not-there}}}
            - {name: C, valueFrom: {secretKeyRef: {name: db, key: url}}}
            - {name: D, valueFrom: {secretKeyRef: {name: elsewhere, key: token}}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db, namespace: shop}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: vault}
  target: {name: db}
  data: [{secretKey: username, remoteRef: {key: db, property: username}}]
`
	malformed := "apiVersion: v1\nkind: Secret\nmetadata: {name: torn, namespace: shop}\nstringData:\n  a: " + js(value(8)) + "\n  b: [" + js(value(9)) + "\n  c: {\n"
	return map[string]string{
		"secrets.yaml":   "---\n" + strings.Join(secrets, "\n---\n") + "\n",
		"app/web.yaml":   workload,
		"app/torn.yaml":  malformed,
		"secrets.json":   secrets[0],
		"list/list.json": js(map[string]any{"apiVersion": "v1", "kind": "List", "items": []json.RawMessage{json.RawMessage(secrets[1]), json.RawMessage(secrets[2])}}),
	}
}

// TestNoValueLeaksInLint: agent lint on manifests full of values, in every
// output format and mode (text, verbose, JSON, SARIF, --strict, stdin name,
// the error paths of malformed documents): nothing it prints may hold a value,
// a piece of one, or a piece of its base64.
func TestNoValueLeaksInLint(t *testing.T) {
	c := cluster.Get(t)
	bin, err := c.BuildAgent()
	if err != nil {
		t.Fatal(err)
	}
	vals := newValues(t)
	dir := c.TempDir(t, "lint-leak")
	for name, text := range lintManifests(t, len(vals), func(i int) string { return string(vals[i].Bytes) }) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := newOutputs(t)
	for _, args := range [][]string{
		{"--output", "text"}, {"--output", "text", "-v"}, {"--output", "json"}, {"--output", "sarif"},
		{"--output", "text", "-v", "--strict"}, {"--output", "json", "--strict"}, {"--output", "sarif", "--strict", "--fail-on", "info"},
	} {
		name := "lint " + strings.Join(args, " ")
		if code := out.runCmd(name, bin, append(append([]string{"lint"}, args...), dir)...); code != 2 {
			t.Errorf("%s: exit %d, want 2 (a malformed document)", name, code)
		}
	}
	// secrets.yaml holds the Secret whose data does not decode: exit 2.
	for f, want := range map[string]int{"secrets.yaml": 2, "secrets.json": 1, "app/web.yaml": 1} {
		name := "lint file " + f
		if code := out.runCmd(name, bin, "lint", "-v", "--output", "json", "--stdin-name", "x", filepath.Join(dir, f)); code != want {
			t.Errorf("%s: exit %d, want %d", name, code, want)
		}
	}
	rules := "lint rules"
	out.runCmd(rules, bin, "lint", "--rules")

	// Not vacuous: the findings that read the values' fingerprints and the
	// error paths of values that do not decode are in the output.
	all := string(out.data["lint --output json stdout"]) + string(out.data["lint --output text -v stdout"])
	for _, want := range []string{`"rule": "duplicate_credentials"`, `"rule": "last_applied_data"`, `"rule": "data_in_manifest"`,
		`"rule": "missing_key"`, `"rule": "implicit_creation_policy"`, "is not valid base64", "is not a string", "malformed document",
		"assumption (absent_secret)"} {
		if !strings.Contains(all, want) {
			t.Errorf("the lint output lacks %s: the scan would prove less than it says", want)
		}
	}

	// Public vocabulary: the manifests with every value blank, and the rule
	// texts (code).
	var vocab strings.Builder
	for _, text := range lintManifests(t, len(vals), func(int) string { return "" }) {
		vocab.WriteString(text)
		vocab.WriteByte('\n')
	}
	vocab.Write(out.data[rules+" stdout"])
	// Sanity: the scanner sees a planted window of a value.
	if hits, _ := NewScanner(vals, vocab.String()).Scan("probe", append([]byte("x"), vals[0].Bytes[2:2+Window]...)); len(hits) != 1 {
		t.Fatalf("the scanner misses a planted window (%d hits)", len(hits))
	}
	out.scan(vals, vocab.String())
}
