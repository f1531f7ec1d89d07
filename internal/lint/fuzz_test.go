package lint

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseStream feeds arbitrary bytes through the reader and the whole
// evaluation: no panic, every location inside the input, every output writes.
func FuzzParseStream(f *testing.F) {
	for _, s := range []string{sample, esDB, deployReading,
		"{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"x\"}, \"data\": {\"k\": \"dg==\"}}]}",
		"a: &a [*a]\n", "--- |\n  text\n...\n---\n", "<<: {apiVersion: v1}\nkind: Secret\nmetadata: {name: m}\nstringData: {a: 1}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, probs := ParseStream("f.yaml", data)
		lines := countLines(data)
		for _, d := range docs {
			if d.Line < 1 || d.Line > lines {
				t.Fatalf("document at line %d of %d", d.Line, lines)
			}
			if d.Kind == "" || d.APIVersion == "" {
				t.Fatalf("a document without kind or apiVersion")
			}
		}
		for _, p := range probs {
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("problem at line %d of %d: %s", p.Line, lines, p.Message)
			}
		}
		r := Evaluate(&Input{Docs: docs, Problems: probs, Files: 1}, Options{Strict: len(data)%2 == 0})
		for _, fd := range r.Findings {
			for _, l := range fd.Locations {
				if l.Line < 1 || l.Line > lines {
					t.Fatalf("finding %s at line %d of %d", fd.Rule, l.Line, lines)
				}
			}
		}
		var b bytes.Buffer
		if err := WriteSARIF(&b, r, "dev"); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&b, r, "warning", false); err != nil {
			t.Fatal(err)
		}
		if err := WriteText(&b, r, "warning", true); err != nil {
			t.Fatal(err)
		}
		if strings.Count(b.String(), "\x00") > strings.Count(string(data), "\x00")*3 {
			t.Fatalf("output invents NUL bytes")
		}
	})
}
