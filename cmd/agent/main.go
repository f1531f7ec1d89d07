// Command agent is driftwatch: it watches Secrets, Pods, ServiceAccounts, ESO
// ExternalSecrets and stores, Helm releases and Argo CD Applications through
// informers, and exports the secret-delivery failures it finds as Prometheus metrics.
//
//	agent [flags]                      run against a cluster (or --demo)
//	agent compare NS/LIVE NS/CHECK     key-by-key verdicts of two Secrets, values never printed
//	agent check [flags]                one-shot run of every detector, for CI and migrations
//	agent rules [--job J] [--runbook-base-url U]  the alerting rules for this installation
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	dwcollectors "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/cli"
	"github.com/driftwatch/driftwatch/internal/demo"
	"github.com/driftwatch/driftwatch/internal/kube"
)

// Set with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = "unknown"
)

// DefaultListen is driftwatch's default metrics address. 9742 is not taken by a
// well-known exporter.
const DefaultListen = ":9742"

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
	overdueFactor           float64
	discoveryInterval       time.Duration
	shard, shards           int
	flipWindow              time.Duration
	flapThreshold           int
	argo                    agent.ArgoCDConfig
	notConverging           time.Duration
	esoSA                   string
	pprofAddr               string
	web                     agent.WebConfig
}

// envDefault reads DRIFTWATCH_<NAME> so every flag can also come from the environment.
func envDefault(name, def string) string {
	k := "DRIFTWATCH_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func envBool(name string, def bool) bool {
	v, err := strconv.ParseBool(envDefault(name, strconv.FormatBool(def)))
	if err != nil {
		return def
	}
	return v
}

func envFloat(name string, def float64) float64 {
	v, err := strconv.ParseFloat(envDefault(name, strconv.FormatFloat(def, 'g', -1, 64)), 64)
	if err != nil {
		return def
	}
	return v
}

func envInt(name string, def int) int {
	v, err := strconv.Atoi(envDefault(name, strconv.Itoa(def)))
	if err != nil {
		return def
	}
	return v
}

func envDuration(name string, def time.Duration) time.Duration {
	v, err := time.ParseDuration(envDefault(name, def.String()))
	if err != nil {
		return def
	}
	return v
}

