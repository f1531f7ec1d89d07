package model

import (
	"slices"
	"sort"
	"strings"
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

// touchAll records a write whose effect is not confined to one namespace.
func (s *Store) touchAll() {
	s.gens.counter++
	s.gens.global = s.gens.counter
}

// Generation is a namespace's change stamp and the global one: a result computed
// for the namespace is current as long as both are unchanged.
type Generation struct{ Namespace, Global, ArgoDesired uint64 }

// Generation returns namespace ns's current generation. Read it before computing
// from the view: the Argo CD desired state changes without the store's lock.
func (v View) Generation(ns string) Generation {
	return Generation{Namespace: v.s.gens.ns[ns], Global: v.s.gens.global, ArgoDesired: v.s.argoDesired().generation()}
}

// Namespaces lists, sorted, every namespace that has held a namespaced record
// (Secret, Pod, ServiceAccount, ExternalSecret) since the store was created.
func (v View) Namespaces() []string {
	v.s.nsMu.Lock()
	defer v.s.nsMu.Unlock()
	if v.s.nsList == nil {
		l := make([]string, 0, len(v.s.gens.ns))
		for ns := range v.s.gens.ns {
			l = append(l, ns)
		}
		sort.Strings(l)
		v.s.nsList = l
	}
	return v.s.nsList
}

// InNamespace returns the view restricted to namespace ns: Secrets, Pods,
// ExternalSecrets (lists and Each*) and ConsumedSecrets return only that
// namespace's records. Lookups by name, ServiceAccounts, stores, Helm releases and
// Argo CD objects stay cluster-wide: a detector that derives namespace ns's
// findings from them filters by namespace itself (see Scope).
func (v View) InNamespace(ns string) View { return View{s: v.s, ns: ns, scoped: true} }

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
