package lint

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/driftwatch/driftwatch/finding"
)

// sample is a rendering with a finding of most rules, an assumption and a
// malformed document.
const sample = deployReading + "---\n" + `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db, namespace: shop}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: vault}
  target: {name: db}
  data:
    - secretKey: username
      remoteRef: {key: db, property: username}
---
apiVersion: v1
kind: Secret
metadata: {name: a, namespace: shop}
stringData: {token: same}
---
apiVersion: v1
kind: Secret
metadata: {name: b, namespace: shop}
stringData: {token: same}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: shop}
spec:
  containers: [{name: c, envFrom: [{secretRef: {name: made-elsewhere}}]}]
---
kind: [
`

func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return s.Validate(inst)
}

// TestSARIFValidates validates the SARIF output against the SARIF 2.1.0 schema,
// and checks the schema check itself rejects a broken log.
func TestSARIFValidates(t *testing.T) {
	s := sarifSchema(t)
	for _, strict := range []bool{false, true} {
		r := lintString(t, sample, Options{Strict: strict})
		var b bytes.Buffer
		if err := WriteSARIF(&b, r, "v1.2.3"); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, s, b.Bytes()); err != nil {
			t.Fatalf("strict=%v: the SARIF output does not validate: %v\n%s", strict, err, b.String())
		}
		var log sarifLog
		if err := json.Unmarshal(b.Bytes(), &log); err != nil {
			t.Fatal(err)
		}
		run := log.Runs[0]
		if len(run.Results) != len(r.Findings)+1 || run.Invocations[0].ExecutionSuccessful {
			t.Errorf("results %d for %d findings and a malformed document; executionSuccessful %v", len(run.Results), len(r.Findings), run.Invocations[0].ExecutionSuccessful)
		}
		levels := map[string]string{}
		for _, res := range run.Results {
			if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
				t.Errorf("result %s: ruleIndex %d names %s", res.RuleID, res.RuleIndex, run.Tool.Driver.Rules[res.RuleIndex].ID)
			}
			if res.Locations[0].PhysicalLocation.Region == nil || res.Locations[0].PhysicalLocation.ArtifactLocation.URI != "m.yaml" {
				t.Errorf("result %s without a region in m.yaml: %+v", res.RuleID, res.Locations[0])
			}
			levels[res.RuleID] = res.Level
		}
		want := map[string]string{"missing_key": "error", "implicit_creation_policy": "warning", "duplicate_credentials": "warning",
			"data_in_manifest": "warning", RuleMalformed: "error"}
		if strict {
			want["absent_secret"] = "error"
		}
		for id, l := range want {
			if levels[id] != l {
				t.Errorf("strict=%v: %s level %q, want %q (all: %v)", strict, id, levels[id], l, levels)
			}
		}
		if len(run.Tool.Driver.Rules) != len(Rules)+1 {
			t.Errorf("%d rules in the driver, want %d", len(run.Tool.Driver.Rules), len(Rules)+1)
		}
	}
	// The schema check can fail: a level SARIF does not know, a missing version.
	r := lintString(t, sample, Options{})
	var b bytes.Buffer
	if err := WriteSARIF(&b, r, "dev"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(string) string{
		func(s string) string { return strings.Replace(s, `"level": "error"`, `"level": "critical"`, 1) },
		func(s string) string { return strings.Replace(s, `"version": "2.1.0",`, ``, 1) },
		func(s string) string { return strings.Replace(s, `"startLine": `, `"startLine": -`, 1) },
	} {
		if err := validate(t, s, []byte(bad(b.String()))); err == nil {
			t.Errorf("a broken SARIF log validates: the schema check cannot fail")
		}
	}
}

