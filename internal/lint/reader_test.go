package lint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseStreamLinesAndKinds(t *testing.T) {
	src := `# leading comment
---
# Source: chart/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Secret
    metadata: {name: s1}
  - apiVersion: v1
    kind: Secret
    metadata: {name: s2, namespace: n}
...
--- {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}
---
base: &base {apiVersion: v1, kind: Pod}
<<: *base
metadata: {name: merged}
`
	docs, probs := ParseStream("f.yaml", []byte(src))
	if len(probs) != 0 {
		t.Fatalf("problems: %+v", probs)
	}
	type want struct {
		kind, name, ns string
		line, item     int
	}
	wants := []want{{"ConfigMap", "a", "", 4, -1}, {"Secret", "s1", "", 13, 0}, {"Secret", "s2", "n", 16, 1},
		{"ServiceAccount", "sa", "", 20, -1}, {"Pod", "merged", "", 22, -1}}
	if len(docs) != len(wants) {
		t.Fatalf("got %d documents, want %d", len(docs), len(wants))
	}
	for i, w := range wants {
		d := docs[i]
		if d.Kind != w.kind || d.Name != w.name || d.Namespace != w.ns || d.Line != w.line || d.Item != w.item {
			t.Errorf("doc %d: got %s %s/%s line %d item %d, want %+v", i, d.Kind, d.Namespace, d.Name, d.Line, d.Item, w)
		}
	}
}

func TestParseStreamJSON(t *testing.T) {
	src := "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"SecretList\",\n\t\"items\": [\n\t\t{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"x\"}, \"data\": {\"k\": \"dg==\"}}\n\t]\n}\n"
	docs, probs := ParseStream("f.json", []byte(src))
	if len(probs) != 0 || len(docs) != 1 || docs[0].Name != "x" || docs[0].Line != 5 || docs[0].Item != 0 {
		t.Fatalf("docs %+v problems %+v", docs, probs)
	}
	if d, _ := docs[0].Obj["data"].(map[string]any); d["k"] != "dg==" {
		t.Errorf("data decoded as %v", docs[0].Obj["data"])
	}
}

func TestParseStreamMalformed(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"syntax error, later document kept", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: ok}\n", 1, "malformed document"},
		{"syntax error in the second document", "apiVersion: v1\nkind: Secret\nmetadata: {name: ok}\n---\nkind: [\n", 5, "malformed document"},
		{"a scalar document", "apiVersion: v1\nkind: Secret\nmetadata: {name: ok}\n---\njust text\n", 5, "not a mapping"},
		{"a mapping key that is a mapping", "apiVersion: v1\nkind: Secret\nmetadata: {name: ok}\n---\n? {a: b}\n: c\n", 5, "not a scalar"},
		{"metadata not an object", "apiVersion: v1\nkind: Secret\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: Secret\nmetadata: [1]\n", 5, "metadata is not an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs, probs := ParseStream("f.yaml", []byte(c.src))
			if len(docs) != 1 || docs[0].Name != "ok" {
				t.Errorf("the good document was not kept: %+v", docs)
			}
			if len(probs) != 1 || probs[0].Line != c.line || !strings.Contains(probs[0].Message, c.msg) || probs[0].Note {
				t.Errorf("problems %+v, want one at line %d with %q", probs, c.line, c.msg)
			}
		})
	}
}

func TestParseStreamNotes(t *testing.T) {
	docs, probs := ParseStream("values.yaml", []byte("replicas: 3\nimage: x\n"))
	if len(docs) != 0 || len(probs) != 1 || !probs[0].Note {
		t.Fatalf("a values file: docs %v problems %+v", docs, probs)
	}
	docs, probs = ParseStream("e.yaml", []byte("---\n# only a comment\n---\n\n---\n~\n"))
	if len(docs) != 0 || len(probs) != 0 {
		t.Fatalf("empty documents: docs %v problems %+v", docs, probs)
	}
}

