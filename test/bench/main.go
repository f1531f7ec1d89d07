// Command bench measures driftwatch against the physical floor on a real
// kube-apiserver (the e2e test stack): it creates a synthetic cluster of a given
// size, then runs, one after another and each as its own process on the same data,
//
//   - baseline: bare client-go informers on the resources driftwatch watches, same
//     list options and wire format as the agent (protobuf for the typed resources,
//     JSON for the CRDs), no transform, no handlers (the cost of decoding the
//     objects);
//   - baseline JSON: the same with JSON for every resource (the wire format of
//     agents before protobuf; --json-baseline=false skips it);
//   - baseline+transform: the same, with a transform that keeps only name/namespace
//     (the floor of a value-free cache);
//   - driftwatch: the real agent binary with the restricted kubeconfig;
//
// and prints, for each, CPU and wall time to initial sync, peak and steady RSS, Go
// heap, CPU per Secret update under a steady load, and for driftwatch the
// event→metric latency and the /metrics scrape time. Then the latency as a ratio
// (latency.go, issue 35): --latency-reps times, in alternating order, the bare
// informer (baseline --probe: event delivery to its handler) and driftwatch
// (event→metric), each probed under every --latency-rates background load; and
// a side-by-side bare/driftwatch table (sync CPU, steady RSS, CPU per update,
// p99 latency, ratios) ends the report. It prints numbers and never asserts
// them; --smoke runs a tiny size and only checks that every row was measured.
//
//	go run ./test/bench --secrets 20000 --pods 10000 --externalsecrets 5000
//	go run ./test/bench --smoke
//	go run ./test/bench baseline [--transform] [--json] [--probe NS/NAME] --kubeconfig F   (child mode)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "baseline" {
		os.Exit(runBaseline(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout))
}

type config struct {
	sz            sizes
	concurrency   int
	loadRate      int
	loadDuration  time.Duration
	probes        int
	settle        time.Duration
	apiIdle       time.Duration // the apiserver's idle CPU rate is read over this before each row
	smoke         bool
	admin         bool
	pprofDir      string
	syncProfile   time.Duration
	sharded       bool
	shardWatch    bool
	watchlistOff  bool
	compareAgent  string
	report        string
	skipBaselines bool
	jsonBaseline  bool
	syncRounds    int
	// The latency-as-a-ratio phase (latency.go).
	latencyReps                  int
	latencyRates                 []int
	latencyProbes                int
	latencySettle, latencyWarmup time.Duration
	// The interval-scrape phase (interval.go).
	intervalScrape  time.Duration
	intervalScrapes int
}

// rowSpec is one measured process.
type rowSpec struct {
	name    string
	bin     string
	args    []string
	env     []string
	agent   bool // driftwatch: latency phase, pprof
	load    bool
	latency bool
}

// result is one row of the table.
type result struct {
	name                          string
	syncWall                      time.Duration
	syncCPU, settleCPU            float64
	peakRSS, steadyRSS, heapInuse float64 // bytes
	// steadyAnon and steadyFile split steadyRSS (RssAnon, RssFile): the
	// process's own memory, and the pages of its executable (and other files)
	// it maps, a fixed share that depends on the binary's size and the kernel
	// (which may map text in 2 MiB folios).
	steadyAnon, steadyFile float64
	// loadedRSS, loadedAnon and loadedFile are read at the end of the row,
	// after its load and probe phases: the pages the churn's code paths
	// brought back (driftwatch returns its executable's pages after the sync).
	loadedRSS, loadedAnon, loadedFile float64
	heapLive                          float64 // heap_alloc right after a forced GC
	updates                           int64
	updateRate                        float64
	cpuPerUpdate                      float64 // seconds
	idleCPU                           float64 // CPU s per s when idle
	lat50, lat99, scr50, scr99        time.Duration
	latN, latTimeouts, scrapes        int
	// The kube-apiserver while the row ran: watches it served at steady
	// state beyond those before the row started, its CPU during the row's
	// initial sync and during the load phase.
	api apiSide
	err error
}

type apiSide struct {
	ok                        bool
	watches, registered       float64
	syncCPU, loadCPU, idleCPU float64
}

