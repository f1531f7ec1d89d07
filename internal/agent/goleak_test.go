package agent_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/demo"
)

// Starting the agent on the demo's clients, waiting until it is ready and
// serving findings, then cancelling it must leave no goroutine behind: every
// informer, the discovery loop, the readiness logger, the HTTP servers (main,
// probes, pprof) and the demo's own activity stop with the context.
func TestAgentStartStopLeaksNoGoroutines(t *testing.T) {
	// No goroutine is exempt: not klog's flush daemon (the agent routes
	// client-go's klog output to slog and never starts it), not the fake
	// clientsets' watchers (they stop with the informers). Goroutines that
	// existed before this test (other tests of the package, the testing
	// framework) are not the agent's and are not counted.
	before := goleak.IgnoreCurrent()

	for round := 0; round < 2; round++ {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		d := demo.New(log)
		ctx, cancel := context.WithCancel(context.Background())
		addrc := make(chan string, 1)
		cfg := agent.Config{Listen: "127.0.0.1:0", Logger: log, DiscoveryInterval: 200 * time.Millisecond,
			HealthListen: "127.0.0.1:0", PprofListen: "127.0.0.1:0", // their servers stop too
			OnListen: func(a string) { addrc <- a }}
		cfg.Findings.Inventory = true
		a := agent.New(d.Clients(), cfg)
		done := make(chan error, 1)
		demoDone := make(chan struct{})
		go func() { done <- a.Run(ctx, cfg) }()
		go func() { d.Run(ctx); close(demoDone) }()
		var base string
		select {
		case addr := <-addrc:
			base = "http://" + addr
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatal("agent did not listen")
		}
		waitReady(t, base)
		// A scrape runs every collector; a discovery tick or two runs the
		// optional-API loop.
		if code, body := get(t, base+"/metrics"); code != 200 || len(series(t, body)["driftwatch_secret_missing_key"]) == 0 {
			cancel()
			t.Fatalf("round %d: /metrics answered %d without findings", round, code)
		}
		time.Sleep(500 * time.Millisecond)
		// The test's own keep-alive connections to the agent are the
		// client's goroutines, not the agent's: close them first.
		closeIdle()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: Run: %v", round, err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: Run did not return after cancel", round)
		}
		<-demoDone
	}
	closeIdle()
	goleak.VerifyNone(t, before)
}

func closeIdle() {
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}
