// Package promstack runs the real alerting chain next to an e2e stack:
// Prometheus (scraping a driftwatch agent and evaluating the shipped
// alerts/driftwatch.rules.yaml with every `for:` shortened and
// `keep_firing_for:` set per stack) and Alertmanager
// (posting every notification to a webhook served by the test). Both run as
// processes of the cluster (cluster.StartProcess), on 127.0.0.1, with their
// files inside the stack's folder.
//
//	hook := promstack.NewWebhook(t)
//	ps := promstack.Start(t, c, agent.Addr, hook)
//	ps.WaitHook(t, hook, 0, time.Minute, "the page", func(m promstack.Message, a promstack.Alert) bool { ... })
package promstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// ShortFor is the `for` duration every shipped alert but DriftwatchDown
// (DownFor) gets. The shipped durations (1m to 1h) are too long for a test
// run: the rule file is copied with every `for:` replaced by this value.
// Everything else (expressions, labels, annotations) is used as shipped.
const ShortFor = "5s"

const shortForSeconds = 5

// DownFor is DriftwatchDown's `for` in the stack (3m shipped), the one
// exception to ShortFor. DriftwatchDown is the only alert that judges failed
// scrapes (up == 0) and the absence of any scrape, and two things the stack
// cannot shrink with the rest are on the scale of a 5 s `for`:
//
//   - Prometheus applies its targets on a 5 s tick, so it scrapes first
//     about 5 s after it starts, and its rules evaluate before that (at idle
//     here: first evaluation 3.2 s, first scrape 5.6 s after the start):
//     absent_over_time(up[7m]) holds in between, and with `for: 5s` it
//     fires once that gap exceeds 5 s;
//   - the stack's scrape_timeout is 1 s (10 s shipped) and a scrape runs
//     every detector: on a loaded machine a young target's first scrapes can
//     time out. Before the shipped rule judged only targets whose series is
//     7 minutes old (`up offset 7m`), avg_over_time(up[10m]) over a few
//     samples stayed under half for 2k-2 s after k initial failures, so 4 in
//     a row fired with `for: 5s` (and, shipped, 4 failed first scrapes of a
//     new pod paged at 3m: a rollout's slow start). The gate removes that
//     branch for young targets; promstack_test.go holds both.
//
// With 30 s the absent branch needs a Prometheus that scrapes nothing for
// 30 s; an agent down from the start pages when its series is 7 minutes old
// (the shipped rule: 10 minutes after its first scrape). No test waits for
// DriftwatchDown to fire; the other agent alerts (DriftwatchCrashLooping,
// DriftwatchNotEvaluating) judge metric values, so they keep ShortFor.
const DownFor = "30s"

const downForSeconds = 30

// downAlert is the alert DownFor applies to.
const downAlert = "DriftwatchDown"

var (
	forLine   = regexp.MustCompile(`(?m)^(\s*)for:\s*\S+\s*$`)
	keepLine  = regexp.MustCompile(`(?m)^(\s*)keep_firing_for:\s*\S+\s*$`)
	alertLine = regexp.MustCompile(`(?m)^\s*- alert:`)
	downLine  = regexp.MustCompile(`(?m)^\s*- alert:\s*` + downAlert + `\s*$`)
)

// ruleFor is the `for` the stack gives alert.
func ruleFor(alert string) (string, float64) {
	if alert == downAlert {
		return DownFor, downForSeconds
	}
	return ShortFor, shortForSeconds
}

// Options adapt one stack's copy of the shipped rules.
type Options struct {
	// KeepFiringFor replaces every shipped `keep_firing_for:` (15m). Default
	// "0s": a fixed finding's alert resolves at the next evaluation, as the
	// tests that wait for a resolution need. A test that restarts the agent
	// while a page fires sets one longer than the restart, as the shipped
	// value is.
	KeepFiringFor string
}

func (o Options) keep() string {
	if o.KeepFiringFor == "" {
		return "0s"
	}
	return o.KeepFiringFor
}

// ShortenFor rewrites the shipped rule file into dir with every `for:` set to
// ShortFor (DriftwatchDown's to DownFor) and every `keep_firing_for:` to keep,
// and returns the copy's path.
func ShortenFor(t testing.TB, dir, keep string) string {
	t.Helper()
	return shortenFor(t, dir, keep, DownFor)
}

