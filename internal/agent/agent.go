// Package agent wires the informer layer, the model, the collectors and the HTTP
// server into one runnable agent. cmd/agent parses flags into a Config and calls Run.
package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	dwcollectors "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/kube"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

// Config is everything the agent needs besides its clients.
type Config struct {
	// Build identifies the binary (cmd/agent sets it from -ldflags):
	// driftwatch_build_info and the page's footer. Empty fields read "dev"
	// and "unknown".
	Build             dwcollectors.BuildInfo
	Listen            string
	Namespaces        []string
	ExcludeNamespaces []string
	Shard, Shards     int
	// ShardWatch: how a shard watches the namespaced resources, "cluster"
	// (default: one watch per resource, other shards' objects reduced to
	// stubs) or "namespaces" (one watch per resource and own namespace).
	ShardWatch        string
	DiscoveryInterval time.Duration
	Findings          dwcollectors.Config
	History           model.HistoryOptions
	Logger            *slog.Logger
	// OnListen, when set, is called with the bound address (tests, --demo banner).
	OnListen func(addr string)
	// HealthListen (--health-probe-bind-address, controller-runtime's name)
	// serves /healthz and /readyz alone, plain HTTP without authentication
	// whatever --web.config.file says: they carry no data, and the kubelet's
	// probes can then check readiness with basic auth on the main listener.
	// "" serves them on Listen only (they stay there in any case).
	HealthListen string
	// PprofListen (--debug-pprof, a loopback address) serves net/http/pprof
	// with the same web configuration as Listen (TLS, basic auth). "": off.
	PprofListen string
	// OnListenSide, when set, is called with the bound address of the
	// "health" and "pprof" listeners (tests).
	OnListenSide func(server, addr string)
	// Web: the findings page and API, TLS and basic auth (web.go).
	Web WebConfig
	// EvaluateAhead (--evaluate-ahead): evaluate the namespaces that changed
	// shortly before each scraper's next scrape is due (ahead.go).
	EvaluateAhead bool
	// KeepExecutablePages (--return-executable-pages=false): leave the
	// executable's resident pages alone instead of giving them back to the
	// kernel before the sync and after it (exepages_linux.go).
	KeepExecutablePages bool
	// SteadyGCPercent, when positive, is set as the GC percent once the
	// caches have synced (cmd/agent: 50 unless GOGC is set).
	SteadyGCPercent int
}

// Clients are the API clients the agent reads through.
type Clients struct {
	Core      kubernetes.Interface
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Wire is the protobuf connection of the wire decoder (kube.Options.Wire);
	// nil: Secrets and Pods through Core's typed informers.
	Wire *rest.Config
}

// Agent is a running agent's parts, exposed for tests and the check command.
type Agent struct {
	Store   *model.Store
	Manager *kube.Manager
	// Registry holds every collector, the findings included (tests, the check
	// command). /metrics encodes the others through client_golang and appends
	// Findings.WriteText, which reuses the text of unchanged namespaces.
	Registry *prometheus.Registry
	Findings *dwcollectors.Findings
	others   *prometheus.Registry
	log      *slog.Logger
	ui       http.Handler
	// owns says which namespaces this shard exports (nil: unsharded).
	owns func(string) bool
	// fp is the transforms' Fingerprinter; dynamic reads what the Flux
	// poller builds from (a Kustomization's spec).
	fp      *model.Fingerprinter
	dynamic dynamic.Interface
	// sources exports the desired-state pollers' health (registered with
	// the first poller started).
	sourcesMu sync.Mutex
	sources   *dwcollectors.DesiredSources
	// ahead schedules Findings.Prepare before the scrapes (nil: off).
	ahead *aheadScheduler
}

// addDesiredSource exports a desired-state poller's health as
// driftwatch_desired_source_*{source=name}.
func (a *Agent) addDesiredSource(name string, src dwcollectors.DesiredSource) error {
	a.sourcesMu.Lock()
	defer a.sourcesMu.Unlock()
	if a.sources == nil {
		s := dwcollectors.NewDesiredSources()
		if err := a.Register(s); err != nil {
			return err
		}
		a.sources = s
	}
	a.sources.Add(name, src)
	return nil
}