func TestJSONAndTextOutput(t *testing.T) {
	r := lintString(t, sample, Options{})
	var b bytes.Buffer
	if err := WriteJSON(&b, r, "warning", false); err != nil {
		t.Fatal(err)
	}
	var j JSONReport
	if err := json.Unmarshal(b.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.SchemaVersion != 1 || j.Result != ResultError || j.Counts["critical"] != 1 || j.Counts["warning"] != 4 ||
		len(j.Assumptions) != 1 || len(j.Problems) != 1 || j.Documents != 5 {
		t.Errorf("JSON report: %s", b.String())
	}
	b.Reset()
	if err := WriteText(&b, r, "warning", false); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`m.yaml:16: critical missing_key: Deployment web reads key "password" of Secret shop/db, which nothing in the rendering provides (ExternalSecret db writes "username")`,
		"m.yaml:23: warning implicit_creation_policy:",
		"m.yaml:44: error malformed_document: malformed document:",
		"ERROR: 1 critical, 4 warning, 0 info in 5 documents of 1 files",
		"1 assumption(s)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "made-elsewhere") {
		t.Errorf("an assumption is listed without -v:\n%s", text)
	}
	b.Reset()
	_ = WriteText(&b, r, "warning", true)
	if !strings.Contains(b.String(), "m.yaml:42: assumption (absent_secret): Pod p needs Secret shop/made-elsewhere") {
		t.Errorf("verbose output lacks the assumption:\n%s", b.String())
	}
	// Without the malformed document the verdict follows --fail-on.
	r = lintString(t, strings.TrimSuffix(sample, "---\nkind: [\n"), Options{})
	if v := r.Verdict("warning"); v != ResultFail {
		t.Errorf("verdict %s, want fail", v)
	}
	if v := r.Verdict("critical"); v != ResultFail {
		t.Errorf("verdict at critical %s, want fail (missing_key is critical)", v)
	}
	r = lintString(t, esDB, Options{})
	if v := r.Verdict("info"); v != ResultPass || len(r.Findings) != 0 {
		t.Errorf("a clean ExternalSecret: verdict %s, findings %+v", v, r.Findings)
	}
}

func TestRulesList(t *testing.T) {
	var b bytes.Buffer
	if err := WriteRules(&b); err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		if f := r.Family(); f == nil || f != mustLookup(t, f.Name) {
			t.Errorf("rule %s: its family is not in the catalog", r.ID)
		}
		if !strings.Contains(b.String(), r.ID) {
			t.Errorf("--rules does not list %s", r.ID)
		}
	}
	if !strings.Contains(b.String(), "missing_key                critical/warning") {
		t.Errorf("severities not listed:\n%s", b.String())
	}
}

// TestNoValueInAnyOutput plants random values in every place a manifest
// carries them (data, stringData, last-applied, a malformed data entry, an
// ExternalSecret's template) and checks that no output format, finding,
// assumption or problem holds one, nor its base64 form.
func TestNoValueInAnyOutput(t *testing.T) {
	rnd := func(n int) string {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(b)
	}
	v1, v2, v3, v4 := rnd(16), rnd(16), rnd(16), rnd(12)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	src := `apiVersion: v1
kind: Secret
metadata:
  name: a
  namespace: x
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","namespace":"x"},"data":{"k":"` + b64(v3) + `"},"stringData":{"s":"` + v3 + `"}}'
data:
  k: ` + b64(v1) + `
  broken: "` + v4 + `!!"
stringData:
  s: ` + v2 + `
  n: 12345678901
---
apiVersion: v1
kind: Secret
metadata: {name: b, namespace: x}
data:
  k: ` + b64(v1) + `
  broken: "` + v4 + `!!"
stringData:
  s: ` + v2 + `
  n: 12345678901
---
apiVersion: v1
kind: Secret
metadata: {name: c, namespace: x, annotations: ` + v4 + `}
data: {k: ` + b64(v1) + `}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: w, namespace: x}
spec:
  template:
    spec:
      containers: [{name: c, env: [{name: E, value: "` + v1 + `"}, {name: F, valueFrom: {secretKeyRef: {name: a, key: missing}}}]}]
`
	values := []string{v1, v2, v3, v4, b64(v1), b64(v2), b64(v3), "12345678901"}
	for _, strict := range []bool{false, true} {
		r := lintString(t, src, Options{Strict: strict})
		if len(r.Findings) < 3 || len(r.Problems) < 2 {
			t.Fatalf("the sample should give findings and problems: %+v", r)
		}
		var out bytes.Buffer
		_ = WriteText(&out, r, "info", true)
		_ = WriteJSON(&out, r, "info", strict)
		_ = WriteSARIF(&out, r, "dev")
		for _, v := range values {
			if strings.Contains(out.String(), v) {
				t.Errorf("strict=%v: a value is in the output:\n%s", strict, out.String())
			}
		}
	}
}

