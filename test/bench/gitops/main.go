// Command gitops measures the agent's GitOps paths at scale on a real
// kube-apiserver (the e2e stack: etcd, kube-apiserver, kube-controller-manager
// with ESO's, Argo CD's Application and Flux's source and Kustomization CRDs),
// with the real agent binary as its own process (issue 35 item 3: "the new
// paths at scale"). For each size it creates
//
//   - A GitRepositories whose artifacts are tarballs packed as
//     source-controller packs them, served by a local HTTP server standing in
//     for source-controller, their status.artifact (url naming
//     source-controller's Service, revision, digest) written through the
//     status subresource;
//   - N Kustomizations over them (N/A per artifact, overlay k%5, own
//     targetNamespace, namePrefix and postBuild.substitute), Ready and applied
//     at the artifact's revision with their inventory, and on the cluster the
//     Secrets and ExternalSecrets (Ready, with their target Secrets) their
//     builds declare; in one Kustomization per artifact a Secret lacks a key;
//   - K Argo CD Applications with the status the application-controller
//     writes (sync, health, resources, history, operationState) and the
//     Secrets and ExternalSecrets they manage; no Argo CD runs and the agent
//     gets no --argocd-server (see docs/performance.md);
//
// then runs the agent with the restricted kubeconfig and
// --flux-source-host/--flux-allowed-cidrs pointing its artifact downloads at
// the local server (loopback, refused unless allowed by flag), and prints
// CPU (/proc/PID/stat) and wall time to the informers' sync and to every
// Kustomization's build, steady RSS (RssAnon/RssFile), Go heap, the cost of
// one new revision (one artifact's content and revision bumped: its
// Kustomizations rebuilt) and the /metrics scrape time. Numbers, never
// assertions.
//
//	go run ./test/bench/gitops --sizes 500/50/500,1000/100/1000
//	go run ./test/bench/gitops --smoke
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout)) }

// sizes is one measured size.
type sizes struct {
	Kustomizations, Artifacts, Applications int
	Revisions                               int // revision bumps measured
}

func (s sizes) String() string {
	return fmt.Sprintf("%d Kustomizations over %d artifacts, %d Applications", s.Kustomizations, s.Artifacts, s.Applications)
}

type config struct {
	sizes        []sizes
	revisions    int
	appSyncs     int
	scrapes      int
	settle       time.Duration
	pollInterval time.Duration
	concurrency  int
	pprofDir     string
	profileSecs  int
	report       string
	smoke        bool
}

// The Flux CRDs the agent reads (build.sh copies them into gitops.FluxDir()).
var fluxCRDs = []string{"source.toolkit.fluxcd.io_gitrepositories.yaml", "source.toolkit.fluxcd.io_ocirepositories.yaml",
	"source.toolkit.fluxcd.io_buckets.yaml", "source.toolkit.fluxcd.io_externalartifacts.yaml", "kustomize.toolkit.fluxcd.io_kustomizations.yaml"}

