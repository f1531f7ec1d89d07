package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// The latency-as-a-ratio phase (issue 35): in the same run, on the same
// apiserver and under the same background load of Secret updates, the bare
// informer's event delivery latency (baseline --probe: from the start of the
// write of the probe Secret to the arrival of its event at the informer's
// handler) and driftwatch's event→metric latency (from the start of the write
// to the first back-to-back scrape showing the consequence), at each load rate,
// several repetitions, the order of the two processes alternating per
// repetition. The bare process is probed a second time under the same load
// through its own /metrics ("bare+scrape"): its handler exports driftwatch's
// series for the probe, so that row is the event→metric latency of the
// smallest exporter, timed exactly as driftwatch's.

// latRun is one process's probes at one rate in one repetition.
type latRun struct {
	rep      int
	row      string // "bare", "bare+scrape" or "driftwatch"
	rate     int    // requested updates/s
	achieved float64
	failed   int64
	pr       probeResult
	load1    string // 1-min load average when the probes started
	err      error
}

type latencyResult struct {
	runs               []latRun
	loadStart, loadEnd string
	took               time.Duration
	reps               int
	rates              []int
	probes             int
}

func parseRates(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--latency-rates: %q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// latencyPhase runs reps × {bare, driftwatch} processes; each syncs once, then
// goes through every rate: background load started, a warm-up, then the probes
// under that load.
func latencyPhase(ctx context.Context, c config, cl *cluster.Cluster, w *world, bare, agent rowSpec, cs kubernetesClient, logf func(string, ...any)) latencyResult {
	res := latencyResult{loadStart: loadAvg(), reps: c.latencyReps, rates: c.latencyRates, probes: c.latencyProbes}
	t0 := time.Now()
	bare.args = append(slices.Clone(bare.args), "--probe", w.probeNS+"/"+w.probeName)
	for rep := 1; rep <= c.latencyReps && ctx.Err() == nil; rep++ {
		order := []rowSpec{bare, agent}
		if rep%2 == 0 {
			slices.Reverse(order)
		}
		for _, r := range order {
			if ctx.Err() != nil {
				break
			}
			row := "bare"
			if r.agent {
				row = "driftwatch"
			}
			logf("latency rep %d/%d: %s", rep, c.latencyReps, row)
			res.runs = append(res.runs, latencyProcess(ctx, c, cl, w, r, row, rep, cs, logf)...)
			time.Sleep(time.Second)
		}
	}
	res.loadEnd, res.took = loadAvg(), time.Since(t0)
	return res
}

// latencyProcess starts one process, waits for it to be ready and settle, then
// probes it at every rate.
func latencyProcess(ctx context.Context, c config, cl *cluster.Cluster, w *world, r rowSpec, row string, rep int, cs kubernetesClient, logf func(string, ...any)) []latRun {
	fail := func(err error) []latRun {
		var out []latRun
		for _, rate := range c.latencyRates {
			out = append(out, latRun{rep: rep, row: row, rate: rate, err: err})
			if !r.agent {
				out = append(out, latRun{rep: rep, row: "bare+scrape", rate: rate, err: err})
			}
		}
		return out
	}
	addr, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	logPath := filepath.Join(cl.LogDir, fmt.Sprintf("bench-latency-%s-rep%d.log", row, rep))
	ch, err := startChild(row, r.bin, append(slices.Clone(r.args), "--listen", addr), r.env, logPath)
	if err != nil {
		return fail(err)
	}
	defer ch.stop(10 * time.Second)
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Minute)
	for {
		if ch.exited() {
			return fail(fmt.Errorf("exited before sync; log %s:\n%s", logPath, tail(logPath)))
		}
		if code, _, _, err := get(url + "/readyz"); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fail(fmt.Errorf("not ready in time"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(c.latencySettle)
	var out []latRun
	for _, rate := range c.latencyRates {
		if ctx.Err() != nil {
			break
		}
		l := &loader{cs: cs, secrets: w.secrets, rate: rate, workers: max(16, rate/20)}
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { l.run(lctx); close(done) }()
		time.Sleep(c.latencyWarmup)
		probe := func(row string, f func() (probeResult, error)) {
			lr := latRun{rep: rep, row: row, rate: rate, load1: strings.Fields(loadAvg())[0]}
			s0, f0, t1 := l.sent.Load(), l.failed.Load(), time.Now()
			lr.pr, lr.err = f()
			lr.achieved = float64(l.sent.Load()-s0) / time.Since(t1).Seconds()
			lr.failed = l.failed.Load() - f0
			if lr.err == nil && len(lr.pr.latencies) == 0 {
				lr.err = fmt.Errorf("no probe measured (%d timed out)", lr.pr.timeouts)
			}
			if lr.err != nil {
				logf("  %s at %d/s: %v", row, rate, lr.err)
			} else {
				logf("  %s at %d/s (achieved %.0f/s, load %s): p50 %s p99 %s (%d probes, %d timeouts)%s", row, rate, lr.achieved, lr.load1,
					quantile(lr.pr.latencies, 0.5).Round(100*time.Microsecond), quantile(lr.pr.latencies, 0.99).Round(100*time.Microsecond),
					len(lr.pr.latencies), lr.pr.timeouts, scrapeNote(lr.pr))
			}
			out = append(out, lr)
		}
		scrapeProbe := func() (probeResult, error) {
			return probeLatency(ctx, cs, w, url+"/metrics", c.latencyProbes, 300*time.Millisecond)
		}
		if r.agent {
			probe(row, scrapeProbe)
		} else {
			probe(row, func() (probeResult, error) {
				return probeBare(ctx, cs, w, url+"/probe", c.latencyProbes, 300*time.Millisecond)
			})
			probe("bare+scrape", scrapeProbe)
		}
		cancel()
		<-done
		time.Sleep(time.Second) // drain the load's events before the next rate
	}
	return out
}

func scrapeNote(pr probeResult) string {
	if len(pr.scrapes) == 0 {
		return ""
	}
	return fmt.Sprintf("; scrape p50 %s p99 %s; first scrape after the warm-up %s", quantile(pr.scrapes, 0.5).Round(100*time.Microsecond),
		quantile(pr.scrapes, 0.99).Round(100*time.Microsecond), pr.firstScrape.Round(100*time.Microsecond))
}

// toggleProbe removes the key PROBE of the probe Secret if it has it, adds it
// otherwise, and returns the resourceVersion of the write, when it returned and
// its round trip; start is when the write's request was about to be sent.
func toggleProbe(ctx context.Context, cs kubernetesClient, w *world) (rv string, start time.Time, rtt time.Duration, err error) {
	secrets := cs.CoreV1().Secrets(w.probeNS)
	s, err := secrets.Get(ctx, w.probeName, metav1.GetOptions{})
	if err != nil {
		return "", time.Time{}, 0, err
	}
	if _, had := s.Data["PROBE"]; had {
		delete(s.Data, "PROBE")
	} else {
		s.Data["PROBE"] = []byte("x")
	}
	t0 := time.Now()
	got, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		return "", time.Time{}, 0, err
	}
	return got.ResourceVersion, t0, time.Since(t0), nil
}

// probeBare toggles PROBE n times and, for each write, asks the baseline
// process when the event with the write's resourceVersion reached its
// informer's handler: latency = arrival − start of the write (both
// time.Now().UnixNano() on this machine). Measured from the start, not the
// return, of the write: the watch stream can beat the write's own response,
// which made the bare figure negative on a loaded machine (CI, stop 43), and
// driftwatch's row is measured from the same instant.
func probeBare(ctx context.Context, cs kubernetesClient, w *world, probeURL string, n int, gap time.Duration) (probeResult, error) {
	var res probeResult
	for i := 0; i < n && ctx.Err() == nil; i++ {
		rv, start, rtt, err := toggleProbe(ctx, cs, w)
		if err != nil {
			return res, err
		}
		res.writes = append(res.writes, rtt)
		code, body, _, err := get(probeURL + "?rv=" + rv)
		switch {
		case err != nil:
			return res, err
		case code == 504:
			res.timeouts++
		case code != 200:
			return res, fmt.Errorf("/probe: HTTP %d", code)
		default:
			at, err := strconv.ParseInt(strings.TrimSpace(string(body)), 10, 64)
			if err != nil {
				return res, fmt.Errorf("/probe: %q", body)
			}
			res.latencies = append(res.latencies, time.Duration(at-start.UnixNano()))
		}
		time.Sleep(gap)
	}
	// Leave the probe Secret healthy (PROBE present).
	secrets := cs.CoreV1().Secrets(w.probeNS)
	if s, err := secrets.Get(context.Background(), w.probeName, metav1.GetOptions{}); err == nil {
		if _, ok := s.Data["PROBE"]; !ok {
			s.Data["PROBE"] = []byte("x")
			_, _ = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		}
	}
	return res, nil
}

// latStats is one row at one rate over the repetitions.
type latStats struct {
	n, timeouts, errs   int
	p50, p99            time.Duration   // over every probe of every repetition
	repP99              []time.Duration // each repetition's p99
	scr50, scr99        time.Duration
	writes              []time.Duration
	repScr99            []time.Duration
	achievedLo, achieHi float64
	loadLo, loadHi      string
}

func (lr latencyResult) stats(row string, rate int) latStats {
	var s latStats
	var all, scr []time.Duration
	for _, r := range lr.runs {
		if r.row != row || r.rate != rate {
			continue
		}
		if r.err != nil {
			s.errs++
			continue
		}
		all = append(all, r.pr.latencies...)
		scr = append(scr, r.pr.scrapes...)
		s.writes = append(s.writes, r.pr.writes...)
		s.timeouts += r.pr.timeouts
		s.repP99 = append(s.repP99, quantile(r.pr.latencies, 0.99))
		if len(r.pr.scrapes) > 0 {
			s.repScr99 = append(s.repScr99, quantile(r.pr.scrapes, 0.99))
		}
		if s.achievedLo == 0 || r.achieved < s.achievedLo {
			s.achievedLo = r.achieved
		}
		s.achieHi = max(s.achieHi, r.achieved)
		if s.loadLo == "" || num(r.load1) < num(s.loadLo) {
			s.loadLo = r.load1
		}
		if s.loadHi == "" || num(r.load1) > num(s.loadHi) {
			s.loadHi = r.load1
		}
	}
	s.n = len(all)
	s.p50, s.p99 = quantile(all, 0.5), quantile(all, 0.99)
	s.scr50, s.scr99 = quantile(scr, 0.5), quantile(scr, 0.99)
	return s
}

func num(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }

func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s–%s", ms(slices.Min(ds)), ms(slices.Max(ds)))
}

// repRatios is each repetition's driftwatch p99 / bare p99 at a rate.
func (lr latencyResult) repRatios(rate int) []float64 { return lr.repRatiosOf(rate, "bare") }

// repRatiosOf is each repetition's driftwatch p99 / the row's p99 at a rate.
func (lr latencyResult) repRatiosOf(rate int, row string) []float64 {
	p99 := map[[2]any]time.Duration{}
	for _, r := range lr.runs {
		if r.rate == rate && r.err == nil {
			p99[[2]any{r.rep, r.row}] = quantile(r.pr.latencies, 0.99)
		}
	}
	var out []float64
	for rep := 1; rep <= lr.reps; rep++ {
		b, okb := p99[[2]any{rep, row}]
		d, okd := p99[[2]any{rep, "driftwatch"}]
		if okb && okd && b > 0 {
			out = append(out, float64(d)/float64(b))
		}
	}
	return out
}

func (lr latencyResult) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Latency as a ratio (issue 35)\n\n")
	fmt.Fprintf(&b, "%d repetitions × {bare informer, driftwatch} (order alternating per repetition), each process synced once and then probed at %s updates/s of background load (%d probes per rate, after a warm-up); %s in all; load average %s at the start, %s at the end.\n",
		lr.reps, joinInts(lr.rates), lr.probes, lr.took.Round(time.Second), lr.loadStart, lr.loadEnd)
	fmt.Fprintln(&b, "bare = from the start of the write of the probe Secret (the Update request about to be sent) to the arrival of its event (same resourceVersion) at the bare informer's handler; driftwatch = from the start of the write to the end of the first back-to-back /metrics scrape showing `driftwatch_secret_missing_key{key=\"PROBE\"}` change (includes up to one scrape). Both include the write's own processing by the apiserver (its round trip, last column, is the bench's view of it). p50/p99 over every probe of every repetition; spread = min–max of the repetitions' p99. Achieved rates below the requested one: the loader drops what the apiserver does not take; the process under test shares the CPUs with it and the apiserver.")
	fmt.Fprintln(&b, "\n| updates/s requested | achieved (min–max) | 1-min load (min–max) | bare p50 / p99 ms | bare p99 spread ms | driftwatch p50 / p99 ms | driftwatch p99 spread ms | p99 ratio | p99 ratio spread | scrape p50 / p99 ms | scrape p99 spread ms | probe write round trip p50 / p99 ms |")
	fmt.Fprintln(&b, "|---:|---|---|---|---|---|---|---:|---|---|---|---|")
	for _, rate := range lr.rates {
		bs, ds := lr.stats("bare", rate), lr.stats("driftwatch", rate)
		ratio, rs := "–", "–"
		if bs.p99 > 0 && ds.n > 0 {
			ratio = fmt.Sprintf("%.2f", float64(ds.p99)/float64(bs.p99))
		}
		if rr := lr.repRatios(rate); len(rr) > 0 {
			rs = ratioSpread(rr)
		}
		wr := append(slices.Clone(bs.writes), ds.writes...)
		fmt.Fprintf(&b, "| %d | %.0f–%.0f | %s–%s | %s / %s%s | %s | %s / %s%s | %s | %s | %s | %s / %s | %s | %s / %s |\n",
			rate, min(bs.achievedLo, nz(ds.achievedLo, bs.achievedLo)), max(bs.achieHi, ds.achieHi),
			minLoad(bs.loadLo, ds.loadLo), maxLoad(bs.loadHi, ds.loadHi),
			ms(bs.p50), ms(bs.p99), notes(bs), spread(bs.repP99),
			ms(ds.p50), ms(ds.p99), notes(ds), spread(ds.repP99),
			ratio, rs, ms(ds.scr50), ms(ds.scr99), spread(ds.repScr99), ms(quantile(wr, 0.5)), ms(quantile(wr, 0.99)))
	}
	fmt.Fprint(&b, "\n### Through a scrape on both sides\n\n")
	fmt.Fprintln(&b, "bare+scrape = the same bare process, probed again right after its bare probes under the same load: its handler sets or deletes `driftwatch_secret_missing_key{namespace,secret,key=\"PROBE\"}` in a client_golang registry that also holds the Go and process collectors, served by promhttp, and the probe is timed exactly as driftwatch's (start of the write → end of the first back-to-back scrape showing the change). It is what any exporter measured this way costs at least: what the ratio to it leaves is driftwatch's own.")
	fmt.Fprintln(&b, "\n| updates/s requested | achieved (min–max) | bare+scrape p50 / p99 ms | bare+scrape p99 spread ms | its scrape p50 / p99 ms | driftwatch p50 / p99 ms | p99 ratio driftwatch / bare+scrape | ratio spread |")
	fmt.Fprintln(&b, "|---:|---|---|---|---|---|---:|---|")
	for _, rate := range lr.rates {
		es, ds := lr.stats("bare+scrape", rate), lr.stats("driftwatch", rate)
		ratio, rs := "–", "–"
		if es.p99 > 0 && ds.n > 0 {
			ratio = fmt.Sprintf("%.2f", float64(ds.p99)/float64(es.p99))
		}
		if rr := lr.repRatiosOf(rate, "bare+scrape"); len(rr) > 0 {
			rs = ratioSpread(rr)
		}
		fmt.Fprintf(&b, "| %d | %.0f–%.0f | %s / %s%s | %s | %s / %s | %s / %s | %s | %s |\n",
			rate, es.achievedLo, es.achieHi, ms(es.p50), ms(es.p99), notes(es), spread(es.repP99),
			ms(es.scr50), ms(es.scr99), ms(ds.p50), ms(ds.p99), ratio, rs)
	}
	if slices.Contains(lr.rates, 200) {
		bs, es, ds := lr.stats("bare", 200), lr.stats("bare+scrape", 200), lr.stats("driftwatch", 200)
		if bs.p99 > 0 && ds.n > 0 {
			r := float64(ds.p99) / float64(bs.p99)
			fmt.Fprintf(&b, "\nGoal at 200 updates/s (issue 35): p99 ratio ≤ 1.5: %.2f (%s); scrape p99 ≤ 50 ms: %s ms (%s). Reported, never asserted.",
				r, met(r <= 1.5), ms(ds.scr99), met(ds.scr99 <= 50*time.Millisecond))
			if es.p99 > 0 {
				fmt.Fprintf(&b, " Against the same series through the smallest exporter (bare+scrape): %.2f.", float64(ds.p99)/float64(es.p99))
			}
			if rr, re := lr.repRatios(200), lr.repRatiosOf(200, "bare+scrape"); len(rr) >= 3 && len(re) >= 3 {
				fmt.Fprintf(&b, " The median of the repetitions' p99 ratios: %.2f to bare, %.2f to bare+scrape (a p99 over %d probes is nearly their maximum, so one stall of the shared cores moves the pooled figure; the median does not follow one repetition).",
					median(rr), median(re), lr.probes)
			}
			fmt.Fprintln(&b)
		}
	}
	return b.String()
}