// TestDocsListEveryRule: docs/lint.md's rule table names every rule and its
// family.
func TestDocsListEveryRule(t *testing.T) {
	b, err := os.ReadFile("../../docs/lint.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(append([]*Rule(nil), Rules...), &malformedRule) {
		row := "| `" + r.ID + "` | "
		if r.FamilyName() != "" {
			row += "`" + r.FamilyName()
		}
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/lint.md has no row %q", row)
		}
	}
}

func mustLookup(t *testing.T, name string) *finding.Family {
	t.Helper()
	f, ok := finding.LookupAny(name)
	if !ok {
		t.Errorf("family %s is not in the catalog", name)
	}
	return f
}

// TestEveryRuleHasAJudge: every rule a family declares is judged (judges for
// the exporter's families, manifestJudges for the lint-only ones), and every
// judge belongs to a declared rule. A judge places the object of the finding
// it is given (finding.Family.ObjectOf), so every rule's family names one.
func TestEveryRuleHasAJudge(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range Rules {
		ids[r.ID] = true
		_, j := judges[r.ID]
		_, m := manifestJudges[r.ID]
		if r.Family().LintOnly != m || j == m {
			t.Errorf("rule %s (family %s, lint-only %v): judge %v, manifest judge %v", r.ID, r.FamilyName(), r.Family().LintOnly, j, m)
		}
		if r.Family().Object == nil {
			t.Errorf("rule %s: family %s names no object: its findings would have none to place", r.ID, r.FamilyName())
		}
	}
	for id := range judges {
		if !ids[id] {
			t.Errorf("judge %s: no family declares the rule", id)
		}
	}
	for id := range manifestJudges {
		if !ids[id] {
			t.Errorf("manifest judge %s: no family declares the rule", id)
		}
	}
}

// A detector that fails makes the run an error (exit 2) naming it; the other
// detectors' findings are still reported.
func TestDetectorFailureIsAnError(t *testing.T) {
	const doc = `apiVersion: v1
kind: Secret
metadata: {name: a, namespace: app}
stringData: {K: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: b, namespace: app}
stringData: {K: "1"}
`
	read := func() *Input { return ReadArgs([]string{"-"}, strings.NewReader(doc)) }
	rep := Evaluate(read(), Options{beforeDetector: func(d string) {
		if d == "adoption" {
			panic("injected detector bug")
		}
	}})
	if rep.Verdict(finding.SevCritical) != ResultError {
		t.Fatalf("verdict %s, want error", rep.Verdict(finding.SevCritical))
	}
	named := false
	for _, p := range rep.Problems {
		named = named || !p.Note && strings.Contains(p.Message, "detector adoption failed")
	}
	if !named {
		t.Errorf("no problem names the failed detector: %+v", rep.Problems)
	}
	var b bytes.Buffer
	if err := WriteText(&b, rep, finding.SevWarning, false); err != nil || !strings.Contains(b.String(), "detector adoption failed") {
		t.Errorf("text output does not name it (%v):\n%s", err, b.String())
	}
	if len(rep.Findings) == 0 {
		t.Error("the other detectors' findings (data in manifest) are not reported")
	}
	clean := Evaluate(read(), Options{})
	if clean.Unreadable() || !slices.ContainsFunc(clean.Findings, func(f Finding) bool { return f.Rule == "duplicate_credentials" }) {
		t.Errorf("without the fault: problems %+v, findings %+v", clean.Problems, clean.Findings)
	}
}
