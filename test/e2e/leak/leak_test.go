package leak

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/internal/demo"
	"github.com/driftwatch/driftwatch/internal/helmpayload"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{}))
}

const wait = 90 * time.Second

// ---- value generation -------------------------------------------------------

func randBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func randFrom(t *testing.T, alphabet string, n int) string {
	var b strings.Builder
	for range n {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte(alphabet[i.Int64()])
	}
	return b.String()
}

const (
	upper   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits  = "0123456789"
	symbols = "!#$%&()*+,-./:;<=>?@[]^_{|}~"
)

// newValues draws the values planted in the cluster: high-entropy tokens in
// the encodings secrets come in, values shaped like key names, numbers and
// short strings.
func newValues(t *testing.T) []Value {
	v := []Value{
		{Kind: "base64", Bytes: []byte(base64.StdEncoding.EncodeToString(randBytes(t, 32)))},
		{Kind: "base64url", Bytes: []byte(base64.RawURLEncoding.EncodeToString(randBytes(t, 24)))},
		{Kind: "hex", Bytes: []byte(hex.EncodeToString(randBytes(t, 32)))},
		{Kind: "HEX", Bytes: []byte(strings.ToUpper(hex.EncodeToString(randBytes(t, 20))))},
		{Kind: "binary", Bytes: randBytes(t, 48)},
		{Kind: "key-like", Bytes: []byte(randFrom(t, upper, 5) + "_" + randFrom(t, upper, 6) + "_" + randFrom(t, upper, 4))},
		{Kind: "key-like", Bytes: []byte(strings.ToLower(randFrom(t, upper, 6)) + "." + strings.ToLower(randFrom(t, upper, 7)))},
		{Kind: "number", Bytes: []byte("9" + randFrom(t, digits, 15))},
		{Kind: "number", Bytes: []byte("7" + randFrom(t, digits, 11))},
		{Kind: "short", Bytes: []byte(randFrom(t, upper+strings.ToLower(upper)+digits+symbols, 6))},
		{Kind: "short", Bytes: []byte(randFrom(t, strings.ToLower(upper)+digits, 7))},
		{Kind: "password", Bytes: []byte(randFrom(t, upper, 3) + "-" + randFrom(t, strings.ToLower(upper), 5) + "-" + randFrom(t, digits, 4) + "!")},
		// Values with a fixed frame: only their random parts count (a window
		// that is mostly `{"user":"` is text anyone could print).
		templated("pem-like", "-----BEGIN TEST KEY-----\n", base64.StdEncoding.EncodeToString(randBytes(t, 90)), "\n-----END TEST KEY-----\n"),
		templated("json", `{"user":"`, randFrom(t, strings.ToLower(upper), 8), `","pass":"`, base64.RawStdEncoding.EncodeToString(randBytes(t, 12)), `"}`),
	}
	return v
}

