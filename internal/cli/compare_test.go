package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/internal/agent"
)

func TestCompareSecrets(t *testing.T) {
	live := map[string][]byte{
		"same":         []byte("identical"),
		"nl":           []byte("token"),
		"nl-live":      []byte("token\n"),
		"nl-many":      []byte("token"),
		"crlf-tail":    []byte("token\r\n"),
		"crlf-lines":   []byte("line1\r\nline2\r\nline3"),
		"space":        []byte("  padded\t"),
		"space-both":   []byte(" left"),
		"crlf-space":   []byte("a\r\nb\r\n  "),
		"b64-store":    []byte("hello world!"),
		"b64-live":     []byte("aGVsbG8gd29ybGQh\n"),
		"b64-raw-url":  {0xfb, 0xff, 0xfe},
		"diff":         []byte("aaaa"),
		"binary":       {0x00, 0x01, 0x02, 0xff},
		"binary-same":  {0x00, 0xff, 0x00},
		"empty":        {},
		"empty-vs-nl":  {},
		"empty-vs-x":   {},
		".dotfile":     []byte("x"),
		"a-b_c.d":      []byte("x"),
		"only-live":    []byte("x"),
		"UPPER_CASE.1": []byte("x"),
	}
	store := map[string][]byte{
		"same":         []byte("identical"),
		"nl":           []byte("token\n"),
		"nl-live":      []byte("token"),
		"nl-many":      []byte("token\n\n"),
		"crlf-tail":    []byte("token"),
		"crlf-lines":   []byte("line1\nline2\nline3"),
		"space":        []byte("padded"),
		"space-both":   []byte("left "),
		"crlf-space":   []byte("a\nb"),
		"b64-store":    []byte("aGVsbG8gd29ybGQh"),
		"b64-live":     []byte("hello world!"),
		"b64-raw-url":  []byte("-__-"),
		"diff":         []byte("bbbbb"),
		"binary":       {0x00, 0x01, 0x02, 0xfe},
		"binary-same":  {0x00, 0xff, 0x00},
		"empty":        {},
		"empty-vs-nl":  []byte("\n"),
		"empty-vs-x":   []byte("x"),
		".dotfile":     []byte("x"),
		"a-b_c.d":      []byte("y"),
		"only-store":   []byte("x"),
		"UPPER_CASE.1": []byte("x"),
	}
	got := CompareSecrets(live, store)
	want := []Verdict{
		{Key: ".dotfile", Verdict: Match, LiveBytes: 1, StoreBytes: 1},
		{Key: "UPPER_CASE.1", Verdict: Match, LiveBytes: 1, StoreBytes: 1},
		{Key: "a-b_c.d", Verdict: Mismatch, LiveBytes: 1, StoreBytes: 1},
		{Key: "b64-live", Verdict: Mismatch, LiveBytes: 17, StoreBytes: 12, Hint: HintBase64, HintSide: "live"},
		{Key: "b64-raw-url", Verdict: Mismatch, LiveBytes: 3, StoreBytes: 4, Hint: HintBase64, HintSide: "store"},
		{Key: "b64-store", Verdict: Mismatch, LiveBytes: 12, StoreBytes: 16, Hint: HintBase64, HintSide: "store"},
		{Key: "binary", Verdict: Mismatch, LiveBytes: 4, StoreBytes: 4},
		{Key: "binary-same", Verdict: Match, LiveBytes: 3, StoreBytes: 3},
		{Key: "crlf-lines", Verdict: Mismatch, LiveBytes: 19, StoreBytes: 17, Hint: HintCRLF, HintSide: "live"},
		{Key: "crlf-space", Verdict: Mismatch, LiveBytes: 8, StoreBytes: 3, Hint: HintWhitespace, HintSide: "live"},
		{Key: "crlf-tail", Verdict: Mismatch, LiveBytes: 7, StoreBytes: 5, Hint: HintTrailingCRLF, HintSide: "live"},
		{Key: "diff", Verdict: Mismatch, LiveBytes: 4, StoreBytes: 5},
		{Key: "empty", Verdict: Match},
		{Key: "empty-vs-nl", Verdict: Mismatch, StoreBytes: 1, Hint: HintTrailingNewline, HintSide: "store"},
		{Key: "empty-vs-x", Verdict: Mismatch, StoreBytes: 1},
		{Key: "nl", Verdict: Mismatch, LiveBytes: 5, StoreBytes: 6, Hint: HintTrailingNewline, HintSide: "store"},
		{Key: "nl-live", Verdict: Mismatch, LiveBytes: 6, StoreBytes: 5, Hint: HintTrailingNewline, HintSide: "live"},
		{Key: "nl-many", Verdict: Mismatch, LiveBytes: 5, StoreBytes: 7, Hint: HintTrailingNewline, HintSide: "store"},
		{Key: "only-live", Verdict: MissingFromStore, LiveBytes: 1},
		{Key: "only-store", Verdict: OnlyInStore, StoreBytes: 1},
		{Key: "same", Verdict: Match, LiveBytes: 9, StoreBytes: 9},
		{Key: "space", Verdict: Mismatch, LiveBytes: 9, StoreBytes: 6, Hint: HintWhitespace, HintSide: "live"},
		{Key: "space-both", Verdict: Mismatch, LiveBytes: 5, StoreBytes: 5, Hint: HintWhitespace},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if i < len(got) && !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("got  %+v\nwant %+v", got[i], want[i])
			}
		}
		t.Fatalf("%d verdicts, want %d", len(got), len(want))
	}
	// Pure: the inputs are untouched.
	if string(live["nl-live"]) != "token\n" || string(store["b64-store"]) != "aGVsbG8gd29ybGQh" {
		t.Fatal("CompareSecrets modified its input")
	}
	if s := Summarise(got); s.Identical() || s.Keys != 23 || s.Match != 5 || s.Mismatch != 16 || s.MissingFromStore != 1 || s.OnlyInStore != 1 {
		t.Fatalf("summary %+v", s)
	}
	if !Summarise(CompareSecrets(nil, nil)).Identical() {
		t.Fatal("two empty Secrets are identical")
	}
}

