package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Agent is a driftwatch agent process run by a test against the stack with
// the restricted kubeconfig.
type Agent struct {
	// Addr is the agent's --listen address (127.0.0.1:PORT); URL is http://Addr.
	Addr string
	URL  string
	// LogPath is the agent's combined stdout/stderr.
	LogPath string
	// Args are the agent's command-line arguments.
	Args []string

	proc *proc.Process
}

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// BuildAgent builds ./cmd/agent once per test process (into Dir), or takes
// the one test/run.sh built for the whole suite ($DRIFTWATCH_AGENT_BIN,
// tools.BuildAgent), and returns the binary's path.
func (c *Cluster) BuildAgent() (string, error) {
	agentOnce.Do(func() {
		dir := filepath.Join(c.Dir, "agent-bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			agentErr = err
			return
		}
		t0 := time.Now()
		agentBin, agentErr = tools.BuildAgent(filepath.Join(dir, "driftwatch"))
		switch {
		case agentErr != nil:
		case tools.PrebuiltAgent() != "":
			c.logf("the agent test/run.sh built: %s", agentBin)
		default:
			c.logf("built the agent in %s", time.Since(t0).Round(time.Millisecond))
		}
	})
	return agentBin, agentErr
}

// StartAgent builds the agent if needed and starts it with
//
//	--kubeconfig <AgentKubeconfig> --listen 127.0.0.1:PORT --log-format json --log-level debug
//
// then, with Flux in the stack, Flux().AgentArgs, followed by extraArgs (a later
// flag wins). The agent is stopped when the test ends, and its
// log is written to the test log if the test failed.
func (c *Cluster) StartAgent(t testing.TB, extraArgs ...string) *Agent {
	t.Helper()
	bin, err := c.BuildAgent()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := proc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := append([]string{
		"--kubeconfig", c.AgentKubeconfig,
		"--listen", addr,
		"--log-format", "json",
		"--log-level", "debug",
	}, append(c.flux.AgentArgs(), extraArgs...)...)
	c.mu.Lock()
	n := len(c.agents)
	c.mu.Unlock()
	a := &Agent{
		Addr: addr, URL: "http://" + addr, Args: args,
		LogPath: filepath.Join(c.LogDir, fmt.Sprintf("agent-%d.log", n)),
	}
	a.proc = &proc.Process{Name: "driftwatch agent", Path: bin, Args: args, LogPath: a.LogPath}
	c.mu.Lock()
	c.agents = append(c.agents, a.proc)
	c.mu.Unlock()
	if err := a.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.Stop()
		if t.Failed() {
			t.Logf("----- driftwatch agent log (%s), last 300 lines -----\n%s", a.LogPath, proc.TailFile(a.LogPath, 300))
		}
	})
	return a
}

// Stop stops the agent (SIGTERM, SIGKILL after 10 s) and returns its exit
// error (nil if it exited with status 0).
func (a *Agent) Stop() error {
	a.proc.Stop(10 * time.Second)
	_, err := a.proc.Exited()
	return err
}

// Start starts a stopped agent again with the same arguments and address.
func (a *Agent) Start() error { return a.proc.Start() }

// Exited reports whether the agent has exited, and its exit error.
func (a *Agent) Exited() (bool, error) { return a.proc.Exited() }

// PID is the agent's process ID (0 when not running).
func (a *Agent) PID() int { return a.proc.PID() }

// Logs returns the agent's log so far.
func (a *Agent) Logs() string {
	b, err := os.ReadFile(a.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", a.LogPath, err)
	}
	return string(b)
}

// Scrape fetches and parses the agent's /metrics.
func (a *Agent) Scrape() ([]scrape.Series, error) { return scrape.URL(a.URL + "/metrics") }

// Get fetches a path of the agent's HTTP server and returns status and body.
func (a *Agent) Get(path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// poll calls f every 200 ms until it returns true or timeout passes; it
// fails the test early if the agent exits.
func (a *Agent) poll(t testing.TB, timeout time.Duration, f func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if f() {
			return true
		}
		if gone, err := a.proc.Exited(); gone {
			t.Fatalf("the agent exited (%v); last log lines:\n%s", err, proc.TailFile(a.LogPath, 50))
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitReady waits until GET /readyz answers 200.
func (a *Agent) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	var last string
	if !a.poll(t, timeout, func() bool {
		code, body, err := a.Get("/readyz")
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		return code == http.StatusOK
	}) {
		t.Fatalf("agent /readyz not 200 within %s; last answer: %s", timeout, last)
	}
}

// WaitForSeries waits until a scrape has a series named name carrying every
// label in labels (others are ignored) and returns it (the first, if several
// match).
func (a *Agent) WaitForSeries(t testing.TB, name string, labels map[string]string, timeout time.Duration) scrape.Series {
	t.Helper()
	var found []scrape.Series
	var last []scrape.Series
	var lastErr error
	if !a.poll(t, timeout, func() bool {
		last, lastErr = a.Scrape()
		found = scrape.Find(last, name, labels)
		return lastErr == nil && len(found) > 0
	}) {
		t.Fatalf("no series %s matching %v within %s (last scrape error: %v); series named %s:\n%s",
			name, labels, timeout, lastErr, name, scrape.Format(scrape.Find(last, name, nil)))
	}
	return found[0]
}

// WaitForNoSeries waits until a successful scrape has no series named name
// carrying every label in labels.
func (a *Agent) WaitForNoSeries(t testing.TB, name string, labels map[string]string, timeout time.Duration) {
	t.Helper()
	var found []scrape.Series
	var lastErr error
	if !a.poll(t, timeout, func() bool {
		var all []scrape.Series
		all, lastErr = a.Scrape()
		found = scrape.Find(all, name, labels)
		return lastErr == nil && len(found) == 0
	}) {
		t.Fatalf("series %s matching %v still present after %s (last scrape error: %v):\n%s",
			name, labels, timeout, lastErr, scrape.Format(found))
	}
}