// New builds an agent without starting it.
func New(c Clients, cfg Config) *Agent {
	log := cfg.Logger
	if cfg.Build.Version == "" {
		cfg.Build.Version = "dev"
	}
	if cfg.Build.Revision == "" {
		cfg.Build.Revision = "unknown"
	}
	if log == nil {
		log = slog.Default()
	}
	store := model.NewStore(model.NewHistory(cfg.History))
	tr := &transform.Transformer{FP: model.NewFingerprinter(), Logger: log}
	opts := kube.Options{
		Namespaces:        cfg.Namespaces,
		ExcludeNamespaces: cfg.ExcludeNamespaces,
		DiscoveryInterval: cfg.DiscoveryInterval,
		Logger:            log,
		Wire:              c.Wire,
	}
	var owns func(string) bool
	if cfg.Shards > 1 {
		opts.NamespaceFilter = ShardFilter(cfg.Shard, cfg.Shards)
		opts.ScopedWatches = cfg.ShardWatch == ShardWatchNamespaces
		owns = ShardOwns(cfg.Shard, cfg.Shards)
	}
	mgr := kube.NewManager(c.Core, c.Dynamic, c.Discovery, store, tr, opts)
	if owns != nil {
		// A namespace created while the agent runs is reported once its
		// namespace-scoped watches have listed it (always, with the
		// cluster-wide watch).
		cfg.Findings.OwnsNamespace = func(ns string) bool { return owns(ns) && mgr.NamespaceSynced(ns) }
	}
	if cfg.Findings.Logger == nil {
		cfg.Findings.Logger = log
	}
	if cfg.Findings.Live == nil {
		// No finding before the initial sync of every resource the agent
		// watches (what /readyz waits for), latched: afterwards each detector
		// runs when the resources it needs are available.
		var live atomic.Bool
		cfg.Findings.Live = func() bool {
			if live.Load() {
				return true
			}
			if mgr.Ready() {
				live.Store(true)
				return true
			}
			return false
		}
	}
	findings := dwcollectors.NewFindings(store, mgr, cfg.Findings)
	others := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		dwcollectors.NewSelf(store, mgr, mgr, cfg.Build).WithDecodeErrors(tr),
	}
	reg, rest := prometheus.NewRegistry(), prometheus.NewRegistry()
	reg.MustRegister(append(others, findings)...)
	rest.MustRegister(others...)
	a := &Agent{Store: store, Manager: mgr, Registry: reg, Findings: findings, others: rest, log: log, owns: owns, fp: tr.FP, dynamic: c.Dynamic}
	a.ui = a.uiHandler(cfg.Web, cfg.Build.Version)
	if cfg.EvaluateAhead {
		a.ahead = newAheadScheduler()
	}
	return a
}

// Register adds a collector to what /metrics serves (and to Registry).
func (a *Agent) Register(c prometheus.Collector) error {
	if err := a.Registry.Register(c); err != nil {
		return err
	}
	if err := a.others.Register(c); err != nil {
		a.Registry.Unregister(c)
		return err
	}
	return nil
}

// ShardFilter assigns namespaces to shards by a stable FNV-1a hash, so every join
// between objects of one namespace stays in one shard.
func ShardFilter(shard, shards int) func(string) bool {
	return func(ns string) bool {
		h := fnv.New32a()
		h.Write([]byte(ns))
		return int(h.Sum32()%uint32(shards)) == shard
	}
}

// Shard watch modes (Config.ShardWatch, --shard-watch).
const (
	ShardWatchCluster    = "cluster"
	ShardWatchNamespaces = "namespaces"
)

// ShardOwns says which namespaces' findings shard exports: those ShardFilter
// assigns to it, and, for shard 0, the findings about cluster-scoped objects
// (namespace "": a ClusterSecretStore that is not Ready), which every shard
// reads but exactly one must report.
func ShardOwns(shard, shards int) func(string) bool {
	keep := ShardFilter(shard, shards)
	return func(ns string) bool {
		if ns == "" {
			return shard == 0
		}
		return keep(ns)
	}
}