// ---- helpers ----------------------------------------------------------------

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) (int, []byte, error) {
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// pprofPages are the text pages of net/http/pprof (the binary profiles are
// gzipped protobufs of addresses and counts).
var pprofPages = []string{
	"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1", "/debug/pprof/goroutine?debug=2",
	"/debug/pprof/heap?debug=1", "/debug/pprof/allocs?debug=1", "/debug/pprof/threadcreate?debug=1",
	"/debug/pprof/block?debug=1", "/debug/pprof/mutex?debug=1", "/debug/pprof/symbol",
}

var agentPages = []string{"/metrics", "/healthz", "/readyz", "/", "/nope", "/api/v1/findings", "/secret/nowhere/nothing"}

// outputs collects everything emitted, by source.
type outputs struct {
	t     *testing.T
	names []string
	data  map[string][]byte
}

func newOutputs(t *testing.T) *outputs { return &outputs{t: t, data: map[string][]byte{}} }

func (o *outputs) add(name string, b []byte) {
	if _, ok := o.data[name]; !ok {
		o.names = append(o.names, name)
	}
	o.data[name] = append(o.data[name], b...)
}

// fetch GETs every page of base and records the bodies (and the status line,
// which carries error messages).
func (o *outputs) fetch(prefix, base string, pages []string) {
	o.t.Helper()
	for _, p := range pages {
		code, body, err := httpGet(base + p)
		if err != nil {
			o.t.Fatalf("GET %s%s: %v", prefix, p, err)
		}
		o.add(prefix+p, append([]byte(fmt.Sprintf("%d\n", code)), body...))
	}
}

// scan searches every output for the values. Windows that also occur in
// vocabulary (names, key names, labels of the objects, with values blanked)
// or in the code-derived text of the outputs (CodeVocabulary) are public and
// not searched.
func (o *outputs) scan(vals []Value, vocabulary string) {
	o.t.Helper()
	var vb strings.Builder
	vb.WriteString(vocabulary)
	vb.WriteString(uiSourceText(o.t))
	for _, n := range o.names {
		vb.WriteString(CodeVocabulary(n, o.data[n]))
	}
	s := NewScanner(vals, vb.String())
	var all []Hit
	total, coinc := 0, 0
	for _, n := range o.names {
		hits, c := s.Scan(n, o.data[n])
		all = append(all, hits...)
		total += len(o.data[n])
		coinc += c
	}
	o.t.Logf("scanned %d outputs, %d bytes, for %d windows of %d values (%d values shorter than %d bytes not searched; %d public windows skipped, %d windows mostly a value's fixed frame); %d short low-entropy coincidences ignored",
		len(o.names), total, s.Windows(), len(vals), s.TooShort, Window, s.Skipped, s.Framed, coinc)
	for _, h := range all {
		o.t.Errorf("LEAK: %s", h)
	}
}

// uiSourceText is the findings page's code: its templates and the Go that
// writes the SVG labels and commands ("renders:", "missing:", jq filters).
// Text of the page that comes from there is public.
func uiSourceText(t *testing.T) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, pat := range []string{"internal/ui/templates/*", "internal/ui/*.go"} {
		files, _ := filepath.Glob(filepath.Join(root, pat))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		t.Fatal("no source of the findings page found")
	}
	return b.String()
}

