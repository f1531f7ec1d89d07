package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/demo"
)

// syncBuffer is a log sink the agent's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type listeners struct {
	main, health, pprof string
	log                 *syncBuffer
}

// startWeb runs the agent on the demo with the web configuration file
// (none when "") and every listener on, until the test ends.
func startWeb(t *testing.T, webConfig string) listeners {
	t.Helper()
	buf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(buf, nil))
	d := demo.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	l := listeners{log: buf}
	var mu sync.Mutex
	ready := make(chan struct{})
	cfg := agent.Config{Listen: "127.0.0.1:0", HealthListen: "127.0.0.1:0", PprofListen: "127.0.0.1:0", Logger: log,
		DiscoveryInterval: time.Second, Web: agent.WebConfig{ConfigFile: webConfig, UI: true},
		OnListenSide: func(server, addr string) {
			mu.Lock()
			defer mu.Unlock()
			switch server {
			case "health":
				l.health = addr
			case "pprof":
				l.pprof = addr
			}
		},
		OnListen: func(addr string) { l.main = addr; close(ready) }}
	a := agent.New(d.Clients(), cfg)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		closeIdle()
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not listen")
	}
	mu.Lock()
	defer mu.Unlock()
	if l.health == "" || l.pprof == "" {
		t.Fatalf("listeners %+v", l)
	}
	return l
}

func getAuth(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With basic auth on every endpoint (--web.config.file), the probe listener
// (--health-probe-bind-address) answers /healthz and /readyz without
// credentials, and nothing else; the main listener keeps them, behind the
// credentials; --debug-pprof is served behind the same configuration.
func TestProbeListenerAndPprofWithBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, "basic_auth_users:\n  prom: %q\n", hash), 0o600); err != nil {
		t.Fatal(err)
	}
	l := startWeb(t, cfgFile)
	main, health, pprof := "http://"+l.main, "http://"+l.health, "http://"+l.pprof

	// Ready on the probe listener, without credentials, once the informers
	// have synced; the same answer as the main listener's with credentials.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := getAuth(t, health+"/readyz", "", "")
		if code == http.StatusOK && body == "ok\n" {
			break
		}
		if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "waiting for informers to sync") {
			t.Fatalf("probe listener /readyz: %d %q", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatal("the probe listener's /readyz never became ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := getAuth(t, main+"/readyz", "prom", "s3cret-pw"); code != http.StatusOK {
		t.Errorf("main /readyz with credentials: %d", code)
	}
	if code, _ := getAuth(t, health+"/healthz", "", ""); code != http.StatusOK {
		t.Errorf("probe listener /healthz: %d", code)
	}
	// Nothing but the probes there: no data without credentials.
	for _, p := range []string{"/metrics", "/", "/api/v1/findings", "/secret/shop/payments-api", "/debug/pprof/"} {
		if code, body := getAuth(t, health+p, "", ""); code != http.StatusNotFound {
			t.Errorf("probe listener %s: %d %.80q, want 404", p, code, body)
		}
	}
	// The main listener and pprof ask for the credentials.
	for _, u := range []string{main + "/readyz", main + "/healthz", main + "/metrics", pprof + "/debug/pprof/", pprof + "/debug/pprof/cmdline"} {
		if code, _ := getAuth(t, u, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", u, code)
		}
		if code, _ := getAuth(t, u, "prom", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong password: %d, want 401", u, code)
		}
	}
	if code, body := getAuth(t, pprof+"/debug/pprof/", "prom", "s3cret-pw"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof with credentials: %d", code)
	}
	log := l.log.String()
	for _, want := range []string{"serving /secret/NAMESPACE/NAME", "auth=\"as --web.config.file says\"",
		"serving /healthz and /readyz alone, without authentication", "pprof listening", "web_config=true"} {
		if !strings.Contains(log, want) {
			t.Errorf("the start-up log lacks %q:\n%s", want, log)
		}
	}
}

// Without a web configuration the start-up log says the Secret page is open
// to anyone who reaches the listener.
func TestSecretPageLoggedAsUnauthenticated(t *testing.T) {
	l := startWeb(t, "")
	if log := l.log.String(); !strings.Contains(log, "serving /secret/NAMESPACE/NAME") ||
		!strings.Contains(log, "auth=\"none: anyone who reaches "+l.main+" can read it\"") {
		t.Errorf("the start-up log does not say /secret/ is unauthenticated:\n%s", log)
	}
}

// Before the informers sync, the probe listener's /readyz says 503 (a new
// pod is not Ready before its caches sync); /healthz is 200 at once.
func TestProbeHandlerNotReadyBeforeSync(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := agent.New(demo.New(log).Clients(), agent.Config{Logger: log})
	h := a.ProbeHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.HasPrefix(rec.Body.String(), "waiting for informers to sync") {
		t.Errorf("/readyz before sync: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d", rec.Code)
	}
}