// Handler serves /metrics, /healthz and /readyz, and with the UI on the
// findings page (/), /secret/NS/NAME and /api/v1/findings.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metricsHandler())
	a.handleProbes(mux)
	if a.ui != nil {
		mux.Handle("/", a.ui)
		return mux
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("driftwatch: /metrics /healthz /readyz\n"))
	})
	return mux
}

// ProbeHandler serves /healthz and /readyz alone (--health-probe-bind-address):
// liveness, and readiness once every enabled informer has synced. Nothing
// else: no finding, no name but the resources still syncing.
func (a *Agent) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	a.handleProbes(mux)
	return mux
}

func (a *Agent) handleProbes(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if a.Manager.Ready() {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "waiting for informers to sync: %s\n", strings.Join(a.Manager.Waiting(), ","))
	})
}

// Server timeouts (HardenServer). A scrape of the 20k Secrets is
// encoded in well under a second; WriteTimeout bounds what a client that reads
// slowly (or not at all) can hold, IdleTimeout outlives a one-minute scrape
// interval so Prometheus keeps its connection.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = time.Minute
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
)

// HardenServer sets the timeouts and header limit every listener of the agent
// serves with: no client can hold a connection, a goroutine or a page slot
// (ui.Options.MaxConcurrent) longer than these.
func HardenServer(srv *http.Server) {
	srv.ReadHeaderTimeout = ReadHeaderTimeout
	srv.ReadTimeout = ReadTimeout
	srv.WriteTimeout = WriteTimeout
	srv.IdleTimeout = IdleTimeout
	srv.MaxHeaderBytes = MaxHeaderBytes
}

// Run serves HTTP and runs the informers until ctx ends, then shuts down gracefully.
func (a *Agent) Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := ValidateWebConfig(cfg.Web.ConfigFile); err != nil {
		return err
	}
	if cfg.PprofListen != "" {
		if err := CheckPprofAddr(cfg.PprofListen); err != nil {
			return err
		}
	}
	// Every listener first, so an address in use stops the agent before
	// anything is served.
	type server struct {
		name string
		ln   net.Listener
		srv  *http.Server
		web  bool // with the web configuration (TLS, basic auth)
	}
	var servers []server
	closeAll := func() {
		for _, s := range servers {
			_ = s.ln.Close()
		}
	}
	for _, l := range []struct {
		name, flag, addr string
		h                func() http.Handler
		web              bool
	}{
		{"main", "--listen", cfg.Listen, a.Handler, true},
		{"health", "--health-probe-bind-address", cfg.HealthListen, a.ProbeHandler, false},
		{"pprof", "--debug-pprof", cfg.PprofListen, pprofHandler, true},
	} {
		if l.name != "main" && l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeAll()
			return fmt.Errorf("%s %s: %w", l.flag, l.addr, err)
		}
		srv := &http.Server{Handler: l.h()}
		HardenServer(srv)
		if l.name == "pprof" {
			// A CPU profile or trace streams for ?seconds=N (30 by default):
			// no write deadline on the loopback-only pprof listener.
			srv.WriteTimeout = 0
		}
		servers = append(servers, server{l.name, ln, srv, l.web})
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() {
			var err error
			if s.web {
				err = serve(s.ln, s.srv, cfg.Web.ConfigFile, log)
			} else {
				err = s.srv.Serve(s.ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s listener: %w", s.name, err)
			}
		}()
	}
	mainAddr := servers[0].ln.Addr().String()
	log.Info("serving", "addr", mainAddr, "metrics", "http://"+mainAddr+"/metrics")
	for _, s := range servers[1:] {
		addr := s.ln.Addr().String()
		switch s.name {
		case "health":
			log.Info("serving /healthz and /readyz alone, without authentication (they carry no data)", "addr", addr)
		case "pprof":
			log.Info("pprof listening", "addr", addr, "web_config", cfg.Web.ConfigFile != "")
		}
		if cfg.OnListenSide != nil {
			cfg.OnListenSide(s.name, addr)
		}
	}
	if cfg.Web.UI && !cfg.Web.UIOptions.NoSecretPage {
		auth := "none: anyone who reaches " + mainAddr + " can read it"
		if cfg.Web.ConfigFile != "" {
			auth = "as --web.config.file says"
		}
		log.Info("serving /secret/NAMESPACE/NAME: the key names, writers and readers of any Secret the agent watches (never a value); --ui.secret-page=false turns it off",
			"auth", auth)
	}
	if cfg.OnListen != nil {
		cfg.OnListen(mainAddr)
	}
	// Before the sync too: the start (package initialisation, every API
	// group's scheme registration) left whole 2 MiB regions resident, and
	// the sync's peak RSS would count them.
	returnExe := !cfg.KeepExecutablePages && logReturnExecutablePages(log, "before the sync")
	mgrDone := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(mgrDone) }()
	go a.logWhenReady(ctx, log, returnExe, cfg.SteadyGCPercent)
	if a.ahead != nil {
		go a.runAhead(ctx, log)
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.srv.Shutdown(sctx)
	}
	<-mgrDone
	return err
}

