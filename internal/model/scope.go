package model

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Change generations let a reader tell which namespaces changed since it last
// looked, so a scrape recomputes only those namespaces' findings. Every write
// stamps the namespace it touched with the next value of one counter; a write
// whose effect can reach other namespaces (Helm releases can render into any
// namespace, Argo CD Applications and their desired state, stores, a resource
// dropped when its CRD goes) stamps the global generation instead.
type generations struct {
	counter uint64
	global  uint64
	ns      map[string]uint64
}

// touch records a write to namespace ns. The caller holds the write lock.
func (s *Store) touch(ns string) {
	s.gens.counter++
	if s.gens.ns == nil {
		s.gens.ns = map[string]uint64{}
	}
	if _, ok := s.gens.ns[ns]; !ok {
		s.nsList = nil
	}
	s.gens.ns[ns] = s.gens.counter
}

// touchDeleted records a delete in namespace ns: the namespace may now be empty.
func (s *Store) touchDeleted(ns string) {
	s.touch(ns)
	s.nsList = nil
}

// touchAll records a write whose effect is not confined to one namespace.
func (s *Store) touchAll() {
	s.gens.counter++
	s.gens.global = s.gens.counter
	s.nsList = nil
}

// Generation is a namespace's change stamp and the global one: a result computed
// for the namespace is current as long as both are unchanged.
type Generation struct{ Namespace, Global, Declared, Flux uint64 }

// Generation returns namespace ns's current generation. Read it before computing
// from the view: the desired state (Argo CD, Flux) changes without the store's lock.
func (v View) Generation(ns string) Generation {
	desired := v.s.declared().generation()
	flux := v.s.flux().generation()
	v.s.nsMu.Lock() // Namespaces prunes gens.ns under it while other readers may run
	defer v.s.nsMu.Unlock()
	return Generation{Namespace: v.s.gens.ns[ns], Global: v.s.gens.global, Declared: desired, Flux: flux}
}

// Namespaces lists, sorted, every namespace a per-namespace detector may report
// on: those holding a namespaced record (Secret, Pod, ServiceAccount,
// ExternalSecret, SecretStore, Helm release) and those that a deployed Helm
// release renders into or Argo CD desires objects in, which may hold nothing yet
// (their expected Secrets are absent). A namespace that empties is dropped, and
// its generation with it: memory follows the namespaces that exist.
func (v View) Namespaces() []string {
	desiredGen := v.s.declared().generation() + v.s.flux().generation()<<32
	v.s.nsMu.Lock()
	defer v.s.nsMu.Unlock()
	if v.s.nsList != nil && v.s.nsListDesired == desiredGen {
		return v.s.nsList
	}
	set := map[string]bool{}
	for _, x := range v.s.secretList.list(v.s.secrets) {
		set[x.Namespace] = true
	}
	for _, x := range v.s.podList.list(v.s.pods) {
		set[x.Namespace] = true
	}
	for _, x := range v.s.esList.list(v.s.es) {
		set[x.Namespace] = true
	}
	for r := range v.s.sas {
		set[r.Namespace] = true
	}
	for k := range v.s.stores {
		if k.Namespace != "" {
			set[k.Namespace] = true
		}
	}
	for r := range v.s.releases {
		set[r.Namespace] = true
	}
	for _, h := range v.DeployedReleases() {
		for _, x := range h.Expectations {
			if x.Namespace != "" {
				set[x.Namespace] = true
			}
		}
	}
	for _, d := range v.ArgoDesiredAll() {
		set[d.Namespace] = true
	}
	// The builds are in the desired-state store, as Argo CD's target states
	// are: read under nsMu like them, and only when the list is rebuilt.
	for _, ns := range v.FluxNamespaces() {
		set[ns] = true
	}
	// Forget the generations of namespaces that emptied. Readers hold the read
	// lock, so no writer runs; readers touch gens.ns only under nsMu.
	for ns := range v.s.gens.ns {
		if !set[ns] {
			delete(v.s.gens.ns, ns)
		}
	}
	l := make([]string, 0, len(set))
	for ns := range set {
		l = append(l, ns)
	}
	sort.Strings(l)
	v.s.nsList, v.s.nsListDesired = l, desiredGen
	return l
}

// InNamespace returns the view restricted to namespace ns: Secrets, Pods,
// ExternalSecrets (lists and Each*) and ConsumedSecrets return only that
// namespace's records. Lookups by name, ServiceAccounts, stores, Helm releases and
// Argo CD objects stay cluster-wide: a detector that derives namespace ns's
// findings from them filters by namespace itself (see Scope).
func (v View) InNamespace(ns string) View {
	v.ns, v.scoped = ns, true
	return v
}

// At returns the view with the evaluation time now. A detector whose verdict
// depends on it (a grace period) calls RecheckAt with the time the verdict may
// change, which is recorded in *recheck (the earliest wins): a result reused
// between writes must be evaluated again by then. Without At, Now is zero and
// detectors apply no grace.
func (v View) At(now time.Time, recheck *time.Time) View {
	v.now, v.recheck = now, recheck
	return v
}

// Now is the evaluation time given to At (zero without it).
func (v View) Now() time.Time { return v.now }

// RecheckAt records that a verdict computed from this view may change at t
// without any write.
func (v View) RecheckAt(t time.Time) {
	if v.recheck != nil && (v.recheck.IsZero() || t.Before(*v.recheck)) {
		*v.recheck = t
	}
}

// Scope returns the namespace the view is restricted to, and whether it is.
func (v View) Scope() (string, bool) { return v.ns, v.scoped }

// InScope reports whether namespace ns is visible in the view.
func (v View) InScope(ns string) bool { return !v.scoped || ns == v.ns }

// nsRange returns the part of a list sorted by namespace and name that lies in ns.
func nsRange[T named](xs []T, ns string) []T {
	lo := sort.Search(len(xs), func(i int) bool { return strings.Compare(xs[i].GetNamespace(), ns) >= 0 })
	hi := lo + sort.Search(len(xs)-lo, func(i int) bool { return xs[lo+i].GetNamespace() != ns })
	return slices.Clip(xs[lo:hi])
}
