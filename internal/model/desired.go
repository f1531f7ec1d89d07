package model

import (
	"sort"
	"sync"
)

type desiredKey struct {
	ns, kind, name string
}

// argoDesired is the desired state fetched from the Argo CD API. It has its own lock
// so the poller never contends with the informers' writers; the store's read lock
// and this lock are never held in the opposite order.
type argoDesired struct {
	mu    sync.RWMutex
	byApp map[Ref][]Declared
	// index: object → the Applications that declare it (normally one).
	index map[desiredKey][]Ref
	// gen counts changes (scope.go's generations cannot: the table is written
	// without the store's lock).
	gen uint64
}

func newArgoDesired() *argoDesired {
	return &argoDesired{byApp: map[Ref][]Declared{}, index: map[desiredKey][]Ref{}}
}

// argoDesired is the Store's desired-state table (made with the Store).
func (s *Store) argoDesired() *argoDesired { return s.desired }

// SetArgoDesired replaces the desired objects of Application app. An empty list
// keeps the Application known with nothing desired.
func (s *Store) SetArgoDesired(app Ref, items []Declared) {
	d := s.argoDesired()
	cp := make([]Declared, len(items))
	for i, it := range items {
		it.Source = SourceRef{Kind: SourceApplication, Namespace: app.Namespace, Name: app.Name}
		it.Keys = append([]string(nil), it.Keys...)
		if it.ES != nil {
			es := *it.ES
			if es.Target == "" {
				es.Target = it.Name
			}
			es.DataKeys = append([]string(nil), es.DataKeys...)
			es.TemplateKeys = append([]string(nil), es.TemplateKeys...)
			it.ES = &es
		}
		cp[i] = it
	}
	sort.Slice(cp, func(i, j int) bool {
		a, b := cp[i], cp[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unindex(app)
	d.gen++
	d.byApp[app] = cp
	for _, it := range cp {
		k := desiredKey{it.Namespace, it.Kind, it.Name}
		d.index[k] = append(d.index[k], app)
		sortRefs(d.index[k])
	}
}

// ForgetArgoApp drops the desired objects of an Application.
func (s *Store) ForgetArgoApp(app Ref) {
	d := s.argoDesired()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unindex(app)
	d.gen++
	delete(d.byApp, app)
}

// ArgoAppRevision returns the revision Application app compares now
// (ArgoApp.SyncRevisionKey), and whether the Application is known.
func (s *Store) ArgoAppRevision(app Ref) (rev string, ok bool) {
	s.Read(func(v View) {
		var a *ArgoApp
		if a, ok = v.App(app.Namespace, app.Name); ok {
			rev = a.SyncRevisionKey()
		}
	})
	return rev, ok
}

// ArgoDesiredApps lists the Applications with recorded desired state, sorted.
func (s *Store) ArgoDesiredApps() []Ref {
	d := s.argoDesired()
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]Ref, 0, len(d.byApp))
	for r := range d.byApp {
		out = append(out, r)
	}
	sortRefs(out)
	return out
}

func (d *argoDesired) unindex(app Ref) {
	for _, it := range d.byApp[app] {
		k := desiredKey{it.Namespace, it.Kind, it.Name}
		refs := d.index[k][:0]
		for _, r := range d.index[k] {
			if r != app {
				refs = append(refs, r)
			}
		}
		if len(refs) == 0 {
			delete(d.index, k)
		} else {
			d.index[k] = refs
		}
	}
}

// ArgoDesired returns the desired state of object ns/name of kind (Secret or
// ExternalSecret) from the Argo CD API, when an Application declares it. When
// several do (a misconfiguration Argo CD itself warns about), the first by
// namespace and name wins.
func (v View) ArgoDesired(ns, kind, name string) (Declared, bool) {
	d := v.s.argoDesired()
	d.mu.RLock()
	defer d.mu.RUnlock()
	apps := d.index[desiredKey{ns, kind, name}]
	if len(apps) == 0 {
		return Declared{}, false
	}
	for _, it := range d.byApp[apps[0]] {
		if it.Namespace == ns && it.Kind == kind && it.Name == name {
			return it, true
		}
	}
	return Declared{}, false
}

// ArgoDesiredAll returns every desired object, sorted by Application, then
// namespace, kind and name. The slices inside are shared: do not modify them.
func (v View) ArgoDesiredAll() []Declared {
	d := v.s.argoDesired()
	d.mu.RLock()
	defer d.mu.RUnlock()
	apps := make([]Ref, 0, len(d.byApp))
	for r := range d.byApp {
		apps = append(apps, r)
	}
	sortRefs(apps)
	var out []Declared
	for _, r := range apps {
		out = append(out, d.byApp[r]...)
	}
	return out
}

func (d *argoDesired) generation() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.gen
}