func run(args []string, stdout io.Writer) int {
	var c config
	fs := flag.NewFlagSet("gitops", flag.ContinueOnError)
	sz := fs.String("sizes", "500/50/500,1000/100/1000", "comma-separated KUSTOMIZATIONS/ARTIFACTS/APPLICATIONS, measured one after another, each on a fresh stack")
	fs.IntVar(&c.revisions, "revisions", 5, "revision bumps measured per size (one artifact each)")
	fs.IntVar(&c.appSyncs, "app-syncs", 3, "Application syncs to a new revision, and as many reconciledAt-only refreshes, measured per size (the next scrape's time and the agent's CPU)")
	fs.IntVar(&c.scrapes, "scrapes", 50, "timed /metrics scrapes per size")
	fs.DurationVar(&c.settle, "settle", 15*time.Second, "wait after every build is done before reading steady RSS and heap")
	fs.DurationVar(&c.pollInterval, "flux-poll-interval", time.Second, "the agent's --flux-poll-interval (default there 30s; shorter here so a revision's wall time is not a wait)")
	fs.IntVar(&c.concurrency, "concurrency", 16, "concurrent creates")
	fs.StringVar(&c.pprofDir, "pprof-dir", "", "save the agent's CPU profile of the initial builds (from the informers' sync, --profile-seconds long) and its steady heap profile here, per size")
	fs.IntVar(&c.profileSecs, "profile-seconds", 60, "length of the build CPU profile (with --pprof-dir)")
	fs.StringVar(&c.report, "report", "", "also write the Markdown report to this file")
	fs.BoolVar(&c.smoke, "smoke", false, "tiny size, short phases: checks that every figure is produced")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.smoke {
		*sz = "20/2/20"
		c.revisions, c.appSyncs, c.scrapes, c.settle = 1, 1, 5, time.Second
	}
	for _, s := range strings.Split(*sz, ",") {
		var x sizes
		if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d/%d/%d", &x.Kustomizations, &x.Artifacts, &x.Applications); err != nil ||
			x.Artifacts <= 0 || x.Kustomizations < x.Artifacts || x.Kustomizations%x.Artifacts != 0 || x.Applications < 0 {
			fmt.Fprintf(os.Stderr, "gitops: bad size %q (KUSTOMIZATIONS/ARTIFACTS/APPLICATIONS, KUSTOMIZATIONS a multiple of ARTIFACTS)\n", s)
			return 2
		}
		x.Revisions = min(c.revisions, x.Artifacts)
		c.sizes = append(c.sizes, x)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "gitops %s: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	mach := machine()
	logf("machine: %s", mach)

	tmp, err := os.MkdirTemp("", "driftwatch-bench-gitops-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin, err := buildAgent(tmp, logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops:", err)
		return 1
	}
	var results []result
	for _, s := range c.sizes {
		if ctx.Err() != nil {
			break
		}
		logf("size: %s", s)
		r := measureSize(ctx, c, s, bin, tmp, logf)
		if r.err != nil {
			logf("%s: %v", s, r.err)
		}
		results = append(results, r)
	}
	out := render(c, mach, results)
	fmt.Fprint(stdout, out)
	if c.report != "" {
		if err := os.WriteFile(c.report, []byte(out), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gitops:", err)
			return 1
		}
	}
	bad := len(results) != len(c.sizes)
	for _, r := range results {
		if r.err != nil || r.syncWall == 0 || r.builtWall == 0 || r.steadyRSS == 0 || r.heapLive == 0 || len(r.scrapeTimes) == 0 ||
			len(r.revWall) != r.sz.Revisions || (r.sz.Applications > 1 && (len(r.appScrape) != c.appSyncs || len(r.refreshScrape) != c.appSyncs)) {
			fmt.Fprintf(os.Stderr, "gitops: %s incomplete (err: %v)\n", r.sz, r.err)
			bad = true
		}
	}
	if bad {
		return 1
	}
	return 0
}

// buildAgent builds cmd/agent as the e2e stack does (cluster.BuildAgent puts
// it in one stack's folder, removed with it; every size here has its own).
func buildAgent(dir string, logf func(string, ...any)) (string, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "driftwatch")
	t0 := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agent")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agent: %w\n%s", err, out)
	}
	logf("built the agent in %s", time.Since(t0).Round(time.Millisecond))
	return bin, nil
}