func TestParseStreamBounds(t *testing.T) {
	// A billion-laughs document stops at the node bound with a clear error.
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	docs, probs := ParseStream("bomb.yaml", []byte(b.String()))
	if len(docs) != 0 || len(probs) != 1 || !strings.Contains(probs[0].Message, "aliases expand to more than") {
		t.Fatalf("alias bomb: docs %d problems %+v", len(docs), probs)
	}
	// Aliases within the budget are expanded.
	docs, probs = ParseStream("anchors.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: x, labels: {a: b}}\ndata: {copy: *m}\n"))
	if len(probs) != 0 || len(docs) != 1 || docs[0].Obj["data"].(map[string]any)["copy"].(map[string]any)["name"] != "x" {
		t.Fatalf("anchors: docs %+v problems %+v", docs, probs)
	}
	// Deep nesting.
	deep := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nd: " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "\n"
	if docs, probs := ParseStream("deep.yaml", []byte(deep)); len(docs) != 0 || len(probs) != 1 {
		t.Fatalf("deep nesting: docs %d problems %+v", len(docs), probs)
	}
	// An oversized document.
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"" + strings.Repeat("x", MaxDocumentBytes) + "\"}\n"
	if docs, probs := ParseStream("big.yaml", []byte(big)); len(docs) != 0 || len(probs) != 1 || !strings.Contains(probs[0].Message, "larger than") {
		t.Fatalf("big document: docs %d problems %+v", len(docs), probs)
	}
}

func TestReadArgs(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obj := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	write("b/two.yml", obj("two"))
	write("a.yaml", obj("one"))
	write("c/three.json", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "three"}}`)
	write("c/readme.md", "not read")
	write(".git/x.yaml", obj("hidden"))
	in := ReadArgs([]string{dir, filepath.Join(dir, "missing.yaml"), "-"}, strings.NewReader(obj("stdin")))
	var names []string
	for _, d := range in.Docs {
		names = append(names, d.Name+"@"+filepath.Base(d.File))
	}
	want := "one@a.yaml two@two.yml three@three.json stdin@<stdin>"
	if strings.Join(names, " ") != want {
		t.Errorf("documents %v, want %s", names, want)
	}
	if in.Files != 4 || len(in.Problems) != 1 || !in.Problems[0].Unreadable || !strings.Contains(in.Problems[0].Message, "no such file") {
		t.Errorf("files %d problems %+v", in.Files, in.Problems)
	}
	r := Evaluate(in, Options{})
	if !r.Unreadable() || r.Verdict("warning") != ResultError {
		t.Errorf("a missing file must make the run an error")
	}
}

// TestParseStreamJSONCharacters: JSON that encoding/json reads but a YAML
// parser rejects as is (raw DEL, C1 controls, invalid UTF-8 in strings) is
// read, with the same values encoding/json gives.
func TestParseStreamJSONCharacters(t *testing.T) {
	raw := "a\x7fb\u0080c\u009f\xffd"
	src := []byte("{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"x\"},\n \"stringData\": {\"k\": \"" + raw + "\"}}\n")
	docs, probs := ParseStream("f.json", src)
	if len(probs) != 0 || len(docs) != 1 {
		t.Fatalf("docs %d problems %+v", len(docs), probs)
	}
	var want map[string]any
	if err := json.Unmarshal(src, &want); err != nil {
		t.Fatal(err)
	}
	got := docs[0].Obj["stringData"].(map[string]any)["k"]
	if got != want["stringData"].(map[string]any)["k"] {
		t.Errorf("got %q, want %q", got, want["stringData"].(map[string]any)["k"])
	}
	// The same bytes in a YAML document are an error, as for kubectl.
	if _, probs := ParseStream("f.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringData: {k: \""+raw+"\"}\n")); len(probs) != 1 {
		t.Errorf("raw C1 controls in YAML: problems %+v", probs)
	}
}

// TestParseStreamLineBreaks: CR-only and Unicode line breaks count as the YAML
// parser counts them, and no document is lost to a break the splitter missed.
func TestParseStreamLineBreaks(t *testing.T) {
	for name, br := range map[string]string{"CR": "\r", "CRLF": "\r\n", "LF": "\n", "NEL": "\u0085", "LS": "\u2028"} {
		src := strings.Join([]string{"apiVersion: v1", "kind: ConfigMap", "metadata: {name: a}", "---", "# c", "apiVersion: v1", "kind: ConfigMap", "metadata: {name: b}", ""}, br)
		docs, probs := ParseStream("f.yaml", []byte(src))
		if len(probs) != 0 || len(docs) != 2 || docs[0].Line != 1 || docs[1].Name != "b" || docs[1].Line != 6 {
			t.Errorf("%s: problems %+v, docs %d", name, probs, len(docs))
			for _, d := range docs {
				t.Logf("%s at %d", d.Name, d.Line)
			}
		}
	}
}
