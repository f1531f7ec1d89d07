package fullchain

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// shortFor is the `for` duration every shipped alert gets in this test. The
// shipped durations (5m to 30m) are too long for a test run: the rule file is
// copied to a temp dir with every `for:` replaced by this value. Everything
// else (expressions, labels, annotations) is used as shipped.
const shortFor = "5s"

var forLine = regexp.MustCompile(`(?m)^(\s*)for:\s*\S+\s*$`)

// shortenFor rewrites the shipped rule file into dir with every `for:` set to
// shortFor and returns the copy's path.
func shortenFor(t *testing.T, dir string) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "alerts", "driftwatch.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert:`).FindAll(b, -1)
	fors := forLine.FindAll(b, -1)
	if len(alerts) == 0 || len(fors) != len(alerts) {
		t.Fatalf("alerts/driftwatch.rules.yaml: %d alerts but %d `for:` lines; the rewrite expects one per alert", len(alerts), len(fors))
	}
	out := forLine.ReplaceAll(b, []byte("${1}for: "+shortFor))
	p := filepath.Join(dir, "driftwatch.rules.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ---- webhook receiver ------------------------------------------------------

// amMessage is Alertmanager's webhook payload (version 4).
type amMessage struct {
	Status       string            `json:"status"`
	Receiver     string            `json:"receiver"`
	GroupLabels  map[string]string `json:"groupLabels"`
	CommonLabels map[string]string `json:"commonLabels"`
	Alerts       []amAlert         `json:"alerts"`
}

type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

// webhook records every notification Alertmanager posts.
type webhook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	msgs []amMessage
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var m amMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("webhook: undecodable notification: %v", err)
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.msgs = append(w.msgs, m)
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// count is the number of notifications received so far.
func (w *webhook) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// find returns the first alert in a notification received at index from or
// later that matches.
func (w *webhook) find(from int, match func(amMessage, amAlert) bool) (amMessage, amAlert, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs[min(from, len(w.msgs)):] {
		for _, a := range m.Alerts {
			if match(m, a) {
				return m, a, true
			}
		}
	}
	return amMessage{}, amAlert{}, false
}

func (w *webhook) dump() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for i, m := range w.msgs {
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

type promStack struct {
	PromURL, AMURL string
	prom, am       *proc
}

// startPromStack starts Alertmanager (routing everything to hook, resolved
// notifications included, one group per alertname/namespace/secret) and
// Prometheus (scraping the agent at agentAddr as job "driftwatch" every second,
// evaluating the shipped rules with short `for` every second, sending to that
// Alertmanager).
func startPromStack(t *testing.T, agentAddr string, hook *webhook) *promStack {
	t.Helper()
	promBin, err := cluster.Tool("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	amBin, err := cluster.Tool("prometheus-alertmanager")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ports := freePorts(t, 2)
	s := &promStack{
		PromURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		AMURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
	}

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
`, hook.srv.URL))
	for _, d := range []string{"am-data", "prom-data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.am = startProc(t, dir, "alertmanager", amBin,
		"--config.file="+amCfg,
		"--storage.path="+filepath.Join(dir, "am-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[1]),
		// No HA cluster: this network is loopback only.
		"--cluster.listen-address=",
		"--log.level=debug",
	)
	s.am.waitHTTP(t, s.AMURL+"/-/ready", 2*time.Minute)

	rules := shortenFor(t, dir)
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
      - targets: ['%s']
`, rules, ports[1], agentAddr))
	s.prom = startProc(t, dir, "prometheus", promBin,
		"--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]),
		"--rules.alert.resend-delay=1s",
		"--log.level=debug",
	)
	s.prom.waitHTTP(t, s.PromURL+"/-/ready", 2*time.Minute)
	s.checkRules(t, rules)
	return s
}

// checkRules verifies that Prometheus loaded every alert of the rule file with
// the short `for` (Prometheus 2.x keeps running with no rules when the file
// does not load).
func (s *promStack) checkRules(t *testing.T, rulesFile string) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	want := len(regexp.MustCompile(`(?m)^\s*- alert:`).FindAll(b, -1))
	code, body, err := httpGet(s.PromURL + "/api/v1/rules?type=alert")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/v1/rules: %d %v", code, err)
	}
	var resp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name     string  `json:"name"`
					Duration float64 `json:"duration"`
					Health   string  `json:"health"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			got++
			if r.Duration != 5 {
				t.Errorf("Prometheus loaded alert %s with for %gs, want %s", r.Name, r.Duration, shortFor)
			}
			if r.Health == "err" {
				t.Errorf("Prometheus reports alert %s unhealthy", r.Name)
			}
		}
	}
	if got != want {
		t.Fatalf("Prometheus loaded %d alerting rules, the rule file has %d; log:\n%s", got, want, tail(s.prom.logPath, 40))
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// promSample is one element of an instant query's result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query and returns its samples (a scalar or string
// result is one sample without labels).
func (s *promStack) query(q string) ([]promSample, error) {
	code, body, err := httpGet(s.PromURL + "/api/v1/query?query=" + url.QueryEscape(q))
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
		var out []promSample
		if err := json.Unmarshal(data.Result, &out); err != nil {
			return nil, err
		}
		return out, nil
	default:
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		return []promSample{{Value: v}}, nil
	}
}

func (s *promStack) alive(t *testing.T) {
	t.Helper()
	for _, p := range []*proc{s.prom, s.am} {
		if p.exited() {
			t.Fatalf("%s exited (%v); log:\n%s", p.name, p.err, tail(p.logPath, 60))
		}
	}
}