// uiPages lists the findings page's views of what the agent found: the page
// of every namespace with a finding, and the page (with its delivery-path
// SVG) of every Secret a finding names.
func uiPages(t *testing.T, base string) []string {
	t.Helper()
	code, body, err := httpGet(base + "/api/v1/findings")
	if err != nil || code != 200 {
		t.Fatalf("GET /api/v1/findings: %d %v", code, err)
	}
	var r struct {
		Findings []struct {
			Object struct{ Kind, Namespace, Name string }
			Labels map[string]string
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, f := range r.Findings {
		ns := f.Object.Namespace
		if ns == "" {
			continue
		}
		add("/?namespace=" + url.QueryEscape(ns))
		if f.Object.Kind == "Secret" {
			add("/secret/" + url.PathEscape(ns) + "/" + url.PathEscape(f.Object.Name))
		}
		for _, l := range []string{"secret", "compare_with", "duplicate_of"} {
			if n := f.Labels[l]; n != "" {
				add("/secret/" + url.PathEscape(ns) + "/" + url.PathEscape(n))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the agent reports no finding: nothing of the page to scan")
	}
	t.Logf("%s: %d page views to scan", base, len(out))
	return out
}

// runCmd runs the agent binary with args and records stdout and stderr.
func (o *outputs) runCmd(name, bin string, args ...string) int {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		o.t.Fatalf("%s: %v", name, err)
	}
	o.add(name+" stdout", stdout.Bytes())
	o.add(name+" stderr", stderr.Bytes())
	o.t.Logf("%s: exit %d, %d bytes stdout, %d bytes stderr", name, code, stdout.Len(), stderr.Len())
	return code
}

func helmReleasePayload(_ *testing.T, release, ns string, version int, manifest string) []byte {
	return helmpayload.Release{Name: release, Namespace: ns, Version: version, Manifest: manifest}.Payload()
}

func secretObj(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeOpaque, Data: data}
}

// ---- the test on the real stack --------------------------------------------

// Secrets with random values of every shape, some of them also in a
// client-side kubectl apply's last-applied annotation and in a Helm release
// payload; two agents (JSON and text logs at debug level, pprof on), check
// and compare in both formats and their error paths. Nothing any of them
// emits may hold a value, a 6-byte piece of one, or a piece of its base64.
func TestNoValueLeaksOnTheRealStack(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	vals := newValues(t)
	vals = append(vals, Value{Kind: "hex", Bytes: []byte(hex.EncodeToString(randBytes(t, 16)))}) // the rotated value, below
	n := len(vals)
	rotated := vals[n-1].Bytes
	v := func(i int) []byte { return vals[i].Bytes }
	secrets := c.Client.CoreV1().Secrets(ns)

	// Plain Secrets: every value under neutral key names. plain-b shares some
	// values and differs in others; plain-ws has plain-a's values with a
	// trailing newline (the whitespace hint of compare).
	a, b, ws := map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	for i := 0; i < n-1; i++ {
		k := fmt.Sprintf("k%02d", i)
		a[k] = v(i)
		ws[k] = append(append([]byte(nil), v(i)...), '\n')
		if i%2 == 0 {
			b[k] = v(i)
		} else {
			b[k] = v((i + 1) % (n - 1))
		}
	}
	for name, d := range map[string]map[string][]byte{"plain-a": a, "plain-b": b, "plain-ws": ws} {
		if _, err := secrets.Create(ctx, secretObj(name, d), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A client-side `kubectl apply`: stringData and data, so the
	// last-applied annotation holds values in clear and in base64.
	applied := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "applied", "namespace": ns},
		"stringData": map[string]string{"s0": string(v(0)), "s1": string(v(5)), "s2": string(v(7)), "s3": string(v(9)), "s4": string(v(13))},
		"data":       map[string]string{"d0": base64.StdEncoding.EncodeToString(v(2)), "d1": base64.StdEncoding.EncodeToString(v(4)), "d2": base64.StdEncoding.EncodeToString(v(12))},
	}
	js, _ := json.Marshal(applied)
	if out, err := c.Kubectl(ctx, string(js), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v", err)
	} else {
		t.Logf("kubectl: %s", strings.TrimSpace(out))
	}
	got, err := secrets.Get(ctx, "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Annotations[corev1.LastAppliedConfigAnnotation], base64.StdEncoding.EncodeToString(v(2))) {
		t.Fatal("kubectl apply wrote no last-applied annotation with the values")
	}

	// A deployed Helm release whose manifest renders Secret rel-creds with
	// values (data and stringData) and a key the live Secret lacks: the agent
	// must decode the payload (a helm-source finding proves it) and keep none
	// of it.
	manifestSecret := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "rel-creds"},
		"data":       map[string]string{"user": base64.StdEncoding.EncodeToString(v(1)), "pass": base64.StdEncoding.EncodeToString(v(3))},
		"stringData": map[string]string{"token": string(v(6)), "pin": string(v(8)), "extra": string(v(10))},
	}
	my, err := yaml.Marshal(manifestSecret)
	if err != nil {
		t.Fatal(err)
	}
	manifest := "---\n# Source: rel/templates/secret.yaml\n" + string(my)
	rel := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.rel.v1",
			Labels: map[string]string{"owner": "helm", "status": "deployed", "name": "rel", "version": "1"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": helmReleasePayload(t, "rel", ns, 1, manifest)},
	}
	if _, err := secrets.Create(ctx, rel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, secretObj("rel-creds", map[string][]byte{
		"user": v(1), "pass": v(3), "token": v(6), "pin": v(8)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// An expected-keys annotation and a pod with an optional key the Secret
	// lacks: findings, and the pod-reference paths of the model.
	ek := secretObj("annotated", map[string][]byte{"URL": v(11)})
	ek.Annotations = map[string]string{"driftwatch.io/expected-keys": "URL,TOKEN"}
	if _, err := secrets.Create(ctx, ek, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Apply(t, ns, `
apiVersion: v1
kind: Pod
metadata: {name: consumer}
spec:
  containers:
  - name: app
    image: example/app:1
    envFrom: [{secretRef: {name: plain-b}}]
    env:
    - {name: A, valueFrom: {secretKeyRef: {name: plain-a, key: k00}}}
    - {name: MISSING, valueFrom: {secretKeyRef: {name: plain-a, key: not-there, optional: true}}}
`)

	bin, err := c.BuildAgent()
	if err != nil {
		t.Fatal(err)
	}
	pprofAddr := freeAddr(t)
	common := []string{"--kubeconfig", c.AgentKubeconfig, "--log-level", "debug", "--namespaces", ns, "--discovery-interval", "2s", "--ui.secret-page=true"}
	jsonAddr, textAddr := freeAddr(t), freeAddr(t)
	agentJSON := startProc(t, bin, jsonAddr, append(common, "--listen", jsonAddr, "--log-format", "json", "--debug-pprof", pprofAddr)...)
	agentText := startProc(t, bin, textAddr, append(common, "--listen", textAddr, "--log-format", "text")...)
	agentJSON.waitReady(t, wait)
	agentText.waitReady(t, wait)
	for _, ag := range []*proc{agentJSON, agentText} {
		ag.waitSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "rel-creds", "source": "helm", "key": "extra"}, wait)
		ag.waitSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "plain-a", "source": "pod", "key": "not-there"}, wait)
		ag.waitSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "annotated", "source": "annotation", "key": "TOKEN"}, wait)
	}

	// Value changes while the agents watch (history, flip detection and
	// their debug logs): k01 → rotated → back → rotated.
	for i, nv := range [][]byte{rotated, v(1), rotated} {
		s, err := secrets.Get(ctx, "plain-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["k01"] = nv
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: fmt.Sprintf("writer-%d", i%2)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second) // let both agents handle the updates

	out := newOutputs(t)
	for i, ag := range []*proc{agentJSON, agentText} {
		out.fetch(fmt.Sprintf("agent%d", i), ag.URL, agentPages)
		out.fetch(fmt.Sprintf("agent%d", i), ag.URL, uiPages(t, ag.URL))
	}
	out.fetch("pprof", "http://"+pprofAddr, pprofPages)

	// The one-shot subcommands, with the agent's restricted kubeconfig.
	kc := "--kubeconfig=" + c.AgentKubeconfig
	if code := out.runCmd("check json", bin, "check", kc, "--namespaces", ns, "--output", "json"); code != 1 {
		t.Errorf("check --output json: exit %d, want 1 (findings)", code)
	}
	if code := out.runCmd("check text", bin, "check", kc, "--namespaces", ns); code != 1 {
		t.Errorf("check: exit %d, want 1 (findings)", code)
	}
	for _, pair := range [][2]string{{"plain-a", "plain-b"}, {"plain-a", "plain-ws"}, {"applied", "plain-a"}, {"rel-creds", "sh.helm.release.v1.rel.v1"}} {
		for _, format := range []string{"text", "json"} {
			name := fmt.Sprintf("compare %s %s %s", pair[0], pair[1], format)
			if code := out.runCmd(name, bin, "compare", kc, "--output", format, ns+"/"+pair[0], ns+"/"+pair[1]); code != 1 {
				t.Errorf("%s: exit %d, want 1 (differences)", name, code)
			}
		}
	}
	if code := out.runCmd("compare error", bin, "compare", kc, ns+"/plain-a", ns+"/does-not-exist"); code != 2 {
		t.Errorf("compare with a missing Secret: exit %d, want 2", code)
	}
	if code := out.runCmd("compare usage", bin, "compare", kc, ns+"/plain-a"); code != 2 {
		t.Errorf("compare with one argument: exit %d, want 2", code)
	}

	// The agents' logs, complete (after a clean stop, so shutdown lines too).
	for i, ag := range []*proc{agentJSON, agentText} {
		if err := ag.stop(); err != nil {
			t.Errorf("agent %d exit: %v", i, err)
		}
		so, se := ag.output(t)
		out.add(fmt.Sprintf("agent%d stdout", i), so)
		out.add(fmt.Sprintf("agent%d log", i), se)
	}
	if len(out.data["agent0 log"]) == 0 || !bytes.Contains(out.data["agent0 log"], []byte(`"level":"DEBUG"`)) {
		t.Errorf("the JSON agent's log has no debug lines: is --log-level debug in effect?")
	}

	// The public vocabulary: the namespace's objects with every value
	// blanked (and the last-applied annotation, which holds values, dropped),
	// and the Helm manifest's key names.
	var vocab strings.Builder
	list, err := secrets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range list.Items {
		for k := range sec.Data {
			sec.Data[k] = nil
		}
		delete(sec.Annotations, corev1.LastAppliedConfigAnnotation)
		js, _ := json.Marshal(sec)
		vocab.Write(js)
		vocab.WriteByte('\n')
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ = json.Marshal(pods)
	vocab.Write(js)
	vocab.WriteString("\nuser pass token pin extra\n")

	// Sanity: the scanner sees a value when one is there.
	probe := NewScanner(vals, "")
	if hits, _ := probe.Scan("probe", append([]byte("x"), v(0)[3:3+Window]...)); len(hits) != 1 {
		t.Fatalf("the scanner misses a planted window (%d hits)", len(hits))
	}
	// ... and in the real outputs: the namespace name, which every finding
	// carries, is found in /metrics and in check's and compare's output.
	control := NewScanner([]Value{{Kind: "control", Bytes: []byte(ns)}}, "")
	for _, src := range []string{"agent0/metrics", "agent1/metrics", "agent0/", "agent0/api/v1/findings", "check json stdout", "check text stdout", "compare plain-a plain-b json stdout"} {
		if hits, _ := control.Scan(src, out.data[src]); len(hits) == 0 {
			t.Errorf("positive control: the namespace name is not found in %s: the collection or the scanner is broken", src)
		}
	}
	out.scan(vals, vocab.String())
}

// ---- the demo --------------------------------------------------------------

// demoValues collects every value the demo's simulated cluster holds, during
// its first seconds (its activities write new values), including those in
// its Helm release payloads, and a public vocabulary: every demo object with
// Secret values blanked (names, namespaces, key names, labels, ESO and Argo
// CD specs). The demo derives many values from names ("demo-" + key), so a
// window that is also a name cannot tell a leak from a label.
func demoValues(t *testing.T, runFor time.Duration) ([]Value, string) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := demo.New(log)
	ctx, cancel := context.WithTimeout(context.Background(), runFor)
	defer cancel()
	seen := map[string]bool{}
	var vals []Value
	var vocab strings.Builder
	addSecret := func(s *corev1.Secret) {
		blank := s.DeepCopy()
		for k, val := range s.Data {
			blank.Data[k] = nil
			if s.Type == "helm.sh/release.v1" && k == "release" {
				for _, mv := range helmManifestValues(t, val, &vocab) {
					if !seen[string(mv)] {
						seen[string(mv)] = true
						vals = append(vals, Value{Kind: "demo helm", Bytes: mv})
					}
				}
				continue
			}
			if !seen[string(val)] {
				seen[string(val)] = true
				vals = append(vals, Value{Kind: "demo", Bytes: append([]byte(nil), val...)})
			}
		}
		js, _ := json.Marshal(blank)
		vocab.Write(js)
		vocab.WriteByte('\n')
	}
	list, err := d.Core().CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		addSecret(&list.Items[i])
	}
	for _, kind := range []func() (any, error){
		func() (any, error) { return d.Core().CoreV1().Pods("").List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return d.Core().CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{}) },
	} {
		l, err := kind()
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(l)
		vocab.Write(js)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"},
		{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"},
		{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"},
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
	} {
		l, err := d.Dynamic().Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("demo %s: %v", gvr.Resource, err)
			continue
		}
		js, _ := json.Marshal(l)
		vocab.Write(js)
	}
	// The values its activities write.
	w, err := d.Core().CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go d.Run(ctx)
	for {
		select {
		case <-ctx.Done():
			return vals, vocab.String()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return vals, vocab.String()
			}
			if s, ok := ev.Object.(*corev1.Secret); ok {
				addSecret(s)
			}
		}
	}
}

