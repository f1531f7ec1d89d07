package lint

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGoldenOutput")

// goldenInput is a rendering with a finding of every rule lint judges (each
// severity, labels and detector evidence, related locations, a List item),
// assumptions, a note, a silenced finding and a malformed document. SARIF
// names the tool version "dev", as an agent built without -ldflags does
// (test/e2e/lint holds the real binary's output to the same files).
const goldenInput = "testdata/golden/rich.yaml"

// goldenOutputs renders every output format of the golden input, by golden
// file name.
func goldenOutputs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, strict := range []bool{false, true} {
		rep := Evaluate(ReadArgs([]string{goldenInput}, nil), Options{Strict: strict})
		name := "rich"
		if strict {
			name += ".strict"
		}
		var j, s, txt bytes.Buffer
		if err := WriteJSON(&j, rep, "warning", strict); err != nil {
			t.Fatal(err)
		}
		if err := WriteSARIF(&s, rep, "dev"); err != nil {
			t.Fatal(err)
		}
		if err := WriteText(&txt, rep, "warning", true); err != nil {
			t.Fatal(err)
		}
		out[name+".json"], out[name+".sarif"], out[name+".txt"] = j.Bytes(), s.Bytes(), txt.Bytes()
	}
	return out
}

// TestGoldenOutput holds the JSON, SARIF and text output of a rich rendering
// byte for byte to testdata/golden (go test -run TestGoldenOutput -update
// rewrites them; a change to them is a change of the output formats).
func TestGoldenOutput(t *testing.T) {
	for name, got := range goldenOutputs(t) {
		path := filepath.Join("testdata", "golden", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestGoldenOutput -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file:\n%s", name, got)
		}
	}
}

// TestJSONRoundTrip: a JSON report read back (lint.Finding's UnmarshalJSON)
// writes the same bytes, and its findings name their families.
func TestJSONRoundTrip(t *testing.T) {
	for _, name := range []string{"rich.json", "rich.strict.json"} {
		want, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		var r JSONReport
		if err := json.Unmarshal(want, &r); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s read back and written differs:\n%s", name, b.String())
		}
		for _, f := range r.Findings {
			if f.Family == nil || f.Family.Name != f.Metric || f.Object.Kind == "" {
				t.Errorf("%s: finding %s read back without its family or object: %+v", name, f.Rule, f)
			}
		}
	}
}
