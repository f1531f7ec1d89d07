package kube

// The model's event handlers: every informer event upserts or removes a
// record, counted per resource and type.

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

type eventKey struct {
	res model.Resource
	typ string
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
