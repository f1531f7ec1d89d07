package parse

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

// testFP gives stable fingerprints.
var testFP = model.NewFingerprinterWithKey([]byte("driftwatch-parse-test-key-000000"))

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// secretValue returns a high-entropy value that cannot occur by chance in any
// output.
func secretValue(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 32)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alnum))))
		if err != nil {
			tb.Fatal(err)
		}
		b[i] = alnum[n.Int64()]
	}
	return "SV" + string(b)
}

// Fixed, high-entropy values used in seeds (fuzz targets check them by name).
var seedValues = []string{
	"SVq8Zr2LwX0pT7nY4cVb1mKe9sHd3fJg6A",
	"SVu5Ni3Oo0Pp9Qq8Rr7Ss6Tt5Uu4Vv3Ww2",
	"SVxY7zA1bC2dE3fG4hI5jK6lM7nO8pQ9rS",
	"SVmN1oP2qR3sT4uV5wX6yZ7aB8cD9eF0gH",
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// helmPayload encodes a release the way Helm v3's Secret driver does:
// json.Marshal, gzip, base64 (the Secret's data value is this base64 text).
func helmPayload(tb testing.TB, rel any, gz, b64wrap bool) []byte {
	tb.Helper()
	j, err := json.Marshal(rel)
	if err != nil {
		tb.Fatal(err)
	}
	out := j
	if gz {
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = w.Write(j)
		w.Close()
		out = buf.Bytes()
	}
	if b64wrap {
		out = []byte(base64.StdEncoding.EncodeToString(out))
	}
	return out
}

func helmRel(name, ns string, version int, status, manifest string) map[string]any {
	return map[string]any{
		"name":      name,
		"namespace": ns,
		"version":   version,
		"info":      map[string]any{"status": status, "description": "Install complete"},
		"chart": map[string]any{
			"metadata": map[string]any{"name": "app", "version": "1.2.3"},
			"values":   map[string]any{"password": seedValues[3]},
		},
		"config":   map[string]any{"dbPassword": seedValues[2]},
		"manifest": manifest,
	}
}

// The vocabulary of errors: every string an *Error may carry. A message made of
// these and numbers cannot quote input.
var (
	errInputs  = []string{inputLastApplied, inputHelm, inputExpectedKeys}
	errStages  = []string{"", "base64", "gzip", "json", "yaml", "manifest"}
	errFields  = []string{"", "apiVersion", "kind", "metadata", "metadata.name", "data", "stringData", "spec", "spec.data", "spec.target", "spec.target.name", "spec.target.template", "spec.target.template.data", "name", "namespace", "version", "info", "info.status", "manifest", "release"}
	errDetails = []string{"", "not an object", "not a string", "not an array", "not an integer", "bad string", "entry is not an object or secretKey is not a string", "name or namespace is not a string", "field missing", "corrupt deflate data", "bad header", "checksum mismatch", "truncated", "unreadable", "too many documents", "too many entries", "longer than 253 bytes", "character not allowed in a key", "must not be '.' or start with '..'"}
)

func inList(s string, l []string) bool {
	for _, x := range l {
		if s == x {
			return true
		}
	}
	return false
}

// checkErr asserts err is nil or an *Error built only from the fixed vocabulary.
func checkErr(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		tb.Fatalf("error is %T, not *Error", err)
	}
	if !inList(e.Input, errInputs) || !inList(e.Stage, errStages) || !inList(e.Field, errFields) || !inList(e.Detail, errDetails) {
		tb.Fatalf("error carries a string outside the vocabulary: %#v", e)
	}
	if e.Kind != ErrTooLarge && e.Kind != ErrMalformed && e.Kind != ErrInvalid {
		tb.Fatalf("error kind %v", e.Kind)
	}
}

var errStringRe = regexp.MustCompile(`^` + alt(errInputs) + `(: ` + alt(errStages[1:]) + `)?(: (document|entry) \d+)?(: ` + alt(errFields[1:]) + `)?: (exceeds size limit|malformed|invalid)( \(` + alt(errDetails[1:]) + `\))?( at offset \d+)?(, limit \d+)?(; \d+ more)?$`)

func alt(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = regexp.QuoteMeta(s)
	}
	return "(" + strings.Join(q, "|") + ")"
}

func checkErrString(tb testing.TB, s string) {
	tb.Helper()
	if s != "" && !errStringRe.MatchString(s) {
		tb.Fatalf("error string outside the vocabulary: %q", s)
	}
}

// noValues asserts none of the values occurs in the rendering of v.
func noValues(tb testing.TB, v any, values ...string) {
	tb.Helper()
	s := sprintAll(v)
	for _, val := range values {
		if len(val) >= 8 && strings.Contains(s, val) {
			tb.Fatalf("value %q leaked into %s", val, s)
		}
	}
}
