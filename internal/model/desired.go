package model

import (
	"slices"
	"sort"
	"sync"
)

type desiredKey struct {
	ns, kind, name string
}

// declaredStore is the one desired-state store: what every source declares,
// the target states the Argo CD API poller reads (per Application) and the
// builds the Flux poller makes (per Kustomization), with one index from an
// object to the sources that declare it, one lock and one generation. The
// pollers write it without the store's lock, so it has its own; the store's
// read lock and this lock are never held in the opposite order, and no other
// lock of the model (fluxState's) is taken while holding it.
type declaredStore struct {
	mu   sync.RWMutex
	argo map[Ref][]Declared
	flux map[Ref]*FluxDesired
	// index: object → the sources that declare it (normally one).
	index map[desiredKey][]SourceRef
	// gen counts changes (scope.go's generations cannot: the table is
	// written without the store's lock).
	gen uint64
}

func newDeclaredStore() *declaredStore {
	return &declaredStore{argo: map[Ref][]Declared{}, flux: map[Ref]*FluxDesired{}, index: map[desiredKey][]SourceRef{}}
}

// declared is the Store's desired-state table (made with the Store).
func (s *Store) declared() *declaredStore { return s.desired }

func (d *declaredStore) add(src SourceRef, objs []Declared) {
	for _, it := range objs {
		k := desiredKey{it.Namespace, it.Kind, it.Name}
		if !slices.Contains(d.index[k], src) {
			d.index[k] = append(d.index[k], src)
			sortSources(d.index[k])
		}
	}
}

func (d *declaredStore) remove(src SourceRef, objs []Declared) {
	for _, it := range objs {
		k := desiredKey{it.Namespace, it.Kind, it.Name}
		refs := d.index[k][:0]
		for _, r := range d.index[k] {
			if r != src {
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

func sortSources(s []SourceRef) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

func (d *declaredStore) generation() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.gen
}

// stamp copies objs with their source and revision set (the caller's slice
// is not written: a Flux build may be shared by several Kustomizations).
func stamp(objs []Declared, src SourceRef, rev func(Declared) string) []Declared {
	cp := make([]Declared, len(objs))
	for i, o := range objs {
		o.Source, o.Revision = src, rev(o)
		cp[i] = o
	}
	return cp
}

// ---- Argo CD: target states per Application --------------------------------

func appSource(app Ref) SourceRef {
	return SourceRef{Kind: SourceApplication, Namespace: app.Namespace, Name: app.Name}
}

// SetArgoDesired replaces the desired objects of Application app. An empty list
// keeps the Application known with nothing desired.
func (s *Store) SetArgoDesired(app Ref, items []Declared) {
	src := appSource(app)
	cp := stamp(items, src, func(o Declared) string { return o.Revision })
	for i := range cp {
		it := &cp[i]
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
	d := s.declared()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(src, d.argo[app])
	d.gen++
	d.argo[app] = cp
	d.add(src, cp)
}

// ForgetArgoApp drops the desired objects of an Application.
func (s *Store) ForgetArgoApp(app Ref) {
	d := s.declared()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(appSource(app), d.argo[app])
	d.gen++
	delete(d.argo, app)
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
	d := s.declared()
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]Ref, 0, len(d.argo))
	for r := range d.argo {
		out = append(out, r)
	}
	sortRefs(out)
	return out
}

// ArgoDesired returns the desired state of object ns/name of kind (Secret or
// ExternalSecret) from the Argo CD API, when an Application declares it. When
// several do (a misconfiguration Argo CD itself warns about), the first by
// namespace and name wins.
func (v View) ArgoDesired(ns, kind, name string) (Declared, bool) {
	d := v.s.declared()
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, src := range d.index[desiredKey{ns, kind, name}] {
		if src.Kind != SourceApplication {
			continue
		}
		for _, it := range d.argo[src.Ref()] {
			if it.Namespace == ns && it.Kind == kind && it.Name == name {
				return it, true
			}
		}
	}
	return Declared{}, false
}

// ArgoDesiredAll returns every desired object, sorted by Application, then
// namespace, kind and name. The slices inside are shared: do not modify them.
func (v View) ArgoDesiredAll() []Declared {
	d := v.s.declared()
	d.mu.RLock()
	defer d.mu.RUnlock()
	apps := make([]Ref, 0, len(d.argo))
	for r := range d.argo {
		apps = append(apps, r)
	}
	sortRefs(apps)
	var out []Declared
	for _, r := range apps {
		out = append(out, d.argo[r]...)
	}
	return out
}

// ---- Flux: builds per Kustomization ----------------------------------------

func ksSource(ks Ref) SourceRef {
	return SourceRef{Kind: SourceKustomization, Namespace: ks.Namespace, Name: ks.Name}
}

// SetFluxDesired records the build of a Kustomization (nil forgets it). Each
// object is stamped with the Kustomization and the revision built.
func (s *Store) SetFluxDesired(ks Ref, fd *FluxDesired) {
	d := s.declared()
	d.mu.Lock()
	defer d.mu.Unlock()
	src := ksSource(ks)
	if old := d.flux[ks]; old != nil {
		d.remove(src, old.Objects)
	}
	if fd == nil {
		delete(d.flux, ks)
	} else {
		cp := *fd
		cp.Kustomization = ks
		cp.Objects = stamp(fd.Objects, src, func(Declared) string { return fd.Revision })
		d.flux[ks] = &cp
		d.add(src, cp.Objects)
	}
	d.gen++
}

// forgetFlux drops the builds of one Kustomization (ks set) or of every one.
func (s *Store) forgetFlux(ks *Ref) {
	d := s.declared()
	d.mu.Lock()
	defer d.mu.Unlock()
	for r, fd := range d.flux {
		if ks == nil || r == *ks {
			d.remove(ksSource(r), fd.Objects)
			delete(d.flux, r)
		}
	}
	d.gen++
}

// FluxDesiredOf returns the build recorded for a Kustomization.
func (v View) FluxDesiredOf(ns, name string) (*FluxDesired, bool) {
	d := v.s.declared()
	d.mu.RLock()
	defer d.mu.RUnlock()
	fd, ok := d.flux[refOf(ns, name)]
	return fd, ok
}

// FluxNamespaces lists the namespaces of the objects Kustomizations' builds
// declare (they may hold nothing yet: an expected Secret is absent).
func (v View) FluxNamespaces() []string {
	d := v.s.declared()
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []string
	for _, fd := range d.flux {
		for _, o := range fd.Objects {
			out = append(out, o.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ---- every source ---------------------------------------------------------

// DeclaredBy lists the sources (Applications, Kustomizations) whose recorded
// desired state declares object ns/name of kind, sorted by kind, namespace
// and name.
func (v View) DeclaredBy(ns, kind, name string) []SourceRef {
	d := v.s.declared()
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.index[desiredKey{ns, kind, name}])
}
