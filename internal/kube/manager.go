// Package kube connects driftwatch to the apiserver: informers whose transforms
// (internal/transform) turn every object into a value-free model record before
// anything is cached, discovery of the optional APIs (ESO, Argo CD, Flux), and
// the per-resource health the detectors are gated on.
package kube

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

// Defaults of Options (DiscoveryInterval is the agent's --discovery-interval).
const (
	DefaultDiscoveryInterval = 30 * time.Second
	DefaultDenialGrace       = 10 * time.Second
)

// Options configure the informer layer.
type Options struct {
	// Namespaces to watch; empty means all.
	Namespaces []string
	// ExcludeNamespaces are filtered out server-side.
	ExcludeNamespaces []string
	// NamespaceFilter, when set, drops objects of namespaces it rejects (sharding).
	// Cluster-scoped objects always pass.
	NamespaceFilter func(ns string) bool
	// ScopedWatches (with NamespaceFilter and every namespace watched): watch
	// Secrets, Pods, ServiceAccounts, ExternalSecrets and SecretStores with one
	// watch per namespace the filter keeps, started and stopped as namespaces
	// come and go, instead of one cluster-wide watch whose other objects are
	// reduced to stubs. The cross-namespace resources (Helm releases, Argo CD
	// Applications) and the cluster-scoped ones stay cluster-wide.
	ScopedWatches bool
	// DiscoveryInterval is how often optional APIs and lost permissions are re-checked.
	DiscoveryInterval time.Duration
	// DenialGrace is how long a synced resource must keep answering 403/401
	// before it is paused (default 10s): a restarting kube-apiserver denies
	// everything until its RBAC caches load, which takes about a second or two.
	DenialGrace time.Duration
	Logger      *slog.Logger
	Now         func() time.Time
	// Wire, when set, is the connection (kube.ProtobufConfig) through which
	// Secrets and Pods are listed and watched by the wire decoder (wire.go,
	// internal/transform wire.go):
	// protobuf read straight into records. Nil: the typed clientset's
	// informers and the transforms (unit tests with fake clientsets).
	Wire *rest.Config
}

// Manager runs the informers, keeps the model current and tracks each resource's
// health.
type Manager struct {
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	disco discovery.DiscoveryInterface
	store *model.Store
	tr    *transform.Transformer
	opts  Options
	log   *slog.Logger

	mu     sync.Mutex
	groups map[model.Resource]*group
	// ownNS are the namespaces the filter keeps that exist (ScopedWatches).
	ownNS map[string]bool
	// nsGroup is the namespace informer's group (ScopedWatches), read without mu.
	nsGroup atomic.Pointer[group]

	events sync.Map // eventKey → *atomic.Uint64

	// The wire decoder's REST clients (Options.Wire), nil without.
	wireSecrets, wirePods rest.Interface
	// typedSecrets lists and watches typed Secrets whose responses are wiped
	// once decoded (wire.go typedSecretClient); nil with a fake clientset.
	typedSecrets rest.Interface
}

type group struct {
	res       model.Resource
	version   string
	informers []cache.SharedIndexInformer
	// regs are the model's event handler registrations: synced only once the
	// handlers have received the initial list, not merely the informer's cache
	// (the handlers run asynchronously, so the model lags the cache).
	regs     []cache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
	done     chan struct{}
	degraded atomic.Bool
	suspect  atomic.Bool // a synced group got a 403/401; recheckDegraded confirms it
	// suspectAt is when the suspicion began (UnixNano).
	suspectAt atomic.Int64
	reason    atomic.Value // string
	absent    bool         // optional API not served
	// vanishing counts the discovery rounds in a row that found the API of a
	// running informer not served (the discovery loop only).
	vanishing int

	// Namespace-scoped watches (Options.ScopedWatches): perNS makes the
	// informer of one namespace; one runs per namespace of this shard, started
	// and stopped as namespaces come and go. nsSynced says whether the
	// namespace informer has delivered its initial list (every namespace that
	// existed at start has its watch).
	perNS    func(ns string) cache.SharedIndexInformer
	nsSynced func() bool
	ctx      context.Context
	wg       sync.WaitGroup
	smu      sync.Mutex // guards scoped and stopped
	scoped   map[string]*nsWatch
	stopped  bool
}

