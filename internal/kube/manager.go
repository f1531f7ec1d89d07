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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
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

// nsWatch is the informer of one namespace of a scoped group. initial: it was
// started with the group, or for a namespace of the initial list: readiness
// waits for it. A namespace created later does not make the agent unready; its
// findings wait for its watch (Manager.NamespaceSynced).
type nsWatch struct {
	inf     cache.SharedIndexInformer
	reg     cache.ResourceEventHandlerRegistration
	cancel  context.CancelFunc
	done    chan struct{}
	initial bool
}

func (w *nsWatch) synced() bool { return w.inf.HasSynced() && w.reg != nil && w.reg.HasSynced() }

type eventKey struct {
	res model.Resource
	typ string
}

// NewManager wires a manager. dyn and disco may be nil, which disables the ESO and
// Argo CD resources.
func NewManager(cs kubernetes.Interface, dyn dynamic.Interface, disco discovery.DiscoveryInterface,
	store *model.Store, tr *transform.Transformer, opts Options) *Manager {
	if opts.DenialGrace <= 0 {
		opts.DenialGrace = 10 * time.Second
	}
	if opts.DiscoveryInterval <= 0 {
		opts.DiscoveryInterval = 30 * time.Second
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
	return m
}

// optionalAPIs are the watched resources served by CRDs, discovered at run time.
func optionalAPIs() []*resource {
	var out []*resource
	for _, r := range resources {
		if r.optional() {
			out = append(out, r)
		}
	}
	return out
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

// scoped reports whether r is watched per own namespace.
func (m *Manager) scoped(r *resource) bool {
	return m.opts.ScopedWatches && !r.clusterScoped && !r.crossNamespace
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

// startScopedGroup starts a group of namespace-scoped watches: one per
// namespace of this shard that exists now, more as namespaces appear.
func (m *Manager) startScopedGroup(ctx context.Context, res model.Resource, version string, perNS func(string) cache.SharedIndexInformer) {
	g := m.newGroup(ctx, res, version)
	g.perNS, g.nsSynced, g.scoped = perNS, m.namespacesSynced, map[string]*nsWatch{}
	m.mu.Lock()
	m.groups[res] = g
	// The namespaces known now are this group's initial set: readiness
	// waits for them (a group started after the namespace list synced, when
	// its CRD appears, is not ready before its watches are).
	for ns := range m.ownNS {
		m.watchNamespace(g, ns, true)
	}
	n := len(m.ownNS)
	m.mu.Unlock()
	m.log.Info("watching per namespace", "resource", res, "version", version, "namespaces", n)
}

// watchNamespace starts g's watch of namespace ns (the caller holds m.mu).
func (m *Manager) watchNamespace(g *group, ns string, initial bool) {
	g.smu.Lock()
	defer g.smu.Unlock()
	if g.stopped || g.scoped[ns] != nil {
		return
	}
	inf := g.perNS(ns)
	w := &nsWatch{inf: inf, initial: initial, done: make(chan struct{})}
	w.reg = m.setup(g, inf)
	var wctx context.Context
	wctx, w.cancel = context.WithCancel(g.ctx)
	g.scoped[ns] = w
	g.wg.Add(1)
	go func() { defer g.wg.Done(); defer close(w.done); inf.RunWithContext(wctx) }()
}

// namespaceAdded starts the watches of a namespace of this shard
// (ScopedWatches); initial: it is in the namespace informer's initial list.
func (m *Manager) namespaceAdded(ns string, initial bool) {
	if !m.opts.ScopedWatches || !m.opts.NamespaceFilter(ns) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ownNS[ns] {
		return
	}
	m.ownNS[ns] = true
	for _, g := range m.groups {
		if g.perNS != nil {
			m.watchNamespace(g, ns, initial)
		}
	}
}

// namespaceDeleted stops the watches of a deleted namespace and drops what
// they held from the model: the namespace controller deleted its objects
// before the namespace, but the delete events race with this one.
func (m *Manager) namespaceDeleted(ns string) {
	if !m.opts.ScopedWatches {
		return
	}
	m.mu.Lock()
	if !m.ownNS[ns] {
		m.mu.Unlock()
		return
	}
	delete(m.ownNS, ns)
	type stopped struct {
		g *group
		w *nsWatch
	}
	var ws []stopped
	for _, g := range m.groups {
		if g.perNS == nil {
			continue
		}
		g.smu.Lock()
		if w := g.scoped[ns]; w != nil {
			delete(g.scoped, ns)
			ws = append(ws, stopped{g, w})
		}
		g.smu.Unlock()
	}
	m.mu.Unlock()
	now := m.opts.Now()
	for _, s := range ws {
		s.w.cancel()
		<-s.w.done
		r := resourceOf(s.g.res)
		for _, obj := range s.w.inf.GetStore().List() {
			r.remove(m.store, obj, now)
		}
	}
	if len(ws) > 0 {
		m.log.Debug("namespace deleted: its watches stopped", "namespace", ns, "watches", len(ws))
	}
}

// namespacesSynced reports whether the namespace informer has delivered its
// initial list (every namespace of the shard has its watches).
func (m *Manager) namespacesSynced() bool {
	g := m.nsGroup.Load()
	return g != nil && g.synced()
}

// NamespaceSynced reports whether the namespace-scoped watches of namespace ns
// have listed it (always true without ScopedWatches, and for a namespace
// without watches: another shard's, or one that does not exist). A namespace
// created after the start is evaluated only then: before, its Secrets would
// look absent.
func (m *Manager) NamespaceSynced(ns string) bool {
	if !m.opts.ScopedWatches {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		if g.perNS == nil {
			continue
		}
		g.smu.Lock()
		w := g.scoped[ns]
		g.smu.Unlock()
		if w != nil && !w.synced() {
			return false
		}
	}
	return true
}

// transformFor returns the informer transform of res. With a NamespaceFilter
// (sharding), objects of other shards' namespaces are reduced to a name-only stub
// before anything else: the informer cache must keep an entry per object (the
// server cannot filter by a hash of the namespace), but the entry costs a few
// dozen bytes instead of a full record, and the object is never fingerprinted or
// decoded. The handlers ignore stubs. Cross-namespace resources (Helm releases,
// Argo CD Applications) are the exception: every shard transforms them and keeps
// what concerns its own namespaces (resource.reduce).
func (m *Manager) transformFor(res model.Resource) cache.TransformFunc {
	tf := m.recordTransform(res)
	keep := m.opts.NamespaceFilter
	if keep == nil {
		return tf
	}
	if r := resourceOf(res); r.crossNamespace {
		return func(obj any) (any, error) {
			rec, err := tf(obj)
			if err != nil {
				return rec, err
			}
			return r.reduce(rec, keep), nil
		}
	}
	return func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			if ns := o.GetNamespace(); ns != "" && !keep(ns) {
				return transform.Stub(o), nil
			}
		}
		return tf(obj)
	}
}

func (m *Manager) recordTransform(res model.Resource) cache.TransformFunc {
	return resourceOf(res).transform(m.tr)
}

func (m *Manager) countEvent(res model.Resource, typ string) {
	k := eventKey{res, typ}
	v, ok := m.events.Load(k)
	if !ok {
		v, _ = m.events.LoadOrStore(k, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

// EventCounts returns the informer events seen per resource and type (add, update, delete).
func (m *Manager) EventCounts() map[[2]string]uint64 {
	out := map[[2]string]uint64{}
	m.events.Range(func(k, v any) bool {
		ek := k.(eventKey)
		out[[2]string{string(ek.res), ek.typ}] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

type nsGetter interface {
	GetNamespace() string
	GetName() string
}

func (m *Manager) keep(o nsGetter) bool {
	if m.opts.NamespaceFilter == nil || o.GetNamespace() == "" {
		return true
	}
	return m.opts.NamespaceFilter(o.GetNamespace())
}

func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func (m *Manager) handlerFor(res model.Resource) cache.ResourceEventHandler {
	now := m.opts.Now
	r := resourceOf(res)
	upsert := func(obj any) {
		// Records of other shards' namespaces are stubs (transformFor); a
		// namespaced record is kept only in this shard's namespaces, except
		// the cross-namespace resources' reduced records.
		if o, ok := obj.(nsGetter); ok && !r.crossNamespace && !m.keep(o) {
			return
		}
		r.upsert(m.store, obj, now())
	}
	if res == model.ResNamespaces && m.opts.ScopedWatches {
		return cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				m.countEvent(res, "add")
				upsert(obj)
				if n, ok := obj.(*model.Namespace); ok {
					m.namespaceAdded(n.Name, initial)
				}
			},
			UpdateFunc: func(_, obj any) { m.countEvent(res, "update"); upsert(obj) },
			DeleteFunc: func(obj any) {
				m.countEvent(res, "delete")
				obj = unwrap(obj)
				r.remove(m.store, obj, now())
				if n, ok := obj.(*model.Namespace); ok {
					m.namespaceDeleted(n.Name)
				}
			},
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { m.countEvent(res, "add"); upsert(obj) },
		UpdateFunc: func(old, obj any) {
			m.countEvent(res, "update")
			if r.unchanged != nil && m.opts.NamespaceFilter != nil && r.unchanged(old, obj) {
				if o, ok := obj.(nsGetter); ok && !m.keep(o) {
					return // another shard's object: what this shard keeps of it did not change
				}
			}
			upsert(obj)
		},
		DeleteFunc: func(obj any) { m.countEvent(res, "delete"); r.remove(m.store, unwrap(obj), now()) },
	}
}

func (m *Manager) watchErrorHandler(g *group) cache.WatchErrorHandlerWithContext {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			if g.degraded.Load() {
				return
			}
			// A synced cache is not paused on one denial: a restarting
			// kube-apiserver answers 403 until its RBAC caches load, and
			// pausing would drop every finding until the next recheck.
			// recheckDegraded confirms the denial with a probe first.
			if g.synced() {
				if !g.suspect.Load() {
					g.suspectAt.Store(m.opts.Now().UnixNano())
					g.suspect.Store(true)
					m.log.Debug("access denied; confirming at a later check", "resource", g.res, "grace", m.opts.DenialGrace, "err", err)
				}
				return
			}
			m.degrade(g, err)
		case apierrors.IsNotFound(err):
			m.log.Info("resource not found; re-checking discovery", "resource", g.res)
		case errors.Is(err, context.Canceled):
		default:
			m.log.Debug("watch interrupted; client-go retries", "resource", g.res, "err", err)
		}
	}
}

func (m *Manager) degrade(g *group, err error) {
	if !g.degraded.Swap(true) {
		g.reason.Store("forbidden")
		m.log.Warn("access lost: detectors that need this resource are paused", "resource", g.res, "err", err)
	}
}

func (g *group) synced() bool {
	for _, inf := range g.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	for _, r := range g.regs {
		if !r.HasSynced() {
			return false
		}
	}
	if g.perNS != nil {
		if !g.nsSynced() {
			return false
		}
		g.smu.Lock()
		defer g.smu.Unlock()
		for _, w := range g.scoped {
			if w.initial && !w.synced() {
				return false
			}
		}
		return true
	}
	return len(g.informers) > 0 && len(g.regs) == len(g.informers)
}

// recheckDegraded lists one object of each degraded or suspect resource:
// success restores it (or clears the suspicion), a 403/401 confirms a
// suspicion, any other error changes nothing.
func (m *Manager) recheckDegraded(ctx context.Context) {
	m.mu.Lock()
	var gs []*group
	for _, g := range m.groups {
		if g.degraded.Load() || g.suspect.Load() {
			gs = append(gs, g)
		}
	}
	m.mu.Unlock()
	for _, g := range gs {
		err := m.probe(ctx, g)
		switch {
		case err == nil:
			g.suspect.Store(false)
			if g.degraded.Swap(false) {
				g.reason.Store("")
				m.log.Info("access restored", "resource", g.res)
			}
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			// Confirmed only once the denial has lasted DenialGrace: a probe
			// right after a restarted apiserver's first 403 meets the same
			// unloaded RBAC caches.
			if g.suspect.Load() && m.opts.Now().Sub(time.Unix(0, g.suspectAt.Load())) >= m.opts.DenialGrace {
				g.suspect.Store(false)
				m.degrade(g, err)
			}
		}
	}
}

func (m *Manager) probe(ctx context.Context, g *group) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ns := m.namespaces()[0]
	r := resourceOf(g.res)
	if !r.optional() {
		return r.probe(ctx, m, ns)
	}
	gvr := schema.GroupVersionResource{Group: r.group, Version: strings.TrimPrefix(g.version, r.group+"/"), Resource: r.resource}
	if r.clusterScoped {
		ns = ""
	}
	_, err := m.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// discover starts informers for optional APIs that became served and stops those
// whose API disappeared. A discovery error other than "not found" changes nothing.
func (m *Manager) discover(ctx context.Context) {
	if m.disco == nil || m.dyn == nil {
		m.markAbsentAll()
		return
	}
	served := map[string]map[string]bool{} // group/version → resource names
	known := map[string]bool{}             // group/versions with a definite answer
	for _, api := range optionalAPIs() {
		for _, v := range api.versions {
			gv := api.group + "/" + v
			if _, done := known[gv]; done {
				continue
			}
			list, err := m.disco.ServerResourcesForGroupVersion(gv)
			switch {
			case err == nil:
				known[gv] = true
				served[gv] = map[string]bool{}
				for _, r := range list.APIResources {
					served[gv][r.Name] = true
				}
			case apierrors.IsNotFound(err):
				known[gv] = true
			default:
				m.log.Debug("discovery failed; keeping current state", "groupVersion", gv, "err", err)
			}
		}
	}
	for _, api := range optionalAPIs() {
		want := ""
		definite := true
		for _, v := range api.versions {
			gv := api.group + "/" + v
			if !known[gv] {
				definite = false
				break
			}
			if served[gv][api.resource] {
				want = v
				break
			}
		}
		if !definite {
			continue
		}
		m.mu.Lock()
		g := m.groups[api.res]
		m.mu.Unlock()
		cur := ""
		if g != nil && !g.absent {
			cur = g.version
		}
		if want != "" {
			want = api.group + "/" + want
		}
		if want == cur {
			if g == nil && want == "" {
				m.markAbsent(api.res)
			}
			if g != nil {
				g.vanishing = 0
			}
			continue
		}
		// A running informer whose API reads as not served is stopped only when
		// the next round says so too: a kube-apiserver that has just restarted
		// answers discovery before its CRDs are registered, and stopping then
		// would clear real findings until the next round brought them back.
		if want == "" && g != nil && g.cancel != nil {
			if g.vanishing++; g.vanishing < 2 {
				m.log.Debug("API not served; confirming at the next discovery", "resource", api.res)
				continue
			}
		}
		if g != nil && g.cancel != nil {
			g.cancel()
			<-g.done
			m.store.ClearResource(api.res)
		}
		if want == "" {
			m.log.Warn("API not served: detectors that need it are disabled", "resource", api.res, "group", api.group)
			m.markAbsent(api.res)
			continue
		}
		gvr := schema.GroupVersionResource{Group: api.group, Version: strings.TrimPrefix(want, api.group+"/"), Resource: api.resource}
		if m.scoped(api) {
			tw := m.tweak("", "")
			m.startScopedGroup(ctx, api.res, want, func(ns string) cache.SharedIndexInformer {
				return dynamicinformer.NewFilteredDynamicInformer(m.dyn, gvr, ns, 0, nil, tw).Informer()
			})
			continue
		}
		var infs []cache.SharedIndexInformer
		nss := m.namespaces()
		if api.clusterScoped {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			tw := m.tweak("", "")
			if api.clusterScoped {
				tw = func(*metav1.ListOptions) {}
			}
			infs = append(infs, dynamicinformer.NewFilteredDynamicInformer(m.dyn, gvr, ns, 0, nil, tw).Informer())
		}
		m.startGroup(ctx, api.res, want, infs)
	}
}

func (m *Manager) markAbsent(res model.Resource) {
	g := &group{res: res, absent: true}
	g.reason.Store("crd_absent")
	m.mu.Lock()
	m.groups[res] = g
	m.mu.Unlock()
}

func (m *Manager) markAbsentAll() {
	for _, api := range optionalAPIs() {
		m.mu.Lock()
		_, ok := m.groups[api.res]
		m.mu.Unlock()
		if !ok {
			m.markAbsent(api.res)
		}
	}
}

// States reports every resource's health.
func (m *Manager) States() []model.ResourceState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]model.ResourceState, 0, len(model.AllResources))
	for _, r := range model.AllResources {
		g := m.groups[r]
		st := model.ResourceState{Resource: r}
		switch {
		case g == nil:
			st.Reason = "not_started"
		case g.absent:
			st.Reason, _ = g.reason.Load().(string)
			if st.Reason == "" {
				st.Reason = "crd_absent"
			}
		default:
			st.Enabled = true
			st.Version = g.version
			st.Synced = len(g.informers) == 0 && g.perNS == nil || g.synced()
			st.Degraded = g.degraded.Load()
			if r, _ := g.reason.Load().(string); r != "" {
				st.Reason = r
			} else if !st.Synced {
				st.Reason = "not_synced"
			}
		}
		out = append(out, st)
	}
	return out
}

// Waiting lists the resources Ready waits for: not started yet, or enabled,
// permitted and not synced.
func (m *Manager) Waiting() []string {
	var out []string
	for _, st := range m.States() {
		if st.Reason == "not_started" || st.Enabled && !st.Degraded && !st.Synced {
			out = append(out, string(st.Resource))
		}
	}
	return out
}

// Ready reports whether every enabled resource has synced. A degraded resource
// (access lost) is not waited for: its detectors are paused and say so.
func (m *Manager) Ready() bool { return len(m.Waiting()) == 0 }
