// Package cli holds driftwatch's one-shot subcommands, which cmd/agent (and
// the kubectl plugin) dispatch to: `agent compare` (compare.go: a
// byte-identical, value-free comparison of two Secrets), `agent check`
// (check.go: one pass of every detector against the current cluster),
// `agent lint` (lint.go: the detectors over rendered manifests, offline) and
// `agent rules` (rules.go: the alerting rules for an installation).
package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/agent"
)

// Exit codes of the subcommands.
const (
	ExitOK      = 0 // compare: every key matches; check: no finding at or above --fail-on
	ExitFinding = 1 // compare: any difference; check: a finding at or above --fail-on
	ExitError   = 2 // usage, connection or access errors
)

// Connect builds the API clients for --kubeconfig and --context.
type Connect func(kubeconfig, kubeContext string) (agent.Clients, error)

// DefaultConnect connects with --kubeconfig, else in-cluster config, else the
// default loading rules ($KUBECONFIG, ~/.kube/config).
func DefaultConnect(kubeconfig, kubeContext string) (agent.Clients, error) {
	c, _, err := agent.Connect(kubeconfig, kubeContext, "driftwatch-cli")
	return c, err
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// CLI verdicts, as printed: the detector's verdicts (detect.Verdict*, the
// label values of driftwatch_compare_mismatch) in capitals, spaces for
// underscores.
var (
	Match            = printed(detect.VerdictMatch)
	Mismatch         = printed(detect.VerdictMismatch)
	MissingFromStore = printed(detect.VerdictMissingFromStore) // the key is only in the live Secret
	OnlyInStore      = printed(detect.VerdictOnlyInStore)      // the key is only in the store's copy
)

func printed(verdict string) string { return strings.ToUpper(strings.ReplaceAll(verdict, "_", " ")) }

// Hints: what the only difference between two values is.
const (
	HintTrailingNewline = "trailing_newline"  // one side has extra trailing \n
	HintTrailingCRLF    = "trailing_crlf"     // one side has extra trailing \r\n (or \r)
	HintCRLF            = "crlf_line_endings" // the values differ only in CRLF vs LF line endings
	HintWhitespace      = "whitespace"        // only in leading/trailing white space (and line endings)
	HintBase64          = "base64"            // one side is the base64 encoding of the other
)

// Verdict is the comparison of one key. It holds no value: a key name, lengths,
// and which kind of difference.
type Verdict struct {
	Key        string `json:"key"`
	Verdict    string `json:"verdict"`
	LiveBytes  int    `json:"live_bytes"`
	StoreBytes int    `json:"store_bytes"`
	Hint       string `json:"hint,omitempty"`
	// HintSide is "live" or "store": the side with the extra characters, or the
	// base64-encoded side ("" when it cannot be said).
	HintSide string `json:"hint_side,omitempty"`
}

// CompareSecrets compares the data of a live Secret with the store's copy, key
// by key, sorted by key. It is pure: it neither keeps nor modifies the values,
// and wipes the scratch buffers it allocates. The caller owns (and wipes) the maps.
func CompareSecrets(live, check map[string][]byte) []Verdict {
	keys := make([]string, 0, len(live)+len(check))
	for k := range live {
		keys = append(keys, k)
	}
	for k := range check {
		if _, ok := live[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]Verdict, 0, len(keys))
	for _, k := range keys {
		a, inLive := live[k]
		b, inStore := check[k]
		v := Verdict{Key: k, LiveBytes: len(a), StoreBytes: len(b)}
		switch {
		case !inStore:
			v.Verdict = MissingFromStore
		case !inLive:
			v.Verdict = OnlyInStore
		case bytes.Equal(a, b):
			v.Verdict = Match
		default:
			v.Verdict = Mismatch
			v.Hint, v.HintSide = hint(a, b)
		}
		out = append(out, v)
	}
	return out
}

func longer(a, b []byte) string {
	switch {
	case len(a) > len(b):
		return "live"
	case len(b) > len(a):
		return "store"
	}
	return ""
}

// hint names the only difference between two unequal values, if it is one of
// the usual ones. Every copy it makes is wiped before it returns.
func hint(a, b []byte) (string, string) {
	if bytes.Equal(bytes.TrimRight(a, "\n"), bytes.TrimRight(b, "\n")) {
		return HintTrailingNewline, longer(a, b)
	}
	if bytes.Equal(bytes.TrimRight(a, "\r\n"), bytes.TrimRight(b, "\r\n")) {
		return HintTrailingCRLF, longer(a, b)
	}
	if bytes.Contains(a, []byte("\r\n")) || bytes.Contains(b, []byte("\r\n")) {
		na := bytes.ReplaceAll(a, []byte("\r\n"), []byte("\n"))
		nb := bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
		eq := bytes.Equal(na, nb)
		eqTrim := bytes.Equal(bytes.TrimSpace(na), bytes.TrimSpace(nb))
		clear(na)
		clear(nb)
		if eq {
			return HintCRLF, longer(a, b)
		}
		if eqTrim {
			return HintWhitespace, longer(a, b)
		}
	} else if bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) {
		return HintWhitespace, longer(a, b)
	}
	if isBase64Of(a, b) {
		return HintBase64, "live"
	}
	if isBase64Of(b, a) {
		return HintBase64, "store"
	}
	return "", ""
}