// shortenFor is ShortenFor with DriftwatchDown's `for` set to downFor.
func shortenFor(t testing.TB, dir, keep, downFor string) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "alerts", "driftwatch.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := alertLine.FindAll(b, -1)
	fors := forLine.FindAll(b, -1)
	if len(alerts) == 0 || len(fors) != len(alerts) {
		t.Fatalf("alerts/driftwatch.rules.yaml: %d alerts but %d `for:` lines; the rewrite expects one per alert", len(alerts), len(fors))
	}
	if len(keepLine.FindAll(b, -1)) == 0 {
		t.Fatal("alerts/driftwatch.rules.yaml: no `keep_firing_for:` line; the rewrite expects the finding alerts to have one")
	}
	out := forLine.ReplaceAll(b, []byte("${1}for: "+ShortFor))
	out = keepLine.ReplaceAll(out, []byte("${1}keep_firing_for: "+keep))
	// DriftwatchDown's own `for:` is the first after its `- alert:` line
	// (one per alert, checked above).
	down := downLine.FindAllIndex(out, -1)
	if len(down) != 1 {
		t.Fatalf("alerts/driftwatch.rules.yaml: %d `- alert: %s` lines, want 1", len(down), downAlert)
	}
	at := down[0][1]
	f := forLine.FindSubmatchIndex(out[at:])
	if f == nil {
		t.Fatalf("alerts/driftwatch.rules.yaml: no `for:` after `- alert: %s`", downAlert)
	}
	indent := string(out[at+f[2] : at+f[3]])
	out = append(append(append([]byte{}, out[:at+f[0]]...), indent+"for: "+downFor...), out[at+f[1]:]...)
	p := filepath.Join(dir, "driftwatch.rules.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ---- webhook receiver ------------------------------------------------------

// Message is Alertmanager's webhook payload (version 4).
type Message struct {
	Status       string            `json:"status"`
	Receiver     string            `json:"receiver"`
	GroupLabels  map[string]string `json:"groupLabels"`
	CommonLabels map[string]string `json:"commonLabels"`
	Alerts       []Alert           `json:"alerts"`
}

// Alert is one alert of a notification.
type Alert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

// Webhook records every notification Alertmanager posts.
type Webhook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	msgs []Message
	at   []time.Time
}