// ratioSpread is the repetitions' ratios as min–max, with their median when
// there are three or more.
func ratioSpread(rr []float64) string {
	s := fmt.Sprintf("%.2f–%.2f", slices.Min(rr), slices.Max(rr))
	if len(rr) >= 3 {
		s += fmt.Sprintf(" (median %.2f)", median(rr))
	}
	return s
}

func notes(s latStats) string {
	var n []string
	if s.timeouts > 0 {
		n = append(n, fmt.Sprintf("%d timed out", s.timeouts))
	}
	if s.errs > 0 {
		n = append(n, fmt.Sprintf("%d runs failed", s.errs))
	}
	if len(n) == 0 {
		return fmt.Sprintf(" (n=%d)", s.n)
	}
	return fmt.Sprintf(" (n=%d; %s)", s.n, strings.Join(n, ", "))
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func nz(a, b float64) float64 {
	if a == 0 {
		return b
	}
	return a
}

func minLoad(a, b string) string {
	if a == "" || (b != "" && num(b) < num(a)) {
		return b
	}
	return a
}

func maxLoad(a, b string) string {
	if a == "" || (b != "" && num(b) > num(a)) {
		return b
	}
	return a
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

// medianDur is the median of ds in milliseconds.
func medianDur(ds []time.Duration) float64 {
	v := make([]float64, len(ds))
	for i, d := range ds {
		v[i] = float64(d) / 1e6
	}
	return median(v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// renderSideBySide is the summary `make bench` ends with: the bare informers
// ("baseline" row) and driftwatch, their CPU, RSS and p99 latency, and the
// ratios.
func renderSideBySide(c config, rs []result, syncCPU map[string][]float64, lat *latencyResult) string {
	var base, dw *result
	for i := range rs {
		if rs[i].err != nil {
			continue
		}
		switch rs[i].name {
		case "baseline":
			base = &rs[i]
		case "driftwatch":
			dw = &rs[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Side by side: bare informers / driftwatch\n\n")
	fmt.Fprintln(&b, "| | bare (baseline) | driftwatch | driftwatch / bare |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|")
	line := func(what string, bv, dv float64, okb, okd bool, format string) {
		cell := func(ok bool, v float64) string {
			if !ok {
				return "–"
			}
			return fmt.Sprintf(format, v)
		}
		ratio := "–"
		if okb && okd && bv > 0 {
			ratio = fmt.Sprintf("%.2f×", dv/bv)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", what, cell(okb, bv), cell(okd, dv), ratio)
	}
	syncLabel := "sync CPU s"
	if c.syncRounds > 1 {
		syncLabel = fmt.Sprintf("sync CPU s (median of %d rounds)", c.syncRounds)
	}
	var bs, ds, brss, drss, bcpu, dcpu float64
	if base != nil {
		bs, brss, bcpu = median(syncCPU["baseline"]), base.steadyRSS/mib, base.cpuPerUpdate*1000
	}
	if dw != nil {
		ds, drss, dcpu = median(syncCPU["driftwatch"]), dw.steadyRSS/mib, dw.cpuPerUpdate*1000
	}
	line(syncLabel, bs, ds, base != nil, dw != nil, "%.2f")
	line("steady RSS MiB", brss, drss, base != nil, dw != nil, "%.1f")
	if base != nil && dw != nil {
		line("of which anonymous MiB (the rest: the executable's mapped pages)", base.steadyAnon/mib, dw.steadyAnon/mib, true, true, "%.1f")
	}
	if base != nil && dw != nil && base.loadedRSS > 0 && dw.loadedRSS > 0 {
		line("RSS after the load phase MiB", base.loadedRSS/mib, dw.loadedRSS/mib, true, true, "%.1f")
	}
	line(fmt.Sprintf("CPU ms per update (%d/s requested)", c.loadRate), bcpu, dcpu, base != nil && base.updates > 0, dw != nil && dw.updates > 0, "%.3f")
	if lat != nil {
		for _, rate := range lat.rates {
			bl, dl := lat.stats("bare", rate), lat.stats("driftwatch", rate)
			line(fmt.Sprintf("p99 latency ms at %d updates/s (event delivery / event→metric, %d reps)", rate, lat.reps),
				float64(bl.p99)/1e6, float64(dl.p99)/1e6, bl.n > 0, dl.n > 0, "%.1f")
		}
		for _, rate := range lat.rates {
			el, dl := lat.stats("bare+scrape", rate), lat.stats("driftwatch", rate)
			line(fmt.Sprintf("p99 latency ms at %d updates/s, event→series in a scrape (bare: the smallest exporter of the same series)", rate),
				float64(el.p99)/1e6, float64(dl.p99)/1e6, el.n > 0, dl.n > 0, "%.1f")
		}
		// With three or more repetitions, the median of their p99s: one
		// stall of the shared cores in one repetition moves a pooled p99.
		if lat.reps >= 3 {
			for _, rate := range lat.rates {
				for _, row := range []string{"bare", "bare+scrape"} {
					bl, dl := lat.stats(row, rate), lat.stats("driftwatch", rate)
					what := "event delivery / event→metric"
					if row == "bare+scrape" {
						what = "event→series in a scrape on both sides"
					}
					line(fmt.Sprintf("median of the %d repetitions' p99 ms at %d updates/s (%s)", lat.reps, rate, what),
						medianDur(bl.repP99), medianDur(dl.repP99), len(bl.repP99) > 0, len(dl.repP99) > 0, "%.1f")
				}
			}
		}
	} else if dw != nil && dw.latN > 0 {
		line("event→metric p99 ms (no bare figure: --latency-reps 0)", 0, float64(dw.lat99)/1e6, false, true, "%.1f")
	}
	return b.String()
}