func run(args []string, stdout io.Writer) int {
	c := config{apiIdle: 2 * time.Second}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&c.sz.Secrets, "secrets", 20000, "ordinary Secrets")
	fs.IntVar(&c.sz.KeysPerSecret, "keys", 5, "keys per Secret")
	fs.IntVar(&c.sz.ValueSize, "value-size", 64, "bytes per value")
	fs.IntVar(&c.sz.Pods, "pods", 10000, "Pods, each with env secretKeyRefs, an envFrom and a secret volume")
	fs.IntVar(&c.sz.ExternalSecrets, "externalsecrets", 5000, "ExternalSecrets (CRD objects with a Ready status; no controller)")
	fs.IntVar(&c.sz.HelmReleases, "helm-releases", 1000, "Helm release Secrets (deployed) with a rendered chart")
	fs.IntVar(&c.sz.Namespaces, "namespaces", 0, "namespaces (0: one per 100 Secrets)")
	fs.Float64Var(&c.sz.LastAppliedFrac, "last-applied-frac", 0.2, "fraction of Secrets carrying kubectl's last-applied annotation")
	fs.Float64Var(&c.sz.BrokenFrac, "broken-frac", 0.01, "fraction of Pods reading an optional key their Secret lacks (findings)")
	fs.IntVar(&c.concurrency, "concurrency", 16, "concurrent creates (the apiserver is the bottleneck)")
	fs.IntVar(&c.loadRate, "load-rate", 200, "Secret updates per second during the load phases")
	fs.DurationVar(&c.loadDuration, "load-duration", 60*time.Second, "length of the CPU-per-update load phase")
	fs.IntVar(&c.probes, "probes", 40, "event→metric latency probes (driftwatch rows)")
	fs.DurationVar(&c.settle, "settle", 15*time.Second, "wait after sync before reading steady RSS and heap")
	fs.BoolVar(&c.smoke, "smoke", false, "tiny size, short phases: checks that every row is produced (CI)")
	fs.BoolVar(&c.admin, "admin", false, "run driftwatch with the admin kubeconfig instead of the restricted one")
	fs.StringVar(&c.pprofDir, "pprof-dir", "", "run driftwatch with --debug-pprof and save sync CPU, load CPU, scrape CPU and heap profiles here")
	fs.DurationVar(&c.syncProfile, "sync-profile", 30*time.Second, "length of the CPU profile taken from the agent's start (with --pprof-dir)")
	fs.BoolVar(&c.sharded, "sharded", true, "also measure driftwatch --shard 0 --total-shards 3 (sync, RSS, heap, CPU per update)")
	fs.BoolVar(&c.shardWatch, "shard-watch", true, "with --sharded, measure shard 0/3 with both --shard-watch modes (cluster, namespaces)")
	fs.BoolVar(&c.watchlistOff, "watchlist-off", true, "also measure driftwatch with KUBE_FEATURE_WatchListClient=false (paged LIST)")
	fs.StringVar(&c.compareAgent, "compare-agent", "", "another agent binary to measure as row \"driftwatch (compare)\" (before/after a fix)")
	fs.StringVar(&c.report, "report", "", "also write the results as Markdown to this file")
	fs.BoolVar(&c.skipBaselines, "skip-baselines", false, "measure only the driftwatch rows")
	fs.IntVar(&c.syncRounds, "sync-rounds", 1, "measure every row's initial sync this many times in all (extra rounds: sync only, alternating order) and report the medians")
	fs.BoolVar(&c.jsonBaseline, "json-baseline", true, "also measure the baseline with JSON for every resource (sync, RSS, heap)")
	fs.IntVar(&c.latencyReps, "latency-reps", 5, "latency as a ratio: repetitions of {bare informer, driftwatch} probed at every --latency-rates (0: skip the phase)")
	latencyRates := fs.String("latency-rates", "50,200,1000", "latency as a ratio: background Secret updates/s under which both processes are probed")
	fs.IntVar(&c.latencyProbes, "latency-probes", 30, "latency as a ratio: probes per process and rate")
	fs.DurationVar(&c.latencySettle, "latency-settle", 5*time.Second, "latency as a ratio: wait after a process is ready before its first rate")
	fs.DurationVar(&c.latencyWarmup, "latency-warmup", 3*time.Second, "latency as a ratio: background load before the probes at each rate")
	fs.DurationVar(&c.intervalScrape, "interval-scrape", 0, "also scrape driftwatch at this interval under --load-rate updates/s, with --evaluate-ahead and without, and report the scrapes' durations (0: skip the phase)")
	fs.IntVar(&c.intervalScrapes, "interval-scrapes", 8, "scrapes timed per process in the interval-scrape phase (after two the agent learns the interval from)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if c.latencyRates, err = parseRates(*latencyRates); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if c.smoke {
		c.sz = sizes{Secrets: 300, KeysPerSecret: 3, ValueSize: 32, Pods: 150, ExternalSecrets: 50, HelmReleases: 10,
			LastAppliedFrac: c.sz.LastAppliedFrac, BrokenFrac: 0.02}
		c.loadRate, c.loadDuration, c.probes, c.settle = 20, 2*time.Second, 3, time.Second
		c.syncProfile = 3 * time.Second
		// One repetition of the latency phase: the smoke checks that both
		// processes are probed at every rate and the tables have figures; the
		// repetitions and the alternating order are the same code run again.
		c.latencyReps, c.latencyRates, c.latencyProbes = 1, []int{20, 50}, 3
		c.latencySettle, c.latencyWarmup = time.Second, 500*time.Millisecond
		c.apiIdle = 500 * time.Millisecond
	}
	if c.sz.Namespaces <= 0 {
		c.sz.Namespaces = max(1, c.sz.Secrets/100)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench %s: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	mach := machine()
	logf("machine: %s", mach)

	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	cl, err := cluster.Start(sctx, cluster.Options{ESOCRDs: true, Logf: logf})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer func() {
		cl.Stop()
		if err := cl.CheckTornDown(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()
	agentBin, err := cl.BuildAgent()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}

	// Bulk creation: a high-QPS admin client.
	rc := *cl.AdminConfig
	rc.QPS, rc.Burst = 5000, 5000
	if err := installStore(ctx, cl); err != nil {
		fmt.Fprintln(os.Stderr, "bench: ClusterSecretStore:", err)
		return 1
	}
	admin, dyn, err := clients(&rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	logf("creating %s with concurrency %d", c.sz, c.concurrency)
	w, err := populate(ctx, admin, dyn, c.sz, c.concurrency, logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: populate:", err)
		return 1
	}
	logf("created %d objects in %s (%.0f objects/s)", w.objects, w.created.Round(time.Millisecond), float64(w.objects)/w.created.Seconds())
	// Let the controller-manager's ServiceAccounts land (the smoke's numbers
	// are never read, a late one is an event more in the first row's sync).
	if c.smoke {
		time.Sleep(time.Second)
	} else {
		time.Sleep(3 * time.Second)
	}

	kc := cl.AgentKubeconfig
	if c.admin {
		kc = cl.AdminKubeconfig
	}
	agentArgs := func(extra ...string) []string {
		return append([]string{"--kubeconfig", kc, "--log-format", "json", "--log-level", "info"}, extra...)
	}
	var rows []rowSpec
	if !c.skipBaselines {
		rows = append(rows,
			rowSpec{name: "baseline", bin: self, args: []string{"baseline", "--kubeconfig", kc}, load: true},
			rowSpec{name: "baseline+transform", bin: self, args: []string{"baseline", "--transform", "--kubeconfig", kc}, load: true})
		if c.jsonBaseline {
			rows = append(rows, rowSpec{name: "baseline JSON", bin: self, args: []string{"baseline", "--json", "--kubeconfig", kc}})
		}
	}
	rows = append(rows, rowSpec{name: "driftwatch", bin: agentBin, args: agentArgs(), agent: true, load: true, latency: true})
	if c.compareAgent != "" {
		rows = append(rows, rowSpec{name: "driftwatch (compare)", bin: c.compareAgent, args: agentArgs(), agent: true, load: true, latency: true})
	}
	if c.sharded {
		rows = append(rows, rowSpec{name: "driftwatch shard 0/3", bin: agentBin, args: agentArgs("--shard", "0", "--total-shards", "3"), agent: true, load: true})
		if c.shardWatch {
			rows = append(rows, rowSpec{name: "driftwatch shard 0/3 namespace watches", bin: agentBin,
				args: agentArgs("--shard", "0", "--total-shards", "3", "--shard-watch", "namespaces"), agent: true, load: true})
		}
		if c.compareAgent != "" {
			rows = append(rows, rowSpec{name: "driftwatch (compare) shard 0/3", bin: c.compareAgent, args: agentArgs("--shard", "0", "--total-shards", "3"), agent: true})
		}
	}
	if c.watchlistOff {
		rows = append(rows, rowSpec{name: "driftwatch WatchListClient=false", bin: agentBin, args: agentArgs(), env: []string{"KUBE_FEATURE_WatchListClient=false"}, agent: true})
	}

	loadCS, _, err := clients(&rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	var results []result
	for _, r := range rows {
		if ctx.Err() != nil {
			break
		}
		logf("measuring %s", r.name)
		res := measure(ctx, c, cl, w, r, loadCS, logf)
		if res.err != nil {
			logf("%s: %v", r.name, res.err)
		}
		results = append(results, res)
		if res.api.ok {
			logf("  apiserver: %.0f watches beyond the stack's own (registered watchers %.0f), CPU %.2f s during the sync, %.2f s during the load (idle rate %.3f CPU s/s)",
				res.api.watches, res.api.registered, res.api.syncCPU, res.api.loadCPU, res.api.idleCPU)
		}
		time.Sleep(min(c.settle, 2*time.Second))
	}
	// Extra sync-only rounds: the box is noisy, one sample per row is not enough
	// to compare rows a few percent apart.
	syncCPU := map[string][]float64{}
	for _, r := range results {
		if r.err == nil {
			syncCPU[r.name] = append(syncCPU[r.name], r.syncCPU)
		}
	}
	quick := c
	quick.settle, quick.pprofDir = time.Second, ""
	for round := 2; round <= c.syncRounds && ctx.Err() == nil; round++ {
		order := append([]rowSpec(nil), rows...)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, r := range order {
			if ctx.Err() != nil {
				break
			}
			r.load, r.latency = false, false
			logf("measuring %s (sync round %d)", r.name, round)
			res := measure(ctx, quick, cl, w, r, loadCS, logf)
			if res.err != nil {
				logf("%s: %v", r.name, res.err)
				continue
			}
			syncCPU[r.name] = append(syncCPU[r.name], res.syncCPU)
			time.Sleep(time.Second)
		}
	}
	var lat *latencyResult
	if c.latencyReps > 0 && len(c.latencyRates) > 0 && ctx.Err() == nil {
		lr := latencyPhase(ctx, c, cl, w,
			rowSpec{name: "baseline", bin: self, args: []string{"baseline", "--kubeconfig", kc}},
			rowSpec{name: "driftwatch", bin: agentBin, args: agentArgs(), agent: true}, loadCS, logf)
		lat = &lr
	}
	var interval *intervalResult
	if c.intervalScrape > 0 && ctx.Err() == nil {
		ir := intervalPhase(ctx, c, cl, w, rowSpec{name: "driftwatch", bin: agentBin, args: agentArgs(), agent: true}, loadCS, logf)
		interval = &ir
	}
	load := loadAvg()
	table := render(c, w, mach, load, results)
	if c.syncRounds > 1 {
		table += renderRounds(rows, syncCPU)
	}
	if lat != nil {
		table += lat.render()
	}
	if interval != nil {
		table += interval.render()
	}
	table += renderSideBySide(c, results, syncCPU, lat)
	fmt.Fprint(stdout, table)
	if c.report != "" {
		if err := os.WriteFile(c.report, []byte(table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	// Every row must have been measured (numbers are never asserted).
	bad := 0
	if len(results) != len(rows) {
		bad++
	}
	for _, r := range results {
		missing := r.err != nil || r.syncWall == 0 || r.steadyRSS == 0 || r.heapInuse == 0 || r.heapLive == 0 || r.peakRSS == 0
		for _, spec := range rows {
			if spec.name == r.name && spec.load && r.updates == 0 {
				missing = true
			}
			if spec.name == r.name && spec.latency && (r.latN == 0 || r.scrapes == 0) {
				missing = true
			}
		}
		if missing {
			fmt.Fprintf(os.Stderr, "bench: row %q incomplete (err: %v)\n", r.name, r.err)
			bad++
		}
	}
	if interval != nil {
		for _, r := range interval.runs {
			if r.err != nil || len(r.scrapes) == 0 {
				fmt.Fprintf(os.Stderr, "bench: interval scrapes with --evaluate-ahead=%v incomplete (%d scrapes, err: %v)\n", r.ahead, len(r.scrapes), r.err)
				bad++
			}
		}
	}
	if lat != nil {
		for _, rate := range c.latencyRates {
			for _, row := range []string{"bare", "driftwatch"} {
				if s := lat.stats(row, rate); s.n == 0 || s.errs > 0 || (row == "driftwatch" && s.scr99 == 0) {
					fmt.Fprintf(os.Stderr, "bench: latency %s at %d/s incomplete (%d probes, %d failed runs)\n", row, rate, s.n, s.errs)
					bad++
				}
			}
		}
	}
	if bad > 0 {
		return 1
	}
	return 0
}

func url0(addr string) string { return "http://" + addr }

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func measure(ctx context.Context, c config, cl *cluster.Cluster, w *world, r rowSpec, cs kubernetesClient, logf func(string, ...any)) (res result) {
	res.name = r.name
	addr, err := freeAddr()
	if err != nil {
		res.err = err
		return
	}
	args := append(append([]string{}, r.args...), "--listen", addr)
	// Every child serves /debug/pprof/heap: ?gc=1 forces the GC before the live
	// heap is read. Profiles are saved for the "driftwatch" row with --pprof-dir.
	gcURL := url0(addr)
	var pprofURL string
	if r.agent {
		pa, err := freeAddr()
		if err != nil {
			res.err = err
			return
		}
		args = append(args, "--debug-pprof", pa)
		gcURL = "http://" + pa
		if c.pprofDir != "" && r.name == "driftwatch" {
			pprofURL = gcURL
			_ = os.MkdirAll(c.pprofDir, 0o755)
		}
	}
	logPath := filepath.Join(cl.LogDir, "bench-"+strings.NewReplacer(" ", "_", "/", "-", "+", "_", "=", "_", "(", "", ")", "").Replace(r.name)+".log")
	// The apiserver's CPU rate before the row (its own controllers, the
	// controller-manager's watches) and the watches it serves already.
	api0, apiErr := readAPIServer(ctx, cs)
	if apiErr == nil {
		time.Sleep(c.apiIdle)
		if a, err := readAPIServer(ctx, cs); err == nil {
			res.api.idleCPU = (a.cpu - api0.cpu) / c.apiIdle.Seconds()
			api0 = a
		} else {
			apiErr = err
		}
	}
	t0 := time.Now()
	ch, err := startChild(r.name, r.bin, args, r.env, logPath)
	if err != nil {
		res.err = err
		return
	}
	defer ch.stop(10 * time.Second)
	url := "http://" + addr
	profDone := make(chan struct{})
	close(profDone)
	if pprofURL != "" {
		profDone = make(chan struct{})
		go func() {
			defer close(profDone)
			for i := 0; i < 50; i++ { // the listener comes up within milliseconds
				if _, _, _, err := get(pprofURL + "/debug/pprof/"); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := fetchProfile(pprofURL, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(c.syncProfile.Seconds())), c.pprofDir, "sync.cpu.pprof"); err != nil {
				logf("sync profile: %v", err)
			}
		}()
	}
	// Initial sync.
	deadline := time.Now().Add(20 * time.Minute)
	for {
		if ch.exited() {
			res.err = fmt.Errorf("exited before sync; log %s:\n%s", logPath, tail(logPath))
			return
		}
		if code, _, _, err := get(url + "/readyz"); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			res.err = fmt.Errorf("not ready in time")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.syncWall = time.Since(t0)
	res.syncCPU = ch.cpuSeconds()
	if apiErr == nil {
		if a, err := readAPIServer(ctx, cs); err == nil {
			res.api.syncCPU = a.cpu - api0.cpu
		} else {
			apiErr = err
		}
	}
	logf("  synced in %s, %.2f CPU s", res.syncWall.Round(time.Millisecond), res.syncCPU)
	// Settle, then steady RSS, heap and the idle CPU rate.
	time.Sleep(c.settle)
	res.settleCPU = ch.cpuSeconds()
	res.peakRSS = ch.statusKB("VmHWM") * 1024
	res.steadyRSS = ch.statusKB("VmRSS") * 1024
	res.steadyAnon, res.steadyFile = ch.statusKB("RssAnon")*1024, ch.statusKB("RssFile")*1024
	idle := min(c.settle, 5*time.Second)
	i0 := ch.cpuSeconds()
	time.Sleep(idle)
	res.idleCPU = (ch.cpuSeconds() - i0) / idle.Seconds()
	if apiErr == nil {
		if a, err := readAPIServer(ctx, cs); err == nil {
			res.api.watches = a.watches - api0.watches
			res.api.registered = a.registered
			res.api.ok = true
		} else {
			apiErr = err
		}
	}
	if apiErr != nil {
		logf("  apiserver /metrics: %v", apiErr)
	}
	if _, body, _, err := get(url + "/metrics"); err == nil {
		res.heapInuse, _ = metricValue(body, "go_memstats_heap_inuse_bytes")
	} else {
		res.err = err
		return
	}
	if _, _, _, err := get(gcURL + "/debug/pprof/heap?gc=1"); err != nil {
		res.err = err
		return
	}
	if _, body, _, err := get(url + "/metrics"); err == nil {
		res.heapLive, _ = metricValue(body, "go_memstats_heap_alloc_bytes")
	} else {
		res.err = err
		return
	}
	<-profDone
	if pprofURL != "" {
		if err := fetchProfile(pprofURL, "/debug/pprof/heap?gc=1", c.pprofDir, "heap.pprof"); err != nil {
			logf("heap profile: %v", err)
		}
	}
	logf("  steady RSS %.1f MiB (anonymous %.1f, file-backed %.1f), heap inuse %.1f MiB, live heap after GC %.1f MiB, peak RSS %.1f MiB", res.steadyRSS/mib, res.steadyAnon/mib, res.steadyFile/mib, res.heapInuse/mib, res.heapLive/mib, res.peakRSS/mib)
	if r.load {
		l := &loader{cs: cs, secrets: w.secrets, rate: c.loadRate, workers: 16}
		lctx, cancel := context.WithTimeout(ctx, c.loadDuration)
		var profErr chan error
		if pprofURL != "" {
			profErr = make(chan error, 1)
			go func() {
				profErr <- fetchProfile(pprofURL, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(c.loadDuration.Seconds())-2)), c.pprofDir, "load.cpu.pprof")
			}()
		}
		a0, _ := readAPIServer(ctx, cs)
		c0, t1 := ch.cpuSeconds(), time.Now()
		l.run(lctx)
		cancel()
		el := time.Since(t1)
		time.Sleep(min(c.settle, 2*time.Second)) // drain the watch
		c1, el2 := ch.cpuSeconds(), time.Since(t1)
		if a1, err := readAPIServer(ctx, cs); err == nil && a0.cpu > 0 {
			res.api.loadCPU = a1.cpu - a0.cpu
		}
		res.updates = l.sent.Load()
		res.updateRate = float64(res.updates) / el.Seconds()
		if res.updates > 0 {
			res.cpuPerUpdate = max(0, c1-c0-res.idleCPU*el2.Seconds()) / float64(res.updates)
		}
		if profErr != nil {
			if err := <-profErr; err != nil {
				logf("load profile: %v", err)
			}
		}
		logf("  %d updates (%.0f/s, %d failed), %.3f ms CPU per update", res.updates, res.updateRate, l.failed.Load(), res.cpuPerUpdate*1000)
	}
	defer func() {
		if res.err == nil && (r.load || r.latency) {
			res.loadedRSS = ch.statusKB("VmRSS") * 1024
			res.loadedAnon, res.loadedFile = ch.statusKB("RssAnon")*1024, ch.statusKB("RssFile")*1024
			logf("  RSS after the load %.1f MiB (anonymous %.1f, file-backed %.1f)", res.loadedRSS/mib, res.loadedAnon/mib, res.loadedFile/mib)
		}
	}()
	if r.latency {
		l := &loader{cs: cs, secrets: w.secrets, rate: c.loadRate, workers: 16}
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { l.run(lctx); close(done) }()
		var profErr chan error
		if pprofURL != "" {
			profErr = make(chan error, 1)
			go func() {
				profErr <- fetchProfile(pprofURL, "/debug/pprof/profile?seconds=20", c.pprofDir, "scrape.cpu.pprof")
			}()
		}
		pr, err := probeLatency(ctx, cs, w, url+"/metrics", c.probes, 300*time.Millisecond)
		cancel()
		<-done
		if profErr != nil {
			if err := <-profErr; err != nil {
				logf("scrape profile: %v", err)
			}
		}
		if err != nil {
			res.err = err
			return
		}
		res.latN, res.latTimeouts, res.scrapes = len(pr.latencies), pr.timeouts, len(pr.scrapes)
		res.lat50, res.lat99 = quantile(pr.latencies, 0.5), quantile(pr.latencies, 0.99)
		res.scr50, res.scr99 = quantile(pr.scrapes, 0.5), quantile(pr.scrapes, 0.99)
		logf("  latency p50 %s p99 %s (%d probes, %d timeouts); scrape p50 %s p99 %s (%d scrapes); first scrape after the load phase %s",
			res.lat50.Round(time.Millisecond), res.lat99.Round(time.Millisecond), res.latN, res.latTimeouts,
			res.scr50.Round(time.Millisecond), res.scr99.Round(time.Millisecond), res.scrapes, pr.firstScrape.Round(time.Millisecond))
	}
	return res
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

const mib = 1 << 20

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				var kb float64
				_, _ = fmt.Sscan(strings.Fields(v)[0], &kb)
				mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	kv, _ := exec.Command("uname", "-r").Output()
	return fmt.Sprintf("%d CPUs (nproc), %s, %s RAM, Linux %s, %s, load average at start %s",
		runtime.NumCPU(), model, mem, strings.TrimSpace(string(kv)), runtime.Version(), loadAvg())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func render(c config, w *world, mach, load string, rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nMachine: %s; load average at end %s\n", mach, load)
	fmt.Fprintf(&b, "Sizes: %s\n", c.sz)
	fmt.Fprintf(&b, "Creation: %d objects in %s (%.0f/s, concurrency %d)\n", w.objects, w.created.Round(time.Second), float64(w.objects)/w.created.Seconds(), c.concurrency)
	fmt.Fprintf(&b, "Load: %d Secret updates/s requested for %s; latency under the same load with back-to-back scrapes\n\n", c.loadRate, c.loadDuration)
	fmt.Fprintln(&b, "| row | sync wall s | sync CPU s | CPU +settle s | peak RSS MiB | steady RSS MiB | peak/steady | heap inuse MiB | live heap MiB | updates/s | CPU ms/update | event→metric p50/p99 ms | scrape p50/p99 ms |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	dash := func(ok bool, s string) string {
		if !ok {
			return "–"
		}
		return s
	}
	for _, r := range rs {
		if r.err != nil {
			fmt.Fprintf(&b, "| %s | error: %s ||||||||||||\n", r.name, strings.ReplaceAll(strings.SplitN(r.err.Error(), "\n", 2)[0], "|", "/"))
			continue
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.2f | %.2f | %.1f | %.1f | %.2f | %.1f | %.1f | %s | %s | %s | %s |\n",
			r.name, r.syncWall.Seconds(), r.syncCPU, r.settleCPU, r.peakRSS/mib, r.steadyRSS/mib, r.peakRSS/max(r.steadyRSS, 1), r.heapInuse/mib, r.heapLive/mib,
			dash(r.updates > 0, fmt.Sprintf("%.0f", r.updateRate)), dash(r.updates > 0, fmt.Sprintf("%.3f", r.cpuPerUpdate*1000)),
			dash(r.latN > 0, fmt.Sprintf("%d / %d", r.lat50.Milliseconds(), r.lat99.Milliseconds())+timeouts(r.latTimeouts)),
			dash(r.scrapes > 0, fmt.Sprintf("%d / %d", r.scr50.Milliseconds(), r.scr99.Milliseconds())))
	}
	if slices.ContainsFunc(rs, func(r result) bool { return r.api.ok }) {
		fmt.Fprintln(&b, "\nThe kube-apiserver while each row ran (its own /metrics): watches it served at steady state beyond those before the row (apiserver_longrunning_requests{verb=\"WATCH\"}), its CPU during the row's initial sync and during the load phase, and its idle rate before the row:")
		fmt.Fprintln(&b, "\n| row | watches | apiserver CPU s, sync | apiserver CPU s, load | apiserver idle CPU s/s | agent CPU ms/update |")
		fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|")
		for _, r := range rs {
			if r.err != nil || !r.api.ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.2f | %s | %.3f | %s |\n", r.name, r.api.watches, r.api.syncCPU,
				dash(r.api.loadCPU > 0, fmt.Sprintf("%.2f", r.api.loadCPU)), r.api.idleCPU,
				dash(r.updates > 0, fmt.Sprintf("%.3f", r.cpuPerUpdate*1000)))
		}
	}
	find := func(name string) *result {
		for i := range rs {
			if rs[i].name == name && rs[i].err == nil {
				return &rs[i]
			}
		}
		return nil
	}
	base, bt, dw := find("baseline"), find("baseline+transform"), find("driftwatch")
	if base != nil && dw != nil {
		fmt.Fprintf(&b, "\nRatios driftwatch / baseline (same wire format): sync CPU %.2f×, CPU +settle %.2f×, peak RSS %.2f×, steady RSS %.2f×, heap %.2f×, CPU per update %s\n",
			dw.syncCPU/base.syncCPU, dw.settleCPU/base.settleCPU, dw.peakRSS/base.peakRSS, dw.steadyRSS/base.steadyRSS, dw.heapInuse/base.heapInuse,
			dash(base.cpuPerUpdate > 0, fmt.Sprintf("%.2f×", dw.cpuPerUpdate/base.cpuPerUpdate)))
	}
	if bj := find("baseline JSON"); bj != nil {
		for _, name := range []string{"driftwatch", "driftwatch (compare)"} {
			if r := find(name); r != nil {
				fmt.Fprintf(&b, "Ratio %s / baseline JSON: sync CPU %.2f×, peak RSS %.2f×\n", name, r.syncCPU/bj.syncCPU, r.peakRSS/bj.peakRSS)
			}
		}
		if base != nil {
			fmt.Fprintf(&b, "Ratio baseline (protobuf) / baseline JSON: sync CPU %.2f×\n", base.syncCPU/bj.syncCPU)
		}
	}
	if bt != nil && dw != nil {
		n := float64(c.sz.Secrets + c.sz.Pods)
		fmt.Fprintf(&b, "Heap beyond baseline+transform: in use %.0f B, live after GC %.0f B per Secret and Pod ((%.1f − %.1f MiB) / %d objects)\n",
			(dw.heapInuse-bt.heapInuse)/n, (dw.heapLive-bt.heapLive)/n, dw.heapLive/mib, bt.heapLive/mib, int(n))
	}
	if dw != nil {
		fmt.Fprintf(&b, "driftwatch peak RSS / steady RSS: %.2f\n", dw.peakRSS/dw.steadyRSS)
	}
	fmt.Fprintln(&b, "\nSteady RSS split (/proc/PID/status at the same moment): anonymous memory (heap, stacks, runtime: what grows with the objects) and file-backed pages (the executable's text and data it maps: fixed, set by the binary's size and how the kernel maps it):")
	fmt.Fprintln(&b, "\n| row | steady RSS MiB | anonymous MiB | file-backed MiB | RSS after the load MiB (anonymous / file-backed) |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|")
	for _, r := range rs {
		if r.err == nil {
			after := "–"
			if r.loadedRSS > 0 {
				after = fmt.Sprintf("%.1f (%.1f / %.1f)", r.loadedRSS/mib, r.loadedAnon/mib, r.loadedFile/mib)
			}
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %s |\n", r.name, r.steadyRSS/mib, r.steadyAnon/mib, r.steadyFile/mib, after)
		}
	}
	if base != nil && dw != nil && base.steadyAnon > 0 {
		fmt.Fprintf(&b, "\nRatio driftwatch / baseline: steady RSS %.2f×, anonymous %.2f×\n", dw.steadyRSS/base.steadyRSS, dw.steadyAnon/base.steadyAnon)
	}
	return b.String()
}

// renderRounds prints every row's sync CPU samples and median, and the ratios
// of the medians.
func renderRounds(rows []rowSpec, cpu map[string][]float64) string {
	var b strings.Builder
	med := map[string]float64{}
	fmt.Fprintf(&b, "\nSync CPU s over rounds (first: the row above; then alternating order):\n\n| row | samples | median |\n|---|---|---:|\n")
	for _, r := range rows {
		v := slices.Clone(cpu[r.name])
		if len(v) == 0 {
			continue
		}
		sort.Float64s(v)
		m := v[len(v)/2]
		if len(v)%2 == 0 {
			m = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		med[r.name] = m
		var ss []string
		for _, x := range cpu[r.name] {
			ss = append(ss, fmt.Sprintf("%.2f", x))
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f |\n", r.name, strings.Join(ss, " "), m)
	}
	ratio := func(a, base string) {
		if med[a] > 0 && med[base] > 0 {
			fmt.Fprintf(&b, "Median sync CPU %s / %s: %.2f×\n", a, base, med[a]/med[base])
		}
	}
	b.WriteString("\n")
	ratio("driftwatch", "baseline")
	ratio("driftwatch", "baseline JSON")
	ratio("driftwatch (compare)", "baseline JSON")
	ratio("driftwatch (compare)", "baseline")
	ratio("baseline", "baseline JSON")
	ratio("driftwatch", "driftwatch (compare)")
	return b.String()
}

func timeouts(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d timed out)", n)
}
