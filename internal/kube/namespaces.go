package kube

// Per-namespace watches (Options.ScopedWatches): a shard watches its
// namespaced resources with one watch per namespace it owns, started and
// stopped as the namespace informer sees namespaces come and go.

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

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

// scoped reports whether r is watched per own namespace.
func (m *Manager) scoped(r *resource) bool {
	return m.opts.ScopedWatches && !r.clusterScoped && !r.crossNamespace
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