func (a *Agent) logWhenReady(ctx context.Context, log *slog.Logger, returnExe bool, gcPercent int) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if a.Manager.Ready() {
				var parts []string
				for _, st := range a.Manager.States() {
					if !st.Available() {
						parts = append(parts, string(st.Resource)+"="+st.Reason)
					}
				}
				log.Info("caches synced; findings are live", "after", time.Since(start).Round(time.Millisecond).String(),
					"unavailable", strings.Join(parts, ","))
				returnInitialListMemory(log)
				if gcPercent > 0 {
					prev := debug.SetGCPercent(gcPercent)
					log.Info("caches synced: garbage collection at a smaller heap growth from now on (GOGC unset; set GOGC to choose)",
						"gcPercent", fmt.Sprintf("%d -> %d", prev, gcPercent))
				}
				if returnExe {
					logReturnExecutablePages(log, "after the sync")
				}
				return
			}
		}
	}
}

// logReturnExecutablePages runs returnExecutablePages and says what it did,
// and whether it worked: a failure (an old kernel, a seccomp profile that
// refuses madvise) costs only the memory, and is logged as a warning once
// (Run does not try again after the sync).
func logReturnExecutablePages(log *slog.Logger, when string) bool {
	st, err := returnExecutablePages()
	mib := func(kib int64) string {
		if kib < 0 {
			return "?"
		}
		return fmt.Sprintf("%.1f", float64(kib)/1024)
	}
	if err != nil {
		log.Warn("could not return the executable's resident pages to the kernel; they stay in the agent's RSS (--return-executable-pages=false)",
			"when", when, "err", err, "residentFileMiB", mib(st.RssFileBeforeKiB))
		return false
	}
	log.Info("returned the executable's resident pages to the kernel; the code the agent runs faults back in",
		"when", when, "mappings", st.Mappings, "passes", st.Passes, "residentFileMiB", mib(st.RssFileBeforeKiB)+" -> "+mib(st.RssFileAfterKiB),
		"mappedIn2MiBFoliosMiB", mib(st.PmdMappedKiB))
	return true
}

// returnInitialListMemory collects the initial lists' garbage and returns the
// free heap to the OS, once, when the caches have synced. The lists arrive as
// pages of full objects that the transforms reduce to records: the heap
// peaks during the sync at several times what stays live, and the runtime's
// background scavenger gives the difference back over minutes, meanwhile
// counted in the process's RSS and the container's memory (at 5x the bench's
// size: anonymous memory 327 MiB against 221 MiB of heap in use, 15 s after
// the sync). One forced collection: tens of milliseconds at that size.
func returnInitialListMemory(log *slog.Logger) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	held := func(m *runtime.MemStats) uint64 { return m.HeapSys - m.HeapReleased }
	log.Info("returned the initial lists' free heap to the OS",
		"heapHeldMiB", fmt.Sprintf("%.1f -> %.1f", float64(held(&before))/(1<<20), float64(held(&after))/(1<<20)),
		"heapInUseMiB", fmt.Sprintf("%.1f -> %.1f", float64(before.HeapInuse)/(1<<20), float64(after.HeapInuse)/(1<<20)))
}