// result is one size's figures.
type result struct {
	sz                             sizes
	objects                        int
	created                        time.Duration
	syncWall, builtWall            time.Duration
	syncCPU, builtCPU              float64
	buildPolls                     int
	buildPollMax                   time.Duration // the longest polling scrape during the builds
	buildCPUNet                    float64       // from sync to built, the polling scrapes taken out
	fetches                        float64
	peakRSS, steadyRSS, anon, file float64
	heapInuse, heapLive            float64
	idleCPU                        float64 // CPU s per s
	scrapeTimes                    []time.Duration
	scrapeCPU                      float64 // CPU s per scrape, idle rate taken out
	seriesN, bodyBytes             int
	families                       map[string]int
	revWall                        []time.Duration
	revCPU, revCPUNet              []float64
	revPolls                       []int
	revPollMax                     []time.Duration // the longest polling scrape of each revision
	appScrape                      []time.Duration // the scrape after each Application sync
	appCPU                         []float64       // CPU from the Application's write to that scrape's end, net of idle
	refreshScrape                  []time.Duration // the scrape after each reconciledAt-only status write
	refreshCPU                     []float64
	load                           string
	err                            error
}

func measureSize(ctx context.Context, c config, s sizes, bin, tmp string, logf func(string, ...any)) (res result) {
	res.sz = s
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	cl, err := cluster.Start(sctx, cluster.Options{ESOCRDs: true, ArgoCDCRDs: true, Logf: logf})
	cancel()
	if err != nil {
		res.err = err
		return
	}
	defer func() {
		cl.Stop()
		if err := cl.CheckTornDown(); err != nil {
			logf("teardown: %v", err)
		}
	}()
	for _, f := range fluxCRDs {
		b, err := os.ReadFile(filepath.Join(gitops.FluxDir(), f))
		if err != nil {
			res.err = fmt.Errorf("%w (run test/tools/build.sh)", err)
			return
		}
		if err := cl.InstallCRDs(ctx, b); err != nil {
			res.err = fmt.Errorf("install %s: %w", f, err)
			return
		}
	}
	// The stand-in for source-controller's artifact server.
	src := &sourceServer{files: map[string][]byte{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		res.err = err
		return
	}
	hs := &http.Server{Handler: src, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	rc := *cl.AdminConfig
	rc.QPS, rc.Burst = 5000, 5000
	rc.WarningHandler = rest.NoWarnings{} // the Applications' finalizer name
	cs, err := kubernetes.NewForConfig(&rc)
	if err != nil {
		res.err = err
		return
	}
	dyn, err := dynamic.NewForConfig(&rc)
	if err != nil {
		res.err = err
		return
	}
	w, err := populate(ctx, cs, dyn, s, filepath.Join(tmp, "artifacts"), src, c.concurrency, logf)
	if err != nil {
		res.err = fmt.Errorf("populate: %w", err)
		return
	}
	res.objects, res.created = w.objects, w.created
	logf("created %d objects (and their status) in %s (%.0f/s)", w.objects, w.created.Round(time.Millisecond), float64(w.objects)/w.created.Seconds())
	time.Sleep(3 * time.Second)

	addr, err := freeAddr()
	if err != nil {
		res.err = err
		return
	}
	paddr, err := freeAddr()
	if err != nil {
		res.err = err
		return
	}
	args := []string{"--kubeconfig", cl.AgentKubeconfig, "--log-format", "json", "--log-level", "info",
		"--listen", addr, "--debug-pprof", paddr,
		// The artifact URLs name source-controller's Service; the agent runs
		// outside the cluster and reaches the stand-in on loopback, which its
		// download guard refuses unless allowed.
		"--flux-source-host", ln.Addr().String(), "--flux-allowed-cidrs", "127.0.0.1/32",
		"--flux-poll-interval", c.pollInterval.String()}
	logPath := filepath.Join(cl.LogDir, "agent.log")
	url, purl := "http://"+addr, "http://"+paddr
	t0 := time.Now()
	ch, err := startChild(bin, args, logPath)
	if err != nil {
		res.err = err
		return
	}
	defer ch.stop(10 * time.Second)
	fail := func(err error) result {
		b, _ := os.ReadFile(logPath)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		res.err = fmt.Errorf("%w; agent log tail:\n%s", err, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		return res
	}
	// Informers synced.
	for {
		if ch.exited() {
			return fail(errors.New("the agent exited"))
		}
		if code, _, _, err := get(url + "/readyz"); err == nil && code == 200 {
			break
		}
		if ctx.Err() != nil || time.Since(t0) > 10*time.Minute {
			return fail(errors.New("not ready in time"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.syncWall, res.syncCPU = time.Since(t0), ch.cpuSeconds()
	logf("  informers synced in %s, %.2f CPU s", res.syncWall.Round(time.Millisecond), res.syncCPU)
	var prof chan error
	if c.pprofDir != "" {
		prof = make(chan error, 1)
		dir := filepath.Join(c.pprofDir, fmt.Sprintf("ks%d", s.Kustomizations))
		_ = os.MkdirAll(dir, 0o755)
		go func() {
			prof <- fetchProfile(purl, fmt.Sprintf("/debug/pprof/profile?seconds=%d", c.profileSecs), filepath.Join(dir, "build.cpu.pprof"))
		}()
		defer func() {
			if err := <-prof; err != nil {
				logf("  build profile: %v", err)
			}
		}()
	}
	// Every Kustomization built: every artifact downloaded once, and the
	// finding of each artifact's last-built Kustomization present.
	drift := fmt.Sprintf(`-k%d"`, w.drifted)
	for {
		if ch.exited() {
			return fail(errors.New("the agent exited"))
		}
		_, body, d, err := get(url + "/metrics")
		res.buildPolls++
		res.buildPollMax = max(res.buildPollMax, d)
		if err == nil {
			res.fetches, _ = metricValue(body, `driftwatch_flux_artifact_fetches_total{result="ok"}`)
			found := series(body, "driftwatch_gitops_synced_entries_missing", `source="flux"`, drift)
			if int(res.fetches) >= s.Artifacts && found >= s.Artifacts {
				break
			}
		}
		if ctx.Err() != nil || time.Since(t0) > 60*time.Minute {
			return fail(fmt.Errorf("builds not done in time (%.0f downloads)", res.fetches))
		}
		time.Sleep(time.Second)
	}
	res.builtWall, res.builtCPU = time.Since(t0), ch.cpuSeconds()
	logf("  every Kustomization built after %s, %.2f CPU s in all (%.0f downloads, %d scrapes polled)", res.builtWall.Round(time.Millisecond),
		res.builtCPU, res.fetches, res.buildPolls)
	// Steady state.
	time.Sleep(c.settle)
	res.peakRSS, res.steadyRSS = ch.statusKB("VmHWM")*1024, ch.statusKB("VmRSS")*1024
	res.anon, res.file = ch.statusKB("RssAnon")*1024, ch.statusKB("RssFile")*1024
	idle := min(c.settle, 5*time.Second)
	i0 := ch.cpuSeconds()
	time.Sleep(idle)
	res.idleCPU = (ch.cpuSeconds() - i0) / idle.Seconds()
	if _, body, _, err := get(url + "/metrics"); err == nil {
		res.heapInuse, _ = metricValue(body, "go_memstats_heap_inuse_bytes")
	} else {
		return fail(err)
	}
	if _, _, _, err := get(purl + "/debug/pprof/heap?gc=1"); err != nil {
		return fail(err)
	}
	if _, body, _, err := get(url + "/metrics"); err == nil {
		res.heapLive, _ = metricValue(body, "go_memstats_heap_alloc_bytes")
	} else {
		return fail(err)
	}
	if c.pprofDir != "" {
		if err := fetchProfile(purl, "/debug/pprof/heap?gc=1", filepath.Join(c.pprofDir, fmt.Sprintf("ks%d", s.Kustomizations), "heap.pprof")); err != nil {
			logf("  heap profile: %v", err)
		}
	}
	logf("  steady RSS %.1f MiB (anonymous %.1f, file %.1f), peak %.1f, heap in use %.1f, live heap %.1f MiB; idle %.3f CPU s/s",
		res.steadyRSS/mib, res.anon/mib, res.file/mib, res.peakRSS/mib, res.heapInuse/mib, res.heapLive/mib, res.idleCPU)
	// Scrapes, back to back.
	c0, s0 := ch.cpuSeconds(), time.Now()
	var last []byte
	for i := 0; i < c.scrapes; i++ {
		code, body, d, err := get(url + "/metrics")
		if err != nil || code != 200 {
			return fail(fmt.Errorf("scrape: %v (HTTP %d)", err, code))
		}
		res.scrapeTimes = append(res.scrapeTimes, d)
		last = body
	}
	res.scrapeCPU = max(0, ch.cpuSeconds()-c0-res.idleCPU*time.Since(s0).Seconds()) / float64(c.scrapes)
	res.buildCPUNet = max(0, res.builtCPU-res.syncCPU-float64(res.buildPolls)*res.scrapeCPU)
	res.bodyBytes, res.families = len(last), familySeries(last)
	for _, line := range strings.Split(string(last), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			res.seriesN++
		}
	}
	logf("  scrape p50 %s p99 %s, %.1f ms CPU each, %d series, %d bytes", quantile(res.scrapeTimes, 0.5).Round(time.Millisecond),
		quantile(res.scrapeTimes, 0.99).Round(time.Millisecond), res.scrapeCPU*1000, res.seriesN, res.bodyBytes)
	// New revisions: one artifact at a time, its content and revision bumped
	// (NEW_KEY added to db-0) while its Kustomizations still report the old
	// one applied, as between source-controller's artifact and
	// kustomize-controller's apply: reflected once every Kustomization of it
	// reports NEW_KEY pending.
	for r := 0; r < s.Revisions && ctx.Err() == nil; r++ {
		art := w.next[r]
		src.publish(art)
		gr := dyn.Resource(gitGVR).Namespace(fluxNS)
		t1, c1 := time.Now(), ch.cpuSeconds()
		obj, err := gr.Get(ctx, sourceName(r), metav1.GetOptions{})
		if err == nil {
			obj.Object["status"] = gitStatus(art)(obj)
			_, err = gr.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		}
		if err != nil {
			return fail(fmt.Errorf("revision: %w", err))
		}
		polls, pollMax := 0, time.Duration(0)
		want := `sync_name="` + sourceName(r) + `-k`
		for {
			time.Sleep(250 * time.Millisecond)
			_, body, d, err := get(url + "/metrics")
			polls++
			pollMax = max(pollMax, d)
			if err == nil && series(body, "driftwatch_secret_key_pending_sync", `key="`+newKey+`"`, want) >= w.per {
				break
			}
			if ctx.Err() != nil || time.Since(t1) > 10*time.Minute {
				return fail(errors.New("revision not reflected in time"))
			}
		}
		wall, cpu := time.Since(t1), ch.cpuSeconds()-c1
		res.revWall = append(res.revWall, wall)
		res.revCPU = append(res.revCPU, cpu)
		res.revCPUNet = append(res.revCPUNet, max(0, cpu-res.idleCPU*wall.Seconds()-float64(polls)*res.scrapeCPU))
		res.revPolls = append(res.revPolls, polls)
		res.revPollMax = append(res.revPollMax, pollMax)
		logf("  revision of %s reflected in %s, %.2f CPU s (%.2f net of idle and %d polling scrapes, the longest %s)", sourceName(r), wall.Round(time.Millisecond),
			cpu, res.revCPUNet[r], polls, pollMax.Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}
	// Applications, one at a time: a sync to a new revision (what the
	// application-controller writes: sync and operationState at the new
	// revision, one more history entry), then a refresh (status.reconciledAt
	// alone, as every reconciliation writes it, by default every 3 minutes
	// per Application); each followed by the next scrape, timed, with the
	// agent's CPU from the write to that scrape's end.
	ar := dyn.Resource(appGVR).Namespace(argoNS)
	for i := 0; i < 2*c.appSyncs && s.Applications > 1 && ctx.Err() == nil; i++ {
		refresh := i >= c.appSyncs
		name := appName(1 + i*7%(s.Applications-1))
		t1, c1 := time.Now(), ch.cpuSeconds()
		obj, err := ar.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if refresh {
				if st, ok := obj.Object["status"].(map[string]any); ok {
					st["reconciledAt"] = time.Now().UTC().Add(time.Duration(i) * time.Second).Format(time.RFC3339)
				}
			} else {
				syncTo(obj, fmt.Sprintf("%040x", 5000000+i))
			}
			_, err = ar.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if err != nil {
			return fail(fmt.Errorf("application write: %w", err))
		}
		time.Sleep(2 * time.Second) // the watch event lands
		_, _, d, err := get(url + "/metrics")
		if err != nil {
			return fail(fmt.Errorf("scrape after an application write: %w", err))
		}
		wall, cpu := time.Since(t1), ch.cpuSeconds()-c1
		net := max(0, cpu-res.idleCPU*wall.Seconds())
		what := "sync"
		if refresh {
			what = "refresh (reconciledAt only)"
			res.refreshScrape, res.refreshCPU = append(res.refreshScrape, d), append(res.refreshCPU, net)
		} else {
			res.appScrape, res.appCPU = append(res.appScrape, d), append(res.appCPU, net)
		}
		logf("  %s of Application %s: next scrape %s, %.2f CPU s net of idle", what, name, d.Round(time.Millisecond), net)
		time.Sleep(2 * time.Second)
	}
	res.load = loadAvg()
	return res
}

func fetchProfile(base, path, file string) error {
	c := &http.Client{Timeout: 30 * time.Minute}
	resp, err := c.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
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
	return fmt.Sprintf("%d CPUs, %s, %s, load average at start %s", runtime.NumCPU(), model, runtime.Version(), loadAvg())
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

func render(c config, mach string, rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nMachine: %s; load average at end %s\n", mach, loadAvg())
	fmt.Fprintf(&b, "Agent: restricted kubeconfig, --flux-poll-interval %s, --flux-source-host (the local artifact server), --flux-allowed-cidrs 127.0.0.1/32; no --argocd-server\n\n", c.pollInterval)
	fmt.Fprintln(&b, "| size | objects | sync wall s | sync CPU s | all built wall s | build CPU s (net) | build CPU ms/Kustomization (net) | steady RSS MiB (anon / file) | peak RSS MiB | heap in use MiB | live heap MiB | idle CPU s/s | revision wall s | revision CPU s (net) | scrape p50/p99 ms | scrape CPU ms | series | load at end |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rs {
		if r.err != nil {
			fmt.Fprintf(&b, "| %s | error: %s |||||||||||||||||\n", r.sz, strings.ReplaceAll(strings.SplitN(r.err.Error(), "\n", 2)[0], "|", "/"))
			continue
		}
		build := r.builtCPU - r.syncCPU
		fmt.Fprintf(&b, "| %d KS / %d artifacts / %d apps | %d | %.1f | %.2f | %.1f | %.1f (%.1f) | %.0f | %.1f (%.1f / %.1f) | %.1f | %.1f | %.1f | %.3f | %s | %s | %d / %d | %.1f | %d | %s |\n",
			r.sz.Kustomizations, r.sz.Artifacts, r.sz.Applications, r.objects, r.syncWall.Seconds(), r.syncCPU, r.builtWall.Seconds(), build, r.buildCPUNet,
			1000*r.buildCPUNet/float64(r.sz.Kustomizations), r.steadyRSS/mib, r.anon/mib, r.file/mib, r.peakRSS/mib, r.heapInuse/mib, r.heapLive/mib, r.idleCPU,
			orDash(len(r.revWall) > 0, fmt.Sprintf("%.1f", medianDur(r.revWall).Seconds())), orDash(len(r.revWall) > 0, fmt.Sprintf("%.2f (%.2f)", median(r.revCPU), median(r.revCPUNet))),
			quantile(r.scrapeTimes, 0.5).Milliseconds(), quantile(r.scrapeTimes, 0.99).Milliseconds(), r.scrapeCPU*1000, r.seriesN, r.load)
	}
	b.WriteString("\nbuild CPU: from the informers' sync to the last Kustomization built, gross and net of the 1 s polling scrapes (their count × the scrape CPU); " +
		"revision: median of the bumps, wall from the status write to the scrape showing every Kustomization of the artifact rebuilt " +
		"(polled every 250 ms; includes the wait for the next poll round), CPU net of the idle rate and of the polling scrapes.\n")
	var ok []result
	for _, r := range rs {
		if r.err == nil {
			ok = append(ok, r)
		}
	}
	b.WriteString("\nThe scrape that follows a GitOps change (the findings of every namespace evaluated again), against the steady scrape:\n\n" +
		"| size | steady scrape p50 ms | longest scrape during the initial builds s | longest scrape of a revision s (median) | scrape after an Application sync s (median) | CPU s per Application sync (median, net of idle) | scrape after an Application refresh s (median) | CPU s per refresh |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range ok {
		fmt.Fprintf(&b, "| %d KS / %d apps | %d | %.1f | %.1f | %.1f | %.2f | %.1f | %.2f |\n", r.sz.Kustomizations, r.sz.Applications,
			quantile(r.scrapeTimes, 0.5).Milliseconds(), r.buildPollMax.Seconds(), medianDur(r.revPollMax).Seconds(),
			medianDur(r.appScrape).Seconds(), median(r.appCPU), medianDur(r.refreshScrape).Seconds(), median(r.refreshCPU)) // 0 when not measured
	}
	if len(ok) >= 2 {
		a, z := ok[0], ok[len(ok)-1]
		ratio := func(x, y float64) string {
			if x <= 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f×", y/x)
		}
		fmt.Fprintf(&b, "\nLinearity, %s → %s (Kustomizations %s, Applications %s, objects %s): sync CPU %s, build CPU (net) %s, steady RSS %s (anonymous %s), live heap %s, "+
			"scrape p50 %s, scrape CPU %s, series %s, revision CPU (net) %s\n",
			a.sz, z.sz, ratio(float64(a.sz.Kustomizations), float64(z.sz.Kustomizations)), ratio(float64(a.sz.Applications), float64(z.sz.Applications)),
			ratio(float64(a.objects), float64(z.objects)), ratio(a.syncCPU, z.syncCPU), ratio(a.buildCPUNet, z.buildCPUNet),
			ratio(a.steadyRSS, z.steadyRSS), ratio(a.anon, z.anon), ratio(a.heapLive, z.heapLive),
			ratio(float64(quantile(a.scrapeTimes, 0.5)), float64(quantile(z.scrapeTimes, 0.5))), ratio(a.scrapeCPU, z.scrapeCPU),
			ratio(float64(a.seriesN), float64(z.seriesN)), ratio(median(a.revCPUNet), median(z.revCPUNet)))
	}
	for _, r := range ok {
		fmt.Fprintf(&b, "\n%s: %d objects created in %s; %.0f artifact downloads for the initial builds; revisions (wall s / CPU s / net CPU s):", r.sz,
			r.objects, r.created.Round(time.Second), r.fetches)
		for i := range r.revWall {
			fmt.Fprintf(&b, " %.1f/%.2f/%.2f", r.revWall[i].Seconds(), r.revCPU[i], r.revCPUNet[i])
		}
		b.WriteString("\nSeries per driftwatch_ family (findings and health, value-free):")
		names := make([]string, 0, len(r.families))
		for n := range r.families {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, " %s %d;", strings.TrimPrefix(n, "driftwatch_"), r.families[n])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// orDash is s, or "–" for a figure not measured.
func orDash(ok bool, s string) string {
	if !ok {
		return "–"
	}
	return s
}
