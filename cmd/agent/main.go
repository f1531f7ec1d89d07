// Command agent is driftwatch: it watches Secrets, Pods, ServiceAccounts, ESO
// ExternalSecrets and stores, Helm releases and Argo CD Applications through
// informers, and exports the secret-delivery failures it finds as Prometheus metrics.
//
//	agent [flags]                      run against a cluster (or --demo)
//	agent compare NS/LIVE NS/CHECK     key-by-key verdicts of two Secrets, values never printed
//	agent check [flags]                one-shot run of every detector, for CI and migrations
//	agent rules [--job J] [--runbook-base-url U]  the alerting rules for this installation
//	agent lint [flags] [PATH|-]...     check rendered manifests offline, for CI and pre-commit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	dwcollectors "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/argocd/apiclient"
	"github.com/driftwatch/driftwatch/internal/cli"
	"github.com/driftwatch/driftwatch/internal/demo"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/desired"
	"github.com/driftwatch/driftwatch/internal/kube"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Set with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = "unknown"
)

// DefaultListen is driftwatch's default metrics address. 9742 is not taken by a
// well-known exporter.
const DefaultListen = ":9742"

// defaultGCPercent is the agent's GOGC once its caches have synced, when the
// environment sets none (the sync itself runs at Go's default, whose fewer
// collections it needs: its garbage is many times what stays live). Go's
// default, 100, lets the heap grow to twice what is live before a collection:
// under steady Secret churn and scrapes the agent's anonymous memory read
// 119 MiB at the bench's size (live heap 46 MiB), against 91 MiB at 50, for no
// CPU per update the bench could tell apart (docs/performance.md, "The
// executable's pages"). Prometheus itself runs at 75 unless GOGC is set.
const defaultGCPercent = 50

// defaultGC returns the GC percent to set: defaultGCPercent unless the
// environment sets GOGC (which the runtime has applied already).
func defaultGC(lookupEnv func(string) (string, bool)) (int, bool) {
	if _, set := lookupEnv("GOGC"); set {
		return 0, false
	}
	return defaultGCPercent, true
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	kubeconfig, kubeContext string
	listen                  string
	namespaces, excludeNS   string
	logFormat, logLevel     string
	demo                    bool
	noKeyLabel              bool
	inventory               bool
	evaluateAhead           bool
	returnExePages          bool
	overdueFactor           float64
	discoveryInterval       time.Duration
	shard, shards           int
	shardWatch              string
	typedDecode             bool
	flipWindow              time.Duration
	flapThreshold           int
	argo                    agent.ArgoCDConfig
	flux                    agent.FluxConfig
	fluxHosts, fluxCIDRs    string
	notConverging           time.Duration
	esoSA                   string
	pprofAddr               string
	healthAddr              string
	web                     agent.WebConfig
}

// envName is the environment variable that sets a flag: DRIFTWATCH_<FLAG>, with
// dashes and dots as underscores (--web.config.file: DRIFTWATCH_WEB_CONFIG_FILE).
func envName(flagName string) string {
	return "DRIFTWATCH_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// parseFlags sets each flag from its DRIFTWATCH_<FLAG> environment variable
// through the flag set, so a value that does not parse is an error naming the
// variable, then parses the command line, which wins over the environment.
func parseFlags(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil {
			return
		}
		if v, ok := lookup(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", envName(f.Name), e)
			}
		}
	})
	if err != nil {
		return err
	}
	return fs.Parse(args)
}