// isBase64Of reports whether enc (surrounding white space ignored) is the base64
// encoding (standard or URL alphabet, padded or not) of raw.
func isBase64Of(enc, raw []byte) bool {
	enc = bytes.TrimSpace(enc)
	if len(enc) == 0 || len(enc) < len(raw) {
		return false
	}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if e.DecodedLen(len(enc)) < len(raw) {
			continue
		}
		dst := make([]byte, e.DecodedLen(len(enc)))
		n, err := e.Decode(dst, enc)
		ok := err == nil && bytes.Equal(dst[:n], raw)
		clear(dst)
		if ok {
			return true
		}
	}
	return false
}

// CompareSummary counts verdicts.
type CompareSummary struct {
	Keys             int `json:"keys"`
	Match            int `json:"match"`
	Mismatch         int `json:"mismatch"`
	MissingFromStore int `json:"missing_from_store"`
	OnlyInStore      int `json:"only_in_store"`
}

// Identical is true when every key matches (an empty pair is identical).
func (s CompareSummary) Identical() bool { return s.Match == s.Keys }

// Summarise counts the verdicts.
func Summarise(vs []Verdict) CompareSummary {
	s := CompareSummary{Keys: len(vs)}
	for _, v := range vs {
		switch v.Verdict {
		case Match:
			s.Match++
		case Mismatch:
			s.Mismatch++
		case MissingFromStore:
			s.MissingFromStore++
		case OnlyInStore:
			s.OnlyInStore++
		}
	}
	return s
}

func hintText(v Verdict) string {
	side := v.HintSide
	switch v.Hint {
	case HintTrailingNewline:
		return "the " + side + " value has an extra trailing newline"
	case HintTrailingCRLF:
		return "the " + side + " value has an extra trailing CRLF"
	case HintCRLF:
		return "same text, the " + side + " value has CRLF line endings"
	case HintWhitespace:
		if side == "" {
			return "differs only in leading/trailing white space"
		}
		return "differs only in leading/trailing white space (more on the " + side + " side)"
	case HintBase64:
		return "the " + side + " value is the base64 encoding of the other"
	}
	return ""
}