func TestWriteCompareText(t *testing.T) {
	vs := []Verdict{
		{Key: "A", Verdict: Match, LiveBytes: 3, StoreBytes: 3},
		{Key: "B", Verdict: Mismatch, LiveBytes: 48, StoreBytes: 49, Hint: HintTrailingNewline, HintSide: "store"},
		{Key: "C", Verdict: Mismatch, LiveBytes: 4, StoreBytes: 5},
		{Key: "D", Verdict: MissingFromStore, LiveBytes: 1},
		{Key: "E", Verdict: OnlyInStore, StoreBytes: 1},
		{Key: "we ird:key", Verdict: Match},
	}
	var b bytes.Buffer
	if err := WriteCompareText(&b, "ns/live", "ns/check", vs); err != nil {
		t.Fatal(err)
	}
	want := `A: MATCH
B: MISMATCH (48 vs 49 bytes) - hint: the store value has an extra trailing newline
C: MISMATCH (4 vs 5 bytes)
D: MISSING FROM STORE
E: ONLY IN STORE
"we ird:key": MATCH
DIFFERENT: live ns/live vs store ns/check (sizes: live vs store): 6 keys, 2 match, 2 mismatch, 1 missing from store, 1 only in store
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// randomValue is a deterministic high-entropy value.
func randomValue(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func secretObj(ns, name string, data map[string][]byte) *corev1.Secret {
	d := map[string][]byte{}
	for k, v := range data {
		d[k] = append([]byte(nil), v...)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: d}
}

func connectTo(objs ...runtime.Object) (Connect, *fake.Clientset) {
	cs := fake.NewClientset(objs...)
	return func(string, string) (agent.Clients, error) { return agent.Clients{Core: cs}, nil }, cs
}

func runCompare(t *testing.T, connect Connect, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := CompareWith(args, &out, &errb, connect)
	return code, out.String(), errb.String()
}

// No value, and no 4-byte window of a random value (raw, base64 or hex), ever
// reaches the output, in either format, for any verdict.
func TestCompareNeverPrintsValues(t *testing.T) {
	r := rand.New(rand.NewChaCha8([32]byte{7}))
	rnd := func() []byte { return randomValue(r, 32) }
	shared, nlBase, crlfBase, b64Raw, diffA, diffB, onlyLive, onlyStore := rnd(), rnd(), rnd(), rnd(), rnd(), rnd(), rnd(), rnd()
	randoms := [][]byte{shared, nlBase, crlfBase, b64Raw, diffA, diffB, onlyLive, onlyStore}
	// Readable values are checked whole.
	readable := [][]byte{[]byte("Zq8-readable-password-1"), []byte("  Zq8-padded-value-2 ")}
	live := map[string][]byte{
		"shared":     shared,
		"nl":         nlBase,
		"crlf":       append(append([]byte(nil), crlfBase...), '\r', '\n'),
		"b64":        []byte(base64.StdEncoding.EncodeToString(b64Raw)),
		"diff":       diffA,
		"only.live":  onlyLive,
		"readable":   readable[0],
		"pad":        readable[1],
		"empty":      {},
		"odd_key-1.": []byte("Zq8-readable-password-1"),
	}
	store := map[string][]byte{
		"shared":     shared,
		"nl":         append(append([]byte(nil), nlBase...), '\n'),
		"crlf":       crlfBase,
		"b64":        b64Raw,
		"diff":       diffB,
		"only.store": onlyStore,
		"readable":   []byte("Zq8-readable-password-1\n"),
		"pad":        []byte("Zq8-padded-value-2"),
		"empty":      {},
		"odd_key-1.": []byte("Zq8-readable-password-1"),
	}
	connect, _ := connectTo(secretObj("prod", "db", live), secretObj("prod", "db-check", store))
	for _, format := range []string{"text", "json"} {
		code, out, errs := runCompare(t, connect, "--output", format, "prod/db", "prod/db-check")
		if code != ExitFinding {
			t.Fatalf("%s: exit %d, want 1; stderr %q", format, code, errs)
		}
		all := out + errs
		for _, v := range randoms {
			encs := [][]byte{v, []byte(base64.StdEncoding.EncodeToString(v)), []byte(hex.EncodeToString(v))}
			for _, e := range encs {
				for i := 0; i+4 <= len(e); i++ {
					if strings.Contains(all, string(e[i:i+4])) {
						t.Fatalf("%s: output contains a 4-byte window of a test value (offset %d)", format, i)
					}
				}
			}
		}
		for _, v := range readable {
			for _, s := range []string{string(v), strings.TrimSpace(string(v)), base64.StdEncoding.EncodeToString(v)} {
				if strings.Contains(all, s) {
					t.Fatalf("%s: output contains a readable test value", format)
				}
			}
		}
		for _, k := range []string{"shared", "nl", "crlf", "b64", "diff", "only.live", "only.store", "readable", "pad", "empty", "odd_key-1."} {
			if !strings.Contains(out, k) {
				t.Errorf("%s: key %q not reported", format, k)
			}
		}
	}
	// The input of the fake was not modified by the comparison (the CLI wipes its copies only).
	_, out, _ := runCompare(t, connect, "prod/db", "prod/db-check")
	for _, line := range []string{
		"b64: MISMATCH (44 vs 32 bytes) - hint: the live value is the base64 encoding of the other",
		"crlf: MISMATCH (34 vs 32 bytes) - hint: the live value has an extra trailing CRLF",
		"diff: MISMATCH (32 vs 32 bytes)\n",
		"empty: MATCH",
		"nl: MISMATCH (32 vs 33 bytes) - hint: the store value has an extra trailing newline",
		"odd_key-1.: MATCH",
		"only.live: MISSING FROM STORE",
		"only.store: ONLY IN STORE",
		"pad: MISMATCH (21 vs 18 bytes) - hint: differs only in leading/trailing white space (more on the live side)",
		"readable: MISMATCH (23 vs 24 bytes) - hint: the store value has an extra trailing newline",
		"shared: MATCH",
		"DIFFERENT: live prod/db vs store prod/db-check",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("text output lacks %q:\n%s", line, out)
		}
	}
}

func TestCompareJSON(t *testing.T) {
	connect, _ := connectTo(
		secretObj("a", "live", map[string][]byte{"k": []byte("v1"), "gone": []byte("x")}),
		secretObj("a", "check", map[string][]byte{"k": []byte("v1\n"), "new": []byte("y")}))
	code, out, _ := runCompare(t, connect, "a/live", "a/check", "--output=json")
	if code != ExitFinding {
		t.Fatalf("exit %d", code)
	}
	var r CompareReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := CompareReport{Live: "a/live", Store: "a/check", Summary: CompareSummary{Keys: 3, Mismatch: 1, MissingFromStore: 1, OnlyInStore: 1},
		Keys: []Verdict{
			{Key: "gone", Verdict: MissingFromStore, LiveBytes: 1},
			{Key: "k", Verdict: Mismatch, LiveBytes: 2, StoreBytes: 3, Hint: HintTrailingNewline, HintSide: "store"},
			{Key: "new", Verdict: OnlyInStore, StoreBytes: 1},
		}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got  %+v\nwant %+v", r, want)
	}
}

func TestCompareExitCodes(t *testing.T) {
	same := map[string][]byte{"a": []byte("1"), "b": {}}
	connect, cs := connectTo(secretObj("n", "x", same), secretObj("n", "y", same), secretObj("n", "z", map[string][]byte{"a": []byte("2")}),
		secretObj("n", "empty1", nil), secretObj("n", "empty2", nil))
	cases := []struct {
		args []string
		code int
		errs string
	}{
		{[]string{"n/x", "n/y"}, ExitOK, ""},
		{[]string{"--output", "json", "n/x", "n/y"}, ExitOK, ""},
		{[]string{"n/empty1", "n/empty2"}, ExitOK, ""},
		{[]string{"n/x", "n/z"}, ExitFinding, ""},
		{[]string{"n/x", "n/empty1"}, ExitFinding, ""},
		{[]string{"n/x"}, ExitError, "want two Secrets"},
		{[]string{"n/x", "n/y", "n/z"}, ExitError, "want two Secrets"},
		{[]string{"x", "n/y"}, ExitError, "want NAMESPACE/NAME"},
		{[]string{"n/x/", "n/y"}, ExitError, "want NAMESPACE/NAME"},
		{[]string{"--output", "yaml", "n/x", "n/y"}, ExitError, "--output"},
		{[]string{"--bogus", "n/x", "n/y"}, ExitError, "bogus"},
		{[]string{"n/x", "n/missing"}, ExitError, "cannot read Secret n/missing: not found"},
		{[]string{"other/x", "n/y"}, ExitError, "cannot read Secret other/x: not found"},
	}
	for _, c := range cases {
		code, _, errs := runCompare(t, connect, c.args...)
		if code != c.code || !strings.Contains(errs, c.errs) {
			t.Errorf("%q: exit %d stderr %q; want %d and %q", c.args, code, errs, c.code, c.errs)
		}
	}
	if code, _, _ := runCompare(t, connect, "-h"); code != ExitOK {
		t.Errorf("-h: exit %d", code)
	}
	cs.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, a.(k8stesting.GetAction).GetName(), errors.New("RBAC"))
	})
	if code, _, errs := runCompare(t, connect, "n/x", "n/y"); code != ExitError || !strings.Contains(errs, "n/x: forbidden") {
		t.Errorf("forbidden: exit %d stderr %q", code, errs)
	}
	failing := func(string, string) (agent.Clients, error) { return agent.Clients{}, errors.New("no kubeconfig") }
	if code, _, errs := runCompare(t, failing, "n/x", "n/y"); code != ExitError || !strings.Contains(errs, "no kubeconfig") {
		t.Errorf("connect error: exit %d stderr %q", code, errs)
	}
}