func newFlags(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context to use")
	fs.StringVar(&o.listen, "listen", DefaultListen, "address for /metrics, /healthz and /readyz (and the findings page)")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", "", "also serve /healthz and /readyz alone on this address (e.g. :8081), plain HTTP without authentication whatever --web.config.file says (they carry no data), for the kubelet's probes; off by default")
	fs.StringVar(&o.namespaces, "namespaces", "", "comma-separated namespaces to watch (default: all)")
	fs.StringVar(&o.excludeNS, "exclude-namespaces", "", "comma-separated namespaces to ignore (filtered server-side)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&o.demo, "demo", false, "run against an embedded simulated cluster (no kubeconfig needed)")
	fs.BoolVar(&o.noKeyLabel, "no-key-label", false, "do not export key names: report missing keys as counts per Secret")
	fs.BoolVar(&o.evaluateAhead, "evaluate-ahead", false, "evaluate the namespaces that changed in passes shortly before each scraper's next scrape is due (learned from the gap between its last two scrapes, when at least 5s), so that a scrape under churn does not re-evaluate every namespace while Prometheus waits: shorter scrapes for more CPU under heavy churn")
	fs.BoolVar(&o.returnExePages, "return-executable-pages", true, "before the sync and once the caches have synced, give the kernel back the pages of the agent's executable that the start left resident (madvise MADV_PAGEOUT, then POSIX_FADV_DONTNEED; Linux): the code the agent runs faults back in, the rest (most of a 132 MB binary, kept resident in 2 MiB folios) leaves its RSS")
	fs.BoolVar(&o.inventory, "inventory", false, "export the inventory driftwatch_secret_consumer_info and _consumer_pods: one series per consumed Secret and workload, so its cardinality grows with the cluster, not with findings (off by default)")
	fs.Float64Var(&o.overdueFactor, "sync-overdue-factor", dwcollectors.DefaultOverdueFactor, "an ExternalSecret is overdue when its sync age exceeds this multiple of refreshInterval")
	fs.DurationVar(&o.discoveryInterval, "discovery-interval", kube.DefaultDiscoveryInterval, "how often optional APIs (ESO, Argo CD) and lost permissions are re-checked")
	fs.IntVar(&o.shard, "shard", 0, "this agent's shard (0-based), with --total-shards")
	fs.IntVar(&o.shards, "total-shards", 1, "number of shards; namespaces are assigned by a stable hash")
	fs.StringVar(&o.shardWatch, "shard-watch", agent.ShardWatchCluster, "how a shard watches Secrets, Pods, ServiceAccounts, ExternalSecrets and SecretStores: cluster (one watch per resource; other shards' objects are decoded and dropped) or namespaces (one watch per resource and namespace of the shard, started as namespaces appear; needs every namespace watched)")
	fs.BoolVar(&o.typedDecode, "typed-decode", false, "decode Secrets and Pods into typed objects, and ExternalSecrets into unstructured ones, before reducing them (the paths before the wire decoder and the JSON reader, which read the responses straight into the value-free records; for comparison and as an escape hatch)")
	fs.DurationVar(&o.flipWindow, "flip-window", model.DefaultHistoryWindow, "how long a Secret's value changes are remembered to detect flips")
	fs.StringVar(&o.argo.Server, "argocd-server", "", "Argo CD API URL; enables the argocd expectation source (desired state from managed-resources)")
	fs.StringVar(&o.argo.TokenFile, "argocd-token-file", "", "file holding the Argo CD API token (must not be world-readable; never pass a token as a flag)")
	fs.StringVar(&o.argo.CAFile, "argocd-ca-file", "", "CA bundle to verify the Argo CD API's certificate")
	fs.BoolVar(&o.argo.Insecure, "argocd-insecure", false, "skip TLS verification of the Argo CD API and allow http:// (testing only)")
	fs.DurationVar(&o.argo.PollInterval, "argocd-poll-interval", apiclient.DefaultInterval, "interval between rounds of Argo CD API polling")
	fs.DurationVar(&o.argo.Timeout, "argocd-timeout", apiclient.DefaultTimeout, "timeout of one Argo CD API call")
	fs.Float64Var(&o.argo.RPS, "argocd-rps", apiclient.DefaultRPS, "maximum Argo CD API requests per second")
	fs.BoolVar(&o.flux.Artifacts, "flux-artifacts", true, "read the artifacts Flux's source-controller serves (status.artifact.url) and build them with Flux's own kustomize for what Kustomizations apply: the flux expectation source and the Flux detectors")
	fs.StringVar(&o.flux.Namespace, "flux-namespace", flux.DefaultNamespace, "namespace of Flux's controllers: artifact URLs must name its source-controller or source-watcher Service (or --flux-allowed-hosts)")
	fs.StringVar(&o.fluxHosts, "flux-allowed-hosts", "", "comma-separated hosts (host or host:port) artifacts may also be downloaded from")
	fs.StringVar(&o.fluxCIDRs, "flux-allowed-cidrs", "", "comma-separated CIDRs the artifact download may connect to although they are loopback, link-local or metadata addresses (refused by default)")
	fs.StringVar(&o.flux.SourceHost, "flux-source-host", "", "host:port replacing the host of allowed Flux artifact URLs (as kustomize-controller's SOURCE_CONTROLLER_LOCALHOST)")
	fs.DurationVar(&o.flux.PollInterval, "flux-poll-interval", desired.DefaultPollInterval, "how often Kustomizations' sources are checked for a new artifact")
	fs.DurationVar(&o.flux.Timeout, "flux-timeout", desired.DefaultFetchTimeout, "timeout of one artifact download")
	fs.Int64Var(&o.flux.MaxArtifactBytes, "flux-max-artifact-bytes", desired.DefaultLimits().Inflated, "bytes one artifact may inflate to (counted while inflating); a larger one is not built and not fetched again")
	fs.DurationVar(&o.flux.BuildTimeout, "flux-build-timeout", desired.DefaultBuildTimeout, "time budget of one Kustomization's build")
	fs.DurationVar(&o.notConverging, "argocd-not-converging-threshold", dwcollectors.DefaultNotConvergingThreshold, "report an Application OutOfSync this long after a Succeeded sync")
	fs.StringVar(&o.esoSA, "eso-service-account", detect.DefaultESOServiceAccount.String(), "NAMESPACE/NAME of the ESO controller's ServiceAccount (used by stores with ambient auth)")
	fs.StringVar(&o.pprofAddr, "debug-pprof", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060), with the same --web.config.file as every other endpoint (TLS, basic auth); off by default")
	fs.IntVar(&o.flapThreshold, "flap-threshold", detect.DefaultFlapThreshold, "flips within --flip-window that make a Secret flapping")
	addWebFlags(fs, &o.web)
	return fs
}

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	ho := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// checkOptions checks what parsing the flags cannot (ranges and combinations)
// and fills the lists parsed from them.
func checkOptions(o *options) error {
	if o.shards < 1 || o.shard < 0 || o.shard >= o.shards {
		return fmt.Errorf("--shard %d must be in [0, --total-shards %d)", o.shard, o.shards)
	}
	if o.shardWatch != agent.ShardWatchCluster && o.shardWatch != agent.ShardWatchNamespaces {
		return fmt.Errorf("--shard-watch %q: want %s or %s", o.shardWatch, agent.ShardWatchCluster, agent.ShardWatchNamespaces)
	}
	if o.shardWatch == agent.ShardWatchNamespaces && o.namespaces != "" {
		return errors.New("--shard-watch namespaces needs every namespace watched (no --namespaces): it follows the namespace list")
	}
	o.flux.AllowedHosts = agent.SplitList(o.fluxHosts)
	o.flux.AllowedCIDRs = nil
	for _, c := range agent.SplitList(o.fluxCIDRs) {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("--flux-allowed-cidrs: %q is not a CIDR", c)
		}
		o.flux.AllowedCIDRs = append(o.flux.AllowedCIDRs, p)
	}
	if o.pprofAddr != "" {
		if err := agent.CheckPprofAddr(o.pprofAddr); err != nil {
			return err
		}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "compare":
			return cli.Compare(args[1:], stdout, stderr)
		case "check":
			return cli.Check(args[1:], stdout, stderr)
		case "rules":
			return cli.Rules(args[1:], stdout, stderr)
		case "lint":
			return cli.LintMain(args[1:], stdout, stderr, version)
		}
	}
	var o options
	fs := newFlags(&o, stderr)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintln(stderr, "agent:", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	log, err := newLogger(o.logFormat, o.logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 2
	}
	if note, err := reconcileUI(fs, o.noKeyLabel, &o.web); err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 2
	} else if note != "" {
		log.Info(note)
	}
	if note, err := reconcileSecretPage(fs, o.demo, &o.web); err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 2
	} else if note != "" {
		log.Info(note)
	}
	if err := checkOptions(&o); err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 2
	}
	klog.SetSlogLogger(log.With("component", "client-go"))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var clients agent.Clients
	if o.demo {
		d := demo.New(log)
		clients = d.Clients()
		go d.Run(ctx)
		cleanup, err := d.ArgoCD(&o.argo, &o.flux)
		if err != nil {
			fmt.Fprintln(stderr, "agent: demo:", err)
			return 2
		}
		defer cleanup()
		if o.discoveryInterval == kube.DefaultDiscoveryInterval {
			o.discoveryInterval = 2 * time.Second
		}
	} else {
		c, rc, err := agent.Connect(o.kubeconfig, o.kubeContext, "driftwatch/"+version)
		if err != nil {
			fmt.Fprintln(stderr, "agent:", err)
			return 2
		}
		clients = c
		if o.typedDecode {
			clients.Wire = nil
		}
		log.Info("connecting", "host", rc.Host)
	}
	steadyGC, _ := defaultGC(os.LookupEnv)
	cfg := agent.Config{
		Build:               dwcollectors.BuildInfo{Version: version, Revision: revision},
		Listen:              o.listen,
		Namespaces:          agent.SplitList(o.namespaces),
		ExcludeNamespaces:   agent.SplitList(o.excludeNS),
		Shard:               o.shard,
		Shards:              o.shards,
		ShardWatch:          o.shardWatch,
		DiscoveryInterval:   o.discoveryInterval,
		Logger:              log,
		Web:                 o.web,
		HealthListen:        o.healthAddr,
		PprofListen:         o.pprofAddr,
		EvaluateAhead:       o.evaluateAhead,
		KeepExecutablePages: !o.returnExePages,
		SteadyGCPercent:     steadyGC,
	}
	cfg.Findings = dwcollectors.Config{NoKeyLabel: o.noKeyLabel, Inventory: o.inventory, OverdueFactor: o.overdueFactor,
		FlapThreshold: o.flapThreshold, NotConvergingThreshold: o.notConverging, Logger: log}
	cfg.History.Window = o.flipWindow
	if ns, name, ok := strings.Cut(o.esoSA, "/"); ok && ns != "" && name != "" {
		cfg.Findings.ESOServiceAccount = model.Ref{Namespace: ns, Name: name}
	} else {
		fmt.Fprintf(stderr, "agent: --eso-service-account %q: want NAMESPACE/NAME\n", o.esoSA)
		return 2
	}
	if o.demo {
		cfg.OnListen = func(addr string) {
			host := addr
			if strings.HasPrefix(host, "[::]:") || strings.HasPrefix(host, ":") {
				host = "localhost" + host[strings.LastIndex(host, ":"):]
			}
			fmt.Fprintf(stdout, "driftwatch demo: findings at http://%s/, metrics at /metrics (readiness at /readyz); Ctrl-C to stop\n", host)
		}
	}
	a := agent.New(clients, cfg)
	o.argo.Logger = log
	if err := a.StartArgoCD(ctx, o.argo); err != nil {
		fmt.Fprintln(stderr, "agent: argocd:", err)
		return 2
	}
	o.flux.Logger = log
	if err := a.StartFlux(ctx, o.flux); err != nil {
		fmt.Fprintln(stderr, "agent: flux:", err)
		return 2
	}
	if err := a.Run(ctx, cfg); err != nil {
		log.Error("agent stopped", "err", err)
		return 1
	}
	return 0
}