// NewManager wires a manager. dyn and disco may be nil, which disables the ESO and
// Argo CD resources.
func NewManager(cs kubernetes.Interface, dyn dynamic.Interface, disco discovery.DiscoveryInterface,
	store *model.Store, tr *transform.Transformer, opts Options) *Manager {
	if opts.DenialGrace <= 0 {
		opts.DenialGrace = DefaultDenialGrace
	}
	if opts.DiscoveryInterval <= 0 {
		opts.DiscoveryInterval = DefaultDiscoveryInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NamespaceFilter == nil || len(opts.Namespaces) > 0 {
		opts.ScopedWatches = false // per own namespace needs sharding and the namespace list
	}
	m := &Manager{cs: cs, dyn: dyn, disco: disco, store: store, tr: tr, opts: opts, log: opts.Logger,
		groups: map[model.Resource]*group{}, ownNS: map[string]bool{}}
	if opts.Wire != nil {
		sc, err1 := newWireClient(opts.Wire, tr.WireSerializer(model.ResSecrets))
		pc, err2 := newWireClient(opts.Wire, tr.WireSerializer(model.ResPods))
		if err := errors.Join(err1, err2); err != nil {
			m.log.Warn("wire decoder unavailable; Secrets and Pods are decoded by the typed clientset", "err", err)
		} else {
			m.wireSecrets, m.wirePods = sc, pc
		}
	}
	// Typed Secrets (the Helm release informer; Secrets with --typed-decode,
	// which leaves Wire nil) through a client whose responses and watch frames
	// are wiped once decoded.
	if ts, err := typedSecretClient(cs, opts.Wire, tr.TypedSecretSerializer()); err != nil {
		m.log.Warn("wiping Secret client unavailable; typed Secrets are decoded by the typed clientset", "err", err)
	} else {
		m.typedSecrets = ts
	}
	return m
}

// Run starts the core informers and the discovery loop and blocks until ctx ends,
// then stops every informer and waits for them.
func (m *Manager) Run(ctx context.Context) {
	m.startCore(ctx)
	m.discover(ctx)
	t := time.NewTicker(m.opts.DiscoveryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.stopAll()
			return
		case <-t.C:
			m.discover(ctx)
			m.recheckDegraded(ctx)
		}
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	gs := make([]*group, 0, len(m.groups))
	for _, g := range m.groups {
		gs = append(gs, g)
	}
	m.mu.Unlock()
	for _, g := range gs {
		if g.cancel != nil {
			g.cancel()
			<-g.done
		}
	}
}

func (m *Manager) namespaces() []string {
	if len(m.opts.Namespaces) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return m.opts.Namespaces
}

func (m *Manager) tweak(extraField, label string) func(*metav1.ListOptions) {
	var fs []string
	for _, ns := range m.opts.ExcludeNamespaces {
		fs = append(fs, "metadata.namespace!="+ns)
	}
	if extraField != "" {
		fs = append(fs, extraField)
	}
	field := strings.Join(fs, ",")
	return func(o *metav1.ListOptions) {
		if field != "" {
			o.FieldSelector = field
		}
		if label != "" {
			o.LabelSelector = label
		}
	}
}

func (m *Manager) startCore(ctx context.Context) {
	for _, r := range resources {
		if r.core == nil {
			continue
		}
		// Namespaces carry the namespace-wide driftwatch.io/ignore. They are
		// cluster-scoped: an agent restricted to some namespaces (a namespaced
		// install with Roles) cannot list them and only honours object annotations.
		if r.onlyClusterWide && len(m.opts.Namespaces) > 0 {
			g := &group{res: r.res, absent: true}
			g.reason.Store("not_watched")
			m.mu.Lock()
			m.groups[r.res] = g
			m.mu.Unlock()
			continue
		}
		if m.scoped(r) {
			m.startScopedGroup(ctx, r.res, "v1", func(ns string) cache.SharedIndexInformer { return r.core(m, ns) })
			continue
		}
		nss := m.namespaces()
		if r.clusterScoped {
			nss = []string{metav1.NamespaceAll}
		}
		var infs []cache.SharedIndexInformer
		for _, ns := range nss {
			infs = append(infs, r.core(m, ns))
		}
		m.startGroup(ctx, r.res, "v1", infs)
	}
}

func (m *Manager) startGroup(ctx context.Context, res model.Resource, version string, infs []cache.SharedIndexInformer) {
	g := m.newGroup(ctx, res, version)
	g.informers = infs
	for _, inf := range infs {
		if reg := m.setup(g, inf); reg != nil {
			g.regs = append(g.regs, reg)
		}
	}
	m.mu.Lock()
	m.groups[res] = g
	m.mu.Unlock()
	if res == model.ResNamespaces {
		m.nsGroup.Store(g)
	}
	// Under smu, as scoped watches start: a context cancelled during start-up
	// has the group's stopper Wait, and an Add racing that Wait is a misuse of
	// the WaitGroup (the stopper could close done while informers start).
	g.smu.Lock()
	if !g.stopped {
		for _, inf := range infs {
			g.wg.Add(1)
			go func() { defer g.wg.Done(); inf.RunWithContext(g.ctx) }()
		}
	}
	g.smu.Unlock()
	m.log.Info("watching", "resource", res, "version", version, "informers", len(infs))
}

func (m *Manager) newGroup(ctx context.Context, res model.Resource, version string) *group {
	g := &group{res: res, version: version, done: make(chan struct{})}
	g.reason.Store("")
	g.ctx, g.cancel = context.WithCancel(ctx)
	go func() {
		<-g.ctx.Done()
		g.smu.Lock()
		g.stopped = true // no watch starts from now on
		g.smu.Unlock()
		g.wg.Wait()
		close(g.done)
	}()
	return g
}

// setup gives an informer of g its transform, watch error handler and the
// model's event handler, and returns the handler's registration.
func (m *Manager) setup(g *group, inf cache.SharedIndexInformer) cache.ResourceEventHandlerRegistration {
	if err := inf.SetTransform(m.transformFor(g.res)); err != nil {
		m.log.Error("cannot set transform", "resource", g.res, "err", err)
	}
	if err := inf.SetWatchErrorHandlerWithContext(m.watchErrorHandler(g)); err != nil {
		m.log.Error("cannot set watch error handler", "resource", g.res, "err", err)
	}
	reg, err := inf.AddEventHandler(m.handlerFor(g.res))
	if err != nil {
		m.log.Error("cannot add event handler", "resource", g.res, "err", err)
		return nil
	}
	return reg
}
