package kube

// Each resource's health: watch errors, denials confirmed by a probe after a
// grace (degraded), sync state, and readiness.

import (
	"context"
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

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