func newFlags(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", envDefault("kubeconfig", ""), "path to a kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "context", envDefault("context", ""), "kubeconfig context to use")
	fs.StringVar(&o.listen, "listen", envDefault("listen", DefaultListen), "address for /metrics, /healthz and /readyz")
	fs.StringVar(&o.namespaces, "namespaces", envDefault("namespaces", ""), "comma-separated namespaces to watch (default: all)")
	fs.StringVar(&o.excludeNS, "exclude-namespaces", envDefault("exclude-namespaces", ""), "comma-separated namespaces to ignore (filtered server-side)")
	fs.StringVar(&o.logFormat, "log-format", envDefault("log-format", "text"), "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", envDefault("log-level", "info"), "log level: debug, info, warn, error")
	fs.BoolVar(&o.demo, "demo", envBool("demo", false), "run against an embedded simulated cluster (no kubeconfig needed)")
	fs.BoolVar(&o.noKeyLabel, "no-key-label", envBool("no-key-label", false), "do not export key names: report missing keys as counts per Secret")
	fs.BoolVar(&o.inventory, "inventory", envBool("inventory", false), "export the inventory driftwatch_secret_consumer_info and _consumer_pods: one series per consumed Secret and workload, so its cardinality grows with the cluster, not with findings (off by default)")
	fs.Float64Var(&o.overdueFactor, "sync-overdue-factor", envFloat("sync-overdue-factor", 3), "an ExternalSecret is overdue when its sync age exceeds this multiple of refreshInterval")
	fs.DurationVar(&o.discoveryInterval, "discovery-interval", envDuration("discovery-interval", 30*time.Second), "how often optional APIs (ESO, Argo CD) and lost permissions are re-checked")
	fs.IntVar(&o.shard, "shard", envInt("shard", 0), "this agent's shard (0-based), with --total-shards")
	fs.IntVar(&o.shards, "total-shards", envInt("total-shards", 1), "number of shards; namespaces are assigned by a stable hash")
	fs.DurationVar(&o.flipWindow, "flip-window", envDuration("flip-window", time.Hour), "how long a Secret's value changes are remembered to detect flips")
	fs.StringVar(&o.argo.Server, "argocd-server", envDefault("argocd-server", ""), "Argo CD API URL; enables the argocd expectation source (desired state from managed-resources)")
	fs.StringVar(&o.argo.TokenFile, "argocd-token-file", envDefault("argocd-token-file", ""), "file holding the Argo CD API token (must not be world-readable; never pass a token as a flag)")
	fs.StringVar(&o.argo.CAFile, "argocd-ca-file", envDefault("argocd-ca-file", ""), "CA bundle to verify the Argo CD API's certificate")
	fs.BoolVar(&o.argo.Insecure, "argocd-insecure", envBool("argocd-insecure", false), "skip TLS verification of the Argo CD API and allow http:// (testing only)")
	fs.DurationVar(&o.argo.PollInterval, "argocd-poll-interval", envDuration("argocd-poll-interval", time.Minute), "interval between rounds of Argo CD API polling")
	fs.DurationVar(&o.argo.Timeout, "argocd-timeout", envDuration("argocd-timeout", 10*time.Second), "timeout of one Argo CD API call")
	fs.Float64Var(&o.argo.RPS, "argocd-rps", envFloat("argocd-rps", 5), "maximum Argo CD API requests per second")
	fs.DurationVar(&o.notConverging, "argocd-not-converging-threshold", envDuration("argocd-not-converging-threshold", 10*time.Minute), "report an Application OutOfSync this long after a Succeeded sync")
	fs.StringVar(&o.esoSA, "eso-service-account", envDefault("eso-service-account", "external-secrets/external-secrets"), "NAMESPACE/NAME of the ESO controller's ServiceAccount (used by stores with ambient auth)")
	fs.StringVar(&o.pprofAddr, "debug-pprof", envDefault("debug-pprof", ""), "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060); off by default")
	fs.IntVar(&o.flapThreshold, "flap-threshold", envInt("flap-threshold", 2), "flips within --flip-window that make a Secret flapping")
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

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// restConfig resolves the connection: --kubeconfig, else in-cluster, else the
// default loading rules ($KUBECONFIG, ~/.kube/config).
func restConfig(path, kctx string) (*rest.Config, error) {
	if path == "" && kctx == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kctx}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to watch (try --kubeconfig, or --demo): %w", err)
	}
	return cfg, nil
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
		}
	}
	var o options
	fs := newFlags(&o, stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
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
	if o.shards < 1 || o.shard < 0 || o.shard >= o.shards {
		fmt.Fprintf(stderr, "agent: --shard %d must be in [0, --total-shards %d)\n", o.shard, o.shards)
		return 2
	}
	klog.SetSlogLogger(log.With("component", "client-go"))
	agent.Build.Version, agent.Build.Revision = version, revision

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var clients agent.Clients
	if o.demo {
		d := demo.New(log)
		clients = d.Clients()
		go d.Run(ctx)
		if o.discoveryInterval == 30*time.Second {
			o.discoveryInterval = 2 * time.Second
		}
	} else {
		rc, err := restConfig(o.kubeconfig, o.kubeContext)
		if err != nil {
			fmt.Fprintln(stderr, "agent:", err)
			return 2
		}
		rc.UserAgent = "driftwatch/" + version
		rc.QPS, rc.Burst = 20, 40
		// Typed clientset over protobuf; dynamic and discovery stay JSON.
		cs, err := kubernetes.NewForConfig(kube.ProtobufConfig(rc))
		if err != nil {
			fmt.Fprintln(stderr, "agent:", err)
			return 2
		}
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			fmt.Fprintln(stderr, "agent:", err)
			return 2
		}
		disco, err := discovery.NewDiscoveryClientForConfig(rc)
		if err != nil {
			fmt.Fprintln(stderr, "agent:", err)
			return 2
		}
		clients = agent.Clients{Core: cs, Dynamic: dyn, Discovery: disco}
		log.Info("connecting", "host", rc.Host)
	}
	cfg := agent.Config{
		Listen:            o.listen,
		Namespaces:        splitList(o.namespaces),
		ExcludeNamespaces: splitList(o.excludeNS),
		Shard:             o.shard,
		Shards:            o.shards,
		DiscoveryInterval: o.discoveryInterval,
		Logger:            log,
		Web:               o.web,
	}
	cfg.Findings.NoKeyLabel = o.noKeyLabel
	cfg.Findings.Inventory = o.inventory
	cfg.Findings.OverdueFactor = o.overdueFactor
	cfg.History.Window = o.flipWindow
	dwcollectors.SetFlapThreshold(o.flapThreshold)
	if ns, name, ok := strings.Cut(o.esoSA, "/"); ok && ns != "" && name != "" {
		dwcollectors.SetESOControllerServiceAccount(ns, name)
	} else {
		fmt.Fprintf(stderr, "agent: --eso-service-account %q: want NAMESPACE/NAME\n", o.esoSA)
		return 2
	}
	dwcollectors.SetNotConvergingThreshold(o.notConverging)
	if o.demo {
		cfg.OnListen = func(addr string) {
			host := addr
			if strings.HasPrefix(host, "[::]:") || strings.HasPrefix(host, ":") {
				host = "localhost" + host[strings.LastIndex(host, ":"):]
			}
			fmt.Fprintf(stdout, "driftwatch demo: findings at http://%s/, metrics at /metrics (readiness at /readyz); Ctrl-C to stop\n", host)
		}
	}
	if o.pprofAddr != "" {
		if err := servePprof(ctx, o.pprofAddr, log); err != nil {
			fmt.Fprintln(stderr, "agent:", err)
			return 2
		}
	}
	a := agent.New(clients, cfg)
	o.argo.Logger = log
	if err := a.StartArgoCD(ctx, o.argo); err != nil {
		fmt.Fprintln(stderr, "agent: argocd:", err)
		return 2
	}
	if err := a.Run(ctx, cfg); err != nil {
		log.Error("agent stopped", "err", err)
		return 1
	}
	return 0
}
