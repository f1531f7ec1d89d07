package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// The interval-scrape phase: what a scrape costs when it comes as
// Prometheus's do, every --interval-scrape, under steady Secret updates
// (--load-rate): driftwatch with --evaluate-ahead and without,
// one after the other on the same apiserver. Without it, every such scrape
// evaluates again every namespace written to since the previous one; with it,
// the agent has evaluated them shortly before the scrape was due.

type intervalRun struct {
	ahead    bool
	scrapes  []time.Duration // after the first two (the agent learns the interval from them)
	achieved float64
	// cpu: the agent's CPU seconds over the timed scrapes and what ran
	// between them (events, evaluations ahead), per second.
	cpu    float64
	aheadN float64 // driftwatch_evaluations_total{trigger="ahead"} at the end
	err    error
}

type intervalResult struct {
	every time.Duration
	rate  int
	runs  []intervalRun
	load  string
}

func intervalPhase(ctx context.Context, c config, cl *cluster.Cluster, w *world, agent rowSpec, cs kubernetesClient, logf func(string, ...any)) intervalResult {
	res := intervalResult{every: c.intervalScrape, rate: c.loadRate, load: loadAvg()}
	for _, ahead := range []bool{true, false} {
		if ctx.Err() != nil {
			break
		}
		logf("interval scrapes every %s, --evaluate-ahead=%v", c.intervalScrape, ahead)
		res.runs = append(res.runs, intervalProcess(ctx, c, cl, w, agent, ahead, cs))
		time.Sleep(time.Second)
	}
	return res
}

func intervalProcess(ctx context.Context, c config, cl *cluster.Cluster, w *world, r rowSpec, ahead bool, cs kubernetesClient) (run intervalRun) {
	run.ahead = ahead
	addr, err := freeAddr()
	if err != nil {
		run.err = err
		return run
	}
	logPath := filepath.Join(cl.LogDir, fmt.Sprintf("bench-interval-ahead-%v.log", ahead))
	args := append(slices.Clone(r.args), "--listen", addr, fmt.Sprintf("--evaluate-ahead=%v", ahead))
	var pprofURL string
	if c.pprofDir != "" {
		pa, err := freeAddr()
		if err != nil {
			run.err = err
			return run
		}
		args = append(args, "--debug-pprof", pa)
		pprofURL = "http://" + pa
	}
	ch, err := startChild("interval", r.bin, args, r.env, logPath)
	if err != nil {
		run.err = err
		return run
	}
	defer ch.stop(10 * time.Second)
	url := "http://" + addr
	for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if ch.exited() {
			run.err = fmt.Errorf("exited before sync; log %s:\n%s", logPath, tail(logPath))
			return run
		}
		if code, _, _, err := get(url + "/readyz"); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			run.err = fmt.Errorf("not ready in time")
			return run
		}
	}
	time.Sleep(c.latencySettle)
	l := &loader{cs: cs, secrets: w.secrets, rate: c.loadRate, workers: max(16, c.loadRate/20)}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { l.run(lctx); close(done) }()
	defer func() { cancel(); <-done }()
	s0, t0 := l.sent.Load(), time.Now()
	profDone := make(chan error, 1)
	if pprofURL != "" {
		// The agent's CPU over the timed scrapes (and what runs between them).
		secs := int((time.Duration(c.intervalScrapes+2) * c.intervalScrape).Seconds())
		go func() {
			profDone <- fetchProfile(pprofURL, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), c.pprofDir, fmt.Sprintf("interval-ahead-%v.cpu.pprof", ahead))
		}()
	} else {
		profDone <- nil
	}
	defer func() {
		if err := <-profDone; err != nil && run.err == nil {
			run.err = err
		}
	}()
	tick := time.NewTicker(c.intervalScrape)
	defer tick.Stop()
	var body []byte
	var cpu0 float64
	var timed time.Time
	for i := 0; i < c.intervalScrapes+2 && ctx.Err() == nil; i++ {
		if i > 0 {
			<-tick.C
		}
		if i == 1 {
			cpu0, timed = ch.cpuSeconds(), time.Now()
		}
		code, b, d, err := get(url + "/metrics")
		if err != nil || code != 200 {
			run.err = fmt.Errorf("scrape %d: %d %v", i, code, err)
			return run
		}
		if i >= 2 {
			run.scrapes = append(run.scrapes, d)
		}
		body = b
	}
	run.cpu = (ch.cpuSeconds() - cpu0) / time.Since(timed).Seconds()
	run.achieved = float64(l.sent.Load()-s0) / time.Since(t0).Seconds()
	run.aheadN, _ = metricValue(body, `driftwatch_evaluations_total{trigger="ahead"}`)
	return run
}

func (ir intervalResult) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Scrapes at an interval (every %s under %d updates/s; load at the start %s)\n\n", ir.every, ir.rate, ir.load)
	b.WriteString("| --evaluate-ahead | scrapes timed | achieved updates/s | scrape p50 ms | scrape max ms | scrapes ms (in order) | agent CPU s/s | evaluations ahead |\n|---|---:|---:|---:|---:|---|---:|---:|\n")
	for _, r := range ir.runs {
		if r.err != nil {
			fmt.Fprintf(&b, "| %v | error: %v | | | | | | |\n", r.ahead, r.err)
			continue
		}
		var each []string
		for _, d := range r.scrapes {
			each = append(each, fmt.Sprintf("%.0f", float64(d)/1e6))
		}
		fmt.Fprintf(&b, "| %v | %d | %.0f | %s | %s | %s | %.3f | %.0f |\n", r.ahead, len(r.scrapes), r.achieved,
			ms(quantile(r.scrapes, 0.5)), ms(slices.Max(r.scrapes)), strings.Join(each, ", "), r.cpu, r.aheadN)
	}
	return b.String()
}