// printableKey quotes a key that would not read well on a line of its own.
func printableKey(k string) string {
	for _, r := range k {
		if r <= ' ' || r == ':' || r == '"' || r == 0x7f || !strconv.IsPrint(r) {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// WriteCompareText prints one line per key and a summary line.
func WriteCompareText(w io.Writer, live, store string, vs []Verdict) error {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(printableKey(v.Key))
		b.WriteString(": ")
		b.WriteString(v.Verdict)
		if v.Verdict == Mismatch {
			fmt.Fprintf(&b, " (%d vs %d bytes)", v.LiveBytes, v.StoreBytes)
			if h := hintText(v); h != "" {
				b.WriteString(" - hint: ")
				b.WriteString(h)
			}
		}
		b.WriteByte('\n')
	}
	s := Summarise(vs)
	result := "IDENTICAL"
	if !s.Identical() {
		result = "DIFFERENT"
	}
	fmt.Fprintf(&b, "%s: live %s vs store %s (sizes: live vs store): %d keys, %d match, %d mismatch, %d missing from store, %d only in store\n",
		result, live, store, s.Keys, s.Match, s.Mismatch, s.MissingFromStore, s.OnlyInStore)
	_, err := io.WriteString(w, b.String())
	return err
}

// CompareReport is the --output json document.
type CompareReport struct {
	Live      string         `json:"live"`
	Store     string         `json:"store"`
	Identical bool           `json:"identical"`
	Summary   CompareSummary `json:"summary"`
	Keys      []Verdict      `json:"keys"`
}

// WriteCompareJSON prints the JSON report.
func WriteCompareJSON(w io.Writer, live, store string, vs []Verdict) error {
	if vs == nil {
		vs = []Verdict{}
	}
	s := Summarise(vs)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(CompareReport{Live: live, Store: store, Identical: s.Identical(), Summary: s, Keys: vs})
}

// splitContext splits "CONTEXT:REST" (qualified) from "REST". Namespaces and
// names cannot hold a colon, so one before the slash names a context.
func splitContext(s string) (kctx, rest string, qualified bool) {
	i := strings.IndexByte(s, ':')
	if i < 0 || i > strings.IndexByte(s, '/') && strings.IndexByte(s, '/') >= 0 {
		return "", s, false
	}
	return s[:i], s[i+1:], true
}

func splitRef(s string) (ns, name string, ok bool) {
	i := strings.IndexByte(s, '/')
	if i <= 0 || i == len(s)-1 || strings.Count(s, "/") != 1 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

const compareUsage = `usage: agent compare [--kubeconfig K] [--context C] [--output text|json] [CONTEXT:]NAMESPACE/LIVE [CONTEXT:]NAMESPACE/CHECK

Compares two Secrets key by key without printing any value: LIVE is the Secret in
use, CHECK the copy an ExternalSecret synced from the store. A CONTEXT: prefix reads
that Secret through another kubeconfig context (another cluster: staging:apps/api
prod:apps/api); the values of both stay in this process. One line per key:
  KEY: MATCH | MISMATCH (L vs S bytes) [- hint] | MISSING FROM STORE | ONLY IN STORE
Exit status: 0 every key matches, 1 any difference, 2 usage or access error.

`

// Compare runs `agent compare` with the default connection.
func Compare(args []string, stdout, stderr io.Writer) int {
	return CompareWith(args, stdout, stderr, DefaultConnect)
}

// CompareWith runs `agent compare` with the given connection (tests inject a
// fake clientset).
func CompareWith(args []string, stdout, stderr io.Writer, connect Connect) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, compareUsage)
		fs.PrintDefaults()
	}
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)")
	kctx := fs.String("context", "", "kubeconfig context to use")
	output := fs.String("output", "text", "output format: text or json")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit for reading both Secrets")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "agent compare: --output %q: want text or json\n", *output)
		return ExitError
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "agent compare: want two Secrets, NAMESPACE/LIVE NAMESPACE/CHECK (got %d arguments)\n", len(pos))
		fs.Usage()
		return ExitError
	}
	var refs [2][2]string
	var ctxs [2]string
	var names [2]string
	for i, a := range pos {
		refCtx, rest, qualified := splitContext(a)
		ns, name, ok := splitRef(rest)
		if !ok || qualified && refCtx == "" {
			fmt.Fprintf(stderr, "agent compare: %q: want NAMESPACE/NAME or CONTEXT:NAMESPACE/NAME\n", a)
			return ExitError
		}
		refs[i], names[i] = [2]string{ns, name}, a
		ctxs[i] = *kctx
		if qualified {
			ctxs[i] = refCtx
		}
	}
	var clients [2]agent.Clients
	for i := range ctxs {
		if i == 1 && ctxs[1] == ctxs[0] {
			clients[1] = clients[0]
			continue
		}
		c, err := connect(*kubeconfig, ctxs[i])
		if err != nil {
			fmt.Fprintln(stderr, "agent compare:", err)
			return ExitError
		}
		if c.Core == nil {
			fmt.Fprintln(stderr, "agent compare: no Kubernetes client")
			return ExitError
		}
		clients[i] = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var data [2]map[string][]byte
	defer func() {
		for _, m := range data {
			for _, v := range m {
				clear(v)
			}
		}
	}()
	for i, r := range refs {
		s, err := clients[i].Core.CoreV1().Secrets(r[0]).Get(ctx, r[1], metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(stderr, "agent compare: cannot read Secret %s: %s\n", names[i], describeErr(err))
			return ExitError
		}
		data[i] = s.Data
		for k, v := range s.StringData { // never set on objects read from the apiserver
			if data[i] == nil {
				data[i] = map[string][]byte{}
			}
			data[i][k] = []byte(v)
		}
		s.Data, s.StringData = nil, nil
	}
	vs := CompareSecrets(data[0], data[1])
	liveName, storeName := names[0], names[1]
	if *output == "json" {
		err = WriteCompareJSON(stdout, liveName, storeName, vs)
	} else {
		err = WriteCompareText(stdout, liveName, storeName, vs)
	}
	if err != nil {
		fmt.Fprintln(stderr, "agent compare: cannot write the result:", err)
		return ExitError
	}
	if Summarise(vs).Identical() {
		return ExitOK
	}
	return ExitFinding
}

// describeErr renders an API error without anything but its class: API status
// errors by reason, transport errors as client-go reports them (method, URL,
// network error: object names, never data), anything else by type only.
func describeErr(err error) string {
	var ue *url.Error
	switch {
	case apierrors.IsNotFound(err):
		return "not found"
	case apierrors.IsForbidden(err):
		return "forbidden (needs get on secrets in that namespace)"
	case apierrors.IsUnauthorized(err):
		return "unauthorized (check the credentials of the kubeconfig context)"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.As(err, &ue):
		return ue.Error()
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return "request failed: " + string(r)
	}
	return fmt.Sprintf("request failed (%T)", err)
}
