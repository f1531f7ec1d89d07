package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/internal/kube"
)

// runBaseline is the child mode `bench baseline [--transform] [--json]`: bare
// client-go informers on the resources driftwatch watches, with the same list
// options and wire format (protobuf for Secrets, Pods and ServiceAccounts, JSON
// for the CRDs; --json: JSON for all), no handlers. It serves /readyz (all informers synced) and /metrics (Go runtime
// and process metrics) so the parent measures it exactly like the agent. With
// --probe NS/NAME (the latency phase only) the ordinary Secret informer gets one
// handler, which timestamps the events of that Secret for /probe and exports,
// while the Secret lacks the key PROBE, the series driftwatch exports for it
// (driftwatch_secret_missing_key{namespace,secret,key="PROBE"}): the same
// series through the smallest exporter, for the latency phase's bare+scrape row.
func runBaseline(args []string) int {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig")
	listen := fs.String("listen", "127.0.0.1:0", "address for /readyz and /metrics")
	transform := fs.Bool("transform", false, "set a transform that keeps only name and namespace")
	jsonWire := fs.Bool("json", false, "decode the typed resources from JSON instead of protobuf (the agent uses protobuf)")
	probe := fs.String("probe", "", "namespace/name of a Secret whose events (Add, Update) the ordinary Secret informer's handler timestamps; served at /probe?rv=RV")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rc.QPS, rc.Burst = 20, 40 // as the agent
	// The same wire format as the agent: protobuf for the typed clientset, JSON for
	// the dynamic one (CRDs), unless --json.
	csrc := kube.ProtobufConfig(rc)
	if *jsonWire {
		csrc = rc
	}
	cs := kubernetes.NewForConfigOrDie(csrc)
	dyn := dynamic.NewForConfigOrDie(rc)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	sel := func(field, label string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.FieldSelector, o.LabelSelector = field, label }
	}
	infs := []cache.SharedIndexInformer{
		coreinformers.NewFilteredSecretInformer(cs, "", 0, nil, sel("type!=helm.sh/release.v1", "")),
		coreinformers.NewFilteredSecretInformer(cs, "", 0, nil, sel("type=helm.sh/release.v1", "owner=helm,status=deployed")),
		coreinformers.NewFilteredPodInformer(cs, "", 0, nil, nil),
		coreinformers.NewFilteredServiceAccountInformer(cs, "", 0, nil, nil),
	}
	for _, r := range []string{"externalsecrets", "secretstores", "clustersecretstores"} {
		gvr := schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: r}
		infs = append(infs, dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, "", 0, nil, nil).Informer())
	}
	if *transform {
		for _, inf := range infs {
			_ = inf.SetTransform(func(obj any) (any, error) {
				m, err := meta.Accessor(obj)
				if err != nil {
					return obj, nil
				}
				return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace()}}, nil
			})
		}
	}
	var pl *probeLog
	if *probe != "" {
		ns, name, ok := strings.Cut(*probe, "/")
		if !ok {
			fmt.Fprintln(os.Stderr, "--probe: want namespace/name")
			return 2
		}
		pl = newProbeLog(ns, name)
		// The only handler: on the ordinary Secret informer, the one the probe
		// Secret's events come through.
		if _, err := infs[0].AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { pl.record(obj) },
			UpdateFunc: func(_, obj any) { pl.record(obj) },
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if pl != nil {
		reg.MustRegister(pl.missing)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap")) // ?gc=1 forces a GC, as on the agent's --debug-pprof
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		for _, inf := range infs {
			if !inf.HasSynced() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if pl != nil {
		mux.HandleFunc("/probe", pl.serve)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = http.Serve(ln, mux) }()
	for _, inf := range infs {
		go inf.RunWithContext(ctx)
	}
	if cache.WaitForCacheSync(ctx.Done(), func() bool {
		for _, inf := range infs {
			if !inf.HasSynced() {
				return false
			}
		}
		return true
	}) {
		fmt.Println("synced")
	}
	<-ctx.Done()
	return 0
}

// probeLog timestamps the arrival of every event on one Secret at the
// informer's handler, by resourceVersion, with the wall clock
// (time.Now().UnixNano(): the bench, on the same machine, compares it with
// the time its write returned).
type probeLog struct {
	ns, name string
	mu       sync.Mutex
	seen     map[string]int64 // resourceVersion → arrival, Unix ns
	changed  chan struct{}    // closed and replaced on every event
	// missing is driftwatch's series for the probe Secret lacking PROBE, set
	// and deleted as the events arrive.
	missing *prometheus.GaugeVec
}

func newProbeLog(ns, name string) *probeLog {
	return &probeLog{ns: ns, name: name, seen: map[string]int64{}, changed: make(chan struct{}),
		missing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_secret_missing_key",
			Help: "The bench's bare+scrape row: 1 while the probe Secret lacks the key PROBE (the series driftwatch exports for it).",
		}, []string{"namespace", "secret", "key"})}
}

func (p *probeLog) record(obj any) {
	now := time.Now().UnixNano()
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() != p.ns || m.GetName() != p.name {
		return
	}
	if s, ok := obj.(*corev1.Secret); ok {
		if _, has := s.Data["PROBE"]; has {
			p.missing.DeleteLabelValues(p.ns, p.name, "PROBE")
		} else {
			p.missing.WithLabelValues(p.ns, p.name, "PROBE").Set(1)
		}
	}
	p.mu.Lock()
	p.seen[m.GetResourceVersion()] = now
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// serve answers /probe?rv=RV with the arrival time (Unix ns) of the event
// carrying that resourceVersion, waiting up to 15 s for it (504 then).
func (p *probeLog) serve(w http.ResponseWriter, r *http.Request) {
	rv := r.URL.Query().Get("rv")
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		at, ok := p.seen[rv]
		ch := p.changed
		p.mu.Unlock()
		if ok {
			fmt.Fprintf(w, "%d\n", at)
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		case <-r.Context().Done():
			return
		}
	}
}