// helmManifestValues decodes a release payload and returns the values of
// the Secrets its manifest renders; the manifest with values blanked goes to
// the vocabulary.
func helmManifestValues(t *testing.T, payload []byte, vocab *strings.Builder) [][]byte {
	gzb, err := base64.StdEncoding.DecodeString(string(payload))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gzb))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var rel struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal(body, &rel); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, doc := range strings.Split(rel.Manifest, "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil {
			continue
		}
		if obj["kind"] == "Secret" {
			if m, ok := obj["data"].(map[string]any); ok {
				for k, x := range m {
					if b, err := base64.StdEncoding.DecodeString(fmt.Sprint(x)); err == nil {
						out = append(out, b)
					}
					m[k] = ""
				}
			}
			if m, ok := obj["stringData"].(map[string]any); ok {
				for k, x := range m {
					out = append(out, []byte(fmt.Sprint(x)))
					m[k] = ""
				}
			}
		}
		js, _ := json.Marshal(obj)
		vocab.Write(js)
		vocab.WriteByte('\n')
	}
	return out
}

// `agent --demo` at debug level with pprof: nothing it emits may hold a demo
// value (or a piece of one that is not also a name).
func TestNoValueLeaksInDemo(t *testing.T) {
	if tools.E2EDisabled() {
		t.Skip("DRIFTWATCH_E2E=0")
	}
	c := cluster.Get(t)
	bin, err := c.BuildAgent()
	if err != nil {
		t.Fatal(err)
	}
	listen, pprofAddr := freeAddr(t), freeAddr(t)
	d := startProc(t, bin, listen, "--demo", "--listen", listen, "--log-level", "debug", "--debug-pprof", pprofAddr)
	base := d.URL
	d.waitReady(t, wait)
	// Values, vocabulary (and the time the demo's activities need to write
	// their new values: flips every 3 s, a rotation after 3 s).
	vals, vocab := demoValues(t, 10*time.Second)
	out := newOutputs(t)
	out.fetch("demo", base, agentPages)
	out.fetch("demo", base, uiPages(t, base))
	out.fetch("demo pprof", "http://"+pprofAddr, pprofPages)
	if err := d.stop(); err != nil {
		t.Errorf("demo exit: %v", err)
	}
	so, se := d.output(t)
	out.add("demo stdout", so)
	out.add("demo stderr", se)
	if !bytes.Contains(out.data["demo stderr"], []byte("level=DEBUG")) {
		t.Errorf("the demo's log has no debug lines")
	}
	if !bytes.Contains(out.data["demo/metrics"], []byte("driftwatch_secret_missing_key{")) {
		t.Fatalf("the demo's /metrics has no findings")
	}
	t.Logf("%d demo values", len(vals))
	if len(vals) < 20 {
		t.Fatalf("only %d demo values found: the collection is broken", len(vals))
	}
	out.scan(vals, vocab)
}