// NewWebhook starts the receiver on 127.0.0.1; it stops when the test ends.
func NewWebhook(t testing.TB) *Webhook {
	w := &Webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var m Message
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("webhook: undecodable notification: %v", err)
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.msgs = append(w.msgs, m)
		w.at = append(w.at, time.Now())
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// URL is the receiver's base URL (Alertmanager posts to URL/alerts).
func (w *Webhook) URL() string { return w.srv.URL }

// Count is the number of notifications received so far.
func (w *Webhook) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// Messages returns the notifications received at index from or later, with
// the time each arrived.
func (w *Webhook) Messages(from int) ([]Message, []time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	from = min(from, len(w.msgs))
	return append([]Message(nil), w.msgs[from:]...), append([]time.Time(nil), w.at[from:]...)
}

// Find returns the first alert in a notification received at index from or
// later that matches.
func (w *Webhook) Find(from int, match func(Message, Alert) bool) (Message, Alert, bool) {
	msgs, _ := w.Messages(from)
	for _, m := range msgs {
		for _, a := range m.Alerts {
			if match(m, a) {
				return m, a, true
			}
		}
	}
	return Message{}, Alert{}, false
}

// Dump lists every notification received, one line per alert.
func (w *Webhook) Dump() string {
	msgs, _ := w.Messages(0)
	var b strings.Builder
	for i, m := range msgs {
		for _, a := range m.Alerts {
			fmt.Fprintf(&b, "  #%d %s (group %s): %s %v\n", i, m.Status, m.Receiver, a.Status, a.Labels)
		}
	}
	if b.Len() == 0 {
		return "  (none)"
	}
	return b.String()
}

// ---- Prometheus and Alertmanager ---------------------------------------------

// Stack is a running Prometheus and Alertmanager.
type Stack struct {
	PromURL, AMURL string
	prom, am       *cluster.Process
	// started is when Prometheus was started (zero if this package did not
	// start it): ScrapeHistory queries from there.
	started time.Time
}

// Start starts Alertmanager (routing everything to hook, resolved
// notifications included, one group per alertname/namespace/secret) and
// Prometheus (scraping the agent at agentAddr as job "driftwatch" every
// second, evaluating the shipped rules with ShortFor every second, sending to
// that Alertmanager). Both stop when the test ends.
func Start(t testing.TB, c *cluster.Cluster, agentAddr string, hook *Webhook) *Stack {
	t.Helper()
	return StartTargets(t, c, []Target{{Addr: agentAddr}}, hook)
}

// Target is one agent Prometheus scrapes, with target labels (e.g. a cluster
// label, as a fleet's Prometheus external label would add).
type Target struct {
	Addr   string
	Labels map[string]string
}

// StartTargets is Start with several agents in the one job "driftwatch", each
// with its own target labels.
func StartTargets(t testing.TB, c *cluster.Cluster, targets []Target, hook *Webhook) *Stack {
	t.Helper()
	return StartWith(t, c, targets, hook, Options{})
}

// StartWith is StartTargets with the rule copy adapted by opts.
func StartWith(t testing.TB, c *cluster.Cluster, targets []Target, hook *Webhook, opts Options) *Stack {
	t.Helper()
	promBin, err := tools.Tool("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	dir := c.TempDir(t, "promstack")
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{
		PromURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		AMURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
	}

	s.am = startAlertmanager(t, c, dir, ports[1], hook)
	if err := os.MkdirAll(filepath.Join(dir, "prom-data"), 0o755); err != nil {
		t.Fatal(err)
	}

	rules := ShortenFor(t, dir, opts.keep())
	promCfg := filepath.Join(dir, "prometheus.yml")
	write(t, promCfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %s
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:%d']
scrape_configs:
  - job_name: driftwatch
    static_configs:
%s`, rules, ports[1], staticConfigs(targets)))
	s.started = time.Now()
	s.prom = c.StartProcess(t, "prometheus", promBin, nil,
		"--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]),
		"--rules.alert.resend-delay=1s",
		"--log.level=debug",
	)
	s.prom.WaitHTTP(t, s.PromURL+"/-/ready", 2*time.Minute)
	s.checkRules(t, rules, opts.keep())
	return s
}

// StartAlertmanager starts an Alertmanager alone on 127.0.0.1 (routing as
// Start's does) for a Prometheus the test does not start itself, e.g. one
// prometheus-operator runs. It returns the Stack to wait on (Query needs
// WithPrometheus) and Alertmanager's host:port.
func StartAlertmanager(t testing.TB, c *cluster.Cluster, hook *Webhook) (*Stack, string) {
	t.Helper()
	dir := c.TempDir(t, "alertmanager")
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{AMURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	s.am = startAlertmanager(t, c, dir, ports[0], hook)
	return s, fmt.Sprintf("127.0.0.1:%d", ports[0])
}

// WithPrometheus returns a copy of s that queries the Prometheus at promURL
// (one this package did not start: Alive checks Alertmanager only).
func (s *Stack) WithPrometheus(promURL string) *Stack {
	c := *s
	c.PromURL = promURL
	c.prom = nil
	return &c
}

func startAlertmanager(t testing.TB, c *cluster.Cluster, dir string, port int, hook *Webhook) *cluster.Process {
	t.Helper()
	amBin, err := tools.Tool("prometheus-alertmanager")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	amCfg := filepath.Join(dir, "alertmanager.yml")
	write(t, amCfg, fmt.Sprintf(`global:
  resolve_timeout: 5s
route:
  receiver: webhook
  group_by: [alertname, namespace, secret]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %s/alerts
        send_resolved: true
`, hook.URL()))
	if err := os.MkdirAll(filepath.Join(dir, "am-data"), 0o755); err != nil {
		t.Fatal(err)
	}
	am := c.StartProcess(t, "alertmanager", amBin, nil,
		"--config.file="+amCfg,
		"--storage.path="+filepath.Join(dir, "am-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		// No HA cluster: this network is loopback only.
		"--cluster.listen-address=",
		"--log.level=debug",
	)
	am.WaitHTTP(t, url+"/-/ready", 2*time.Minute)
	return am
}

// staticConfigs renders targets as static_configs entries (indented for
// Start's scrape config).
func staticConfigs(targets []Target) string {
	var b strings.Builder
	for _, tg := range targets {
		fmt.Fprintf(&b, "      - targets: ['%s']\n", tg.Addr)
		if len(tg.Labels) > 0 {
			b.WriteString("        labels:\n")
			keys := make([]string, 0, len(tg.Labels))
			for k := range tg.Labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "          %s: %q\n", k, tg.Labels[k])
			}
		}
	}
	return b.String()
}

// checkRules verifies that Prometheus loaded every alert of the rule file with
// the short `for` (Prometheus 2.x keeps running with no rules when the file
// does not load).
func (s *Stack) checkRules(t testing.TB, rulesFile, keep string) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	want := len(alertLine.FindAll(b, -1))
	code, body, err := HTTPGet(s.PromURL + "/api/v1/rules?type=alert")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/v1/rules: %d %v", code, err)
	}
	var resp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name          string   `json:"name"`
					Duration      float64  `json:"duration"`
					KeepFiringFor *float64 `json:"keepFiringFor"`
					Health        string   `json:"health"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	keepD, err := time.ParseDuration(keep)
	if err != nil {
		t.Fatalf("keep_firing_for %q: %v", keep, err)
	}
	got, kept := 0, 0
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			got++
			if want, secs := ruleFor(r.Name); r.Duration != secs {
				t.Errorf("Prometheus loaded alert %s with for %gs, want %s", r.Name, r.Duration, want)
			}
			if k := r.KeepFiringFor; k != nil && *k != 0 {
				kept++
				if *k != keepD.Seconds() {
					t.Errorf("Prometheus loaded alert %s with keep_firing_for %gs, want %s", r.Name, *k, keep)
				}
			}
			if r.Health == "err" {
				t.Errorf("Prometheus reports alert %s unhealthy", r.Name)
			}
		}
	}
	if got != want {
		t.Fatalf("Prometheus loaded %d alerting rules, the rule file has %d; log:\n%s", got, want, s.prom.Tail(40))
	}
	if keepD > 0 && kept == 0 {
		t.Errorf("Prometheus reports no alert with keep_firing_for %s", keep)
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Sample is one element of an instant query's result.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Query runs an instant query and returns its samples (a scalar or string
// result is one sample without labels).
func (s *Stack) Query(q string) ([]Sample, error) {
	code, body, err := HTTPGet(s.PromURL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	var resp struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		return nil, fmt.Errorf("HTTP %d: undecodable answer %q: %w", code, body, err)
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("HTTP %d: %s: %s", code, resp.ErrorType, resp.Error)
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(resp.Data, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector", "matrix":
		var out []Sample
		if err := json.Unmarshal(data.Result, &out); err != nil {
			return nil, err
		}
		return out, nil
	default:
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		return []Sample{{Value: v}}, nil
	}
}

// Alive fails the test if Prometheus or Alertmanager has exited.
func (s *Stack) Alive(t testing.TB) {
	t.Helper()
	for _, p := range []*cluster.Process{s.prom, s.am} {
		if p == nil {
			continue
		}
		if gone, err := p.Exited(); gone {
			t.Fatalf("%s exited (%v); log:\n%s", p.Name, err, p.Tail(60))
		}
	}
}

// WaitHook waits for a notification received at index from or later that
// matches, failing the test after timeout.
func (s *Stack) WaitHook(t testing.TB, hook *Webhook, from int, timeout time.Duration, what string, match func(Message, Alert) bool) (Message, Alert) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if m, a, ok := hook.Find(from, match); ok {
			return m, a
		}
		s.Alive(t)
		if time.Now().After(deadline) {
			alerts, _ := s.Query(`ALERTS`)
			t.Fatalf("%s did not arrive within %s; notifications so far:\n%s\nPrometheus ALERTS: %v", what, timeout, hook.Dump(), alerts)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

// HTTPGet fetches url and returns status code and body.
func HTTPGet(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
