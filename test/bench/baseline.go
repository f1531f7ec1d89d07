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
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
// and process metrics) so the parent measures it exactly like the agent.
func runBaseline(args []string) int {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig")
	listen := fs.String("listen", "127.0.0.1:0", "address for /readyz and /metrics")
	transform := fs.Bool("transform", false, "set a transform that keeps only name and namespace")
	jsonWire := fs.Bool("json", false, "decode the typed resources from JSON instead of protobuf (the agent uses protobuf)")
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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
