package model

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Resource names one watched resource. The names are the values of the
// `resource` label of driftwatch_informer_synced.
type Resource string

const (
	ResSecrets             Resource = "secrets"
	ResPods                Resource = "pods"
	ResServiceAccounts     Resource = "serviceaccounts"
	ResExternalSecrets     Resource = "externalsecrets"
	ResSecretStores        Resource = "secretstores"
	ResClusterSecretStores Resource = "clustersecretstores"
	ResHelmReleases        Resource = "helmreleases"
	ResApplications        Resource = "applications"
	// ResNamespaces: namespaces, for their driftwatch.io/ignore annotation only.
	// Watched only when the agent watches every namespace (a namespaced install
	// cannot read them); no detector requires them.
	ResNamespaces Resource = "namespaces"
)

// AllResources in a stable order.
var AllResources = []Resource{ResSecrets, ResPods, ResServiceAccounts, ResExternalSecrets,
	ResSecretStores, ResClusterSecretStores, ResHelmReleases, ResApplications, ResNamespaces,
	ResKustomizations, ResGitRepositories, ResOCIRepositories, ResBuckets, ResExternalArtifacts}

// StoreKey names a SecretStore (namespaced) or ClusterSecretStore (Namespace "").
type StoreKey struct {
	Kind      string
	Namespace string
	Name      string
}

// Store is the model: the value-free records, kept current by informer event
// handlers, and the indexes the detectors query. Readers take a View under the read
// lock; writers are the event handlers.
type Store struct {
	mu sync.RWMutex

	secrets  map[Ref]*Secret
	pods     map[Ref]*Pod
	sas      map[Ref]*ServiceAccount
	es       map[Ref]*ExternalSecret
	stores   map[StoreKey]*SecretStore
	releases map[Ref]*HelmRelease
	apps     map[Ref]*ArgoApp
	nss      map[string]*Namespace

	// podsBySecret: Secret → names of the pods (of its namespace) that reference it.
	podsBySecret nameIndex
	// esByTarget: target Secret → names of the ExternalSecrets (of its namespace)
	// writing it.
	esByTarget nameIndex
	// esSyncSeen: when this process saw an ExternalSecret's spec change that ESO
	// has not synced yet (SyncPending), or ESO's status catch up with one
	// (ExternalSecretSyncSeen).
	esSyncSeen map[Ref]time.Time

	// history holds what only a watch can see: observed data changes.
	history *History

	// desired (desired.go: the one desired-state store, what every source
	// declares) and fluxState (flux.go: Kustomizations and sources) keep their
	// own locks and generations: they are written without the store's lock.
	desired   *declaredStore
	fluxState *fluxState

	// The big maps' values in key order, rebuilt only after an insert or delete:
	// an update (the common event) replaces its record in place, so a scrape does
	// not sort every Secret, Pod and ExternalSecret again for each detector.
	secretList sortedList[*Secret]
	podList    sortedList[*Pod]
	esList     sortedList[*ExternalSecret]

	// gens stamps writes per namespace (scope.go); nsList caches View.Namespaces.
	gens generations
	// deployed caches DeployedReleases until a Helm release record changes.
	deployed sortedList[*HelmRelease]
	nsMu     sync.Mutex
	nsList   []string
	// nsListDesired is the desired-state and Flux generation nsList was built at.
	nsListDesired uint64
}

// sortedList caches one map's values sorted by namespace and name. Writers
// (holding the Store's write lock, so no reader runs) invalidate it or replace a
// record in place; readers, who may run concurrently under the read lock, rebuild
// it under mu. The slice handed out is shared: valid inside Store.Read only, and
// never to be modified.
type sortedList[T named] struct {
	mu    sync.Mutex
	valid bool
	xs    []T
}

func (l *sortedList[T]) invalidate() { l.valid, l.xs = false, nil }

// replace puts x in the place of the record with the same key (an update).
func (l *sortedList[T]) replace(x T) {
	if !l.valid {
		return
	}
	r := refOf(x.GetNamespace(), x.GetName())
	i, ok := slices.BinarySearchFunc(l.xs, r, func(e T, r Ref) int { return compareRefs(refOf(e.GetNamespace(), e.GetName()), r) })
	if !ok {
		l.invalidate()
		return
	}
	l.xs[i] = x
}

func (l *sortedList[T]) list(m map[Ref]T) []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.valid {
		xs := make([]T, 0, len(m))
		for _, x := range m {
			xs = append(xs, x)
		}
		slices.SortFunc(xs, func(a, b T) int {
			return compareRefs(refOf(a.GetNamespace(), a.GetName()), refOf(b.GetNamespace(), b.GetName()))
		})
		l.xs, l.valid = xs, true
	}
	return l.xs
}

func compareRefs(a, b Ref) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// NewStore returns an empty store. history may be nil for a default one.
func NewStore(h *History) *Store {
	if h == nil {
		h = NewHistory(HistoryOptions{})
	}
	return &Store{
		desired:      newDeclaredStore(),
		fluxState:    newFluxState(),
		secrets:      map[Ref]*Secret{},
		pods:         map[Ref]*Pod{},
		sas:          map[Ref]*ServiceAccount{},
		es:           map[Ref]*ExternalSecret{},
		stores:       map[StoreKey]*SecretStore{},
		releases:     map[Ref]*HelmRelease{},
		apps:         map[Ref]*ArgoApp{},
		nss:          map[string]*Namespace{},
		podsBySecret: nameIndex{},
		esByTarget:   nameIndex{},
		esSyncSeen:   map[Ref]time.Time{},
		history:      h,
	}
}

func refOf(ns, name string) Ref { return Ref{Namespace: ns, Name: name} }

// nameIndex maps a Secret to the sorted names of the objects of its namespace that
// refer to it: a slice of names shared with the records costs 16 B a reference,
// where a set per Secret cost a map each.
type nameIndex map[Ref][]string

func (x nameIndex) add(k Ref, name string) {
	l := x[k]
	i, found := slices.BinarySearch(l, name)
	if !found {
		x[k] = slices.Insert(l, i, name)
	}
}

func (x nameIndex) del(k Ref, name string) {
	l := x[k]
	i, found := slices.BinarySearch(l, name)
	if !found {
		return
	}
	l = slices.Delete(l, i, i+1)
	switch {
	case len(l) == 0:
		delete(x, k)
	case cap(l) > 16 && cap(l) > 4*len(l):
		x[k] = slices.Clone(l) // give back what a crowd of referrers left
	default:
		x[k] = l
	}
}

// UpsertSecret records a Secret add or update at time now.
func (s *Store) UpsertSecret(sec *Secret, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch(sec.Namespace)
	r := refOf(sec.Namespace, sec.Name)
	old, existed := s.secrets[r]
	s.secrets[r] = sec
	if existed {
		s.secretList.replace(sec)
	} else {
		s.secretList.invalidate()
	}
	s.history.Observe(r, old, sec, now)
}

// DeleteSecret forgets a Secret deleted at time now. The history remembers what
// it held for a while, so a re-create with the same data is not a change.
func (s *Store) DeleteSecret(ns, name string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchDeleted(ns)
	r := refOf(ns, name)
	old, ok := s.secrets[r]
	if ok {
		s.secretList.invalidate()
	}
	delete(s.secrets, r)
	s.history.Deleted(r, old, now)
}

// UpsertPod records a pod and re-indexes its Secret references.
func (s *Store) UpsertPod(p *Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch(p.Namespace)
	r := refOf(p.Namespace, p.Name)
	if old := s.pods[r]; old != nil {
		for _, u := range old.Uses {
			s.podsBySecret.del(refOf(old.Namespace, u.Secret), old.Name)
		}
	}
	existed := s.pods[r] != nil
	s.pods[r] = p
	if existed {
		s.podList.replace(p)
	} else {
		s.podList.invalidate()
	}
	for _, u := range p.Uses {
		s.podsBySecret.add(refOf(p.Namespace, u.Secret), p.Name)
	}
}

// DeletePod forgets a pod.
func (s *Store) DeletePod(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchDeleted(ns)
	r := refOf(ns, name)
	if old := s.pods[r]; old != nil {
		for _, u := range old.Uses {
			s.podsBySecret.del(refOf(old.Namespace, u.Secret), old.Name)
		}
		s.podList.invalidate()
	}
	delete(s.pods, r)
}

// UpsertServiceAccount records a ServiceAccount.
func (s *Store) UpsertServiceAccount(sa *ServiceAccount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch(sa.Namespace)
	s.sas[refOf(sa.Namespace, sa.Name)] = sa
}

// DeleteServiceAccount forgets a ServiceAccount.
func (s *Store) DeleteServiceAccount(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchDeleted(ns)
	delete(s.sas, refOf(ns, name))
}

// syncMoved reports whether e's spec changed since old (its generation), or
// ESO synced another generation than it had. A label or annotation change
// alone, and ESO syncing it, change neither (status.syncedResourceVersion's
// hash of them, not its generation): nothing of what the ExternalSecret
// writes changed, and its findings stand without a pause.
func syncMoved(old, e *ExternalSecret) bool {
	if old.Generation != e.Generation {
		return true
	}
	og, ook := old.syncedGeneration()
	ng, nok := e.syncedGeneration()
	return ook != nok || og != ng
}

// UpsertExternalSecret records an ExternalSecret seen at time now (zero: no
// time, as offline) and re-indexes its target.
func (s *Store) UpsertExternalSecret(e *ExternalSecret, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch(e.Namespace)
	r := refOf(e.Namespace, e.Name)
	old := s.es[r]
	if old != nil {
		s.esByTarget.del(refOf(old.Namespace, old.Target), old.Name)
	}
	switch {
	case now.IsZero():
	case old == nil && e.SyncPending(), old != nil && syncMoved(old, e):
		// First seen with a spec ESO has not synced (this process started
		// meanwhile), or the spec changed, or ESO synced a change of it: a
		// relist or an unchanged re-delivery keeps the first instant.
		s.esSyncSeen[r] = now
	case old == nil:
		delete(s.esSyncSeen, r)
	}
	existed := old != nil
	s.es[r] = e
	if existed {
		s.esList.replace(e)
	} else {
		s.esList.invalidate()
	}
	s.esByTarget.add(refOf(e.Namespace, e.Target), e.Name)
}

// DeleteExternalSecret forgets an ExternalSecret.
func (s *Store) DeleteExternalSecret(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchDeleted(ns)
	r := refOf(ns, name)
	if old := s.es[r]; old != nil {
		s.esByTarget.del(refOf(old.Namespace, old.Target), old.Name)
		s.esList.invalidate()
	}
	delete(s.es, r)
	delete(s.esSyncSeen, r)
}

// UpsertStore records a SecretStore or ClusterSecretStore.
func (s *Store) UpsertStore(st *SecretStore) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchAll()
	s.stores[StoreKey{Kind: st.StoreKind, Namespace: st.Namespace, Name: st.Name}] = st
}

// DeleteStore forgets a store.
func (s *Store) DeleteStore(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchAll()
	delete(s.stores, StoreKey{Kind: kind, Namespace: ns, Name: name})
}

// UpsertHelmRelease records a Helm release Secret's summary.
func (s *Store) UpsertHelmRelease(h *HelmRelease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchAll()
	s.deployed.invalidate()
	s.releases[refOf(h.Namespace, h.Name)] = h
}

// DeleteHelmRelease forgets a Helm release Secret.
func (s *Store) DeleteHelmRelease(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchAll()
	s.deployed.invalidate()
	delete(s.releases, refOf(ns, name))
}

// UpsertApp records an Argo CD Application.
func (s *Store) UpsertApp(a *ArgoApp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := refOf(a.Namespace, a.Name)
	if !sameAppRecord(s.apps[k], a) {
		// Every namespace's findings may read an Application (the desired
		// state it delivers): all are evaluated again, unless nothing the
		// record keeps changed. Argo CD writes an Application's status at
		// every refresh (status.reconciledAt, every 3 minutes by default):
		// with hundreds of Applications, invalidating on each write kept
		// every scrape re-evaluating every namespace (test/bench/gitops).
		s.touchAll()
	}
	s.apps[k] = a
}

// sameAppRecord reports whether two records of an Application say the same
// but for their resourceVersion (which nothing reads).
func sameAppRecord(old, cur *ArgoApp) bool { return sameButVersion(old, cur) }

// sameButVersion reports whether two records of an object say the same but
// for their resourceVersion: a write that changed nothing a record keeps
// (a controller's status write at every reconcile) needs no evaluation.
func sameButVersion[T any, P interface {
	*T
	versioned
}](old, cur P) bool {
	if old == nil || cur == nil {
		return false
	}
	a, b := *old, *cur
	P(&a).SetResourceVersion("")
	P(&b).SetResourceVersion("")
	return reflect.DeepEqual(a, b)
}

type versioned interface{ SetResourceVersion(string) }

// DeleteApp forgets an Application.
func (s *Store) DeleteApp(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchAll()
	delete(s.apps, refOf(ns, name))
}

// UpsertNamespace records a namespace (its ignore annotation): the findings of
// the namespace are evaluated again.
func (s *Store) UpsertNamespace(n *Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.nss[n.Name]
	s.nss[n.Name] = n
	if old == nil || old.Annotations[AnnIgnore] != n.Annotations[AnnIgnore] {
		s.touch(n.Name) // a namespace that holds nothing is pruned from gens again
	}
}

// DeleteNamespace forgets a namespace.
func (s *Store) DeleteNamespace(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nss[name]; ok {
		delete(s.nss, name)
		s.touchDeleted(name)
	}
}

// ClearResource drops every record of a resource, used when its CRD disappears.
func (s *Store) ClearResource(r Resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchAll()
	switch r {
	case ResExternalSecrets:
		s.es = map[Ref]*ExternalSecret{}
		s.esByTarget = nameIndex{}
		s.esList.invalidate()
	case ResSecretStores, ResClusterSecretStores:
		kind := "SecretStore"
		if r == ResClusterSecretStores {
			kind = "ClusterSecretStore"
		}
		for k := range s.stores {
			if k.Kind == kind {
				delete(s.stores, k)
			}
		}
	case ResApplications:
		s.apps = map[Ref]*ArgoApp{}
	case ResKustomizations, ResGitRepositories, ResOCIRepositories, ResBuckets, ResExternalArtifacts:
		s.ClearFlux(r)
	}
}

// Read runs fn with a consistent read-only View of the model.
func (s *Store) Read(fn func(v View)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(View{s: s, pass: &readPass{}})
}

// readPass holds what DesiredMemo built during one Store.Read.
type readPass struct {
	mu   sync.Mutex
	memo map[string]passMemo
}

type passMemo struct {
	declared, flux uint64
	val            any
}

// DesiredMemo returns build's value for key, built at most once per Store.Read
// while the desired-state and Flux generations stay those read before it was
// built: for values derived from the whole cluster's desired state that each
// namespace's evaluation would otherwise derive again (detect.GitOpsDesired).
// The desired-state store and the Flux state are written without the store's
// lock, so a write between two namespaces' evaluations makes the next call
// build again; the per-namespace results keyed on Generation, read before
// their evaluation, are thus never computed from older state than their key
// says. build gets the view unscoped and without an evaluation time: its value
// must not depend on either.
func (v View) DesiredMemo(key string, build func(View) any) any {
	if v.pass == nil {
		return build(View{s: v.s})
	}
	declared, flux := v.s.declared().generation(), v.s.flux().generation()
	v.pass.mu.Lock()
	defer v.pass.mu.Unlock()
	if m, ok := v.pass.memo[key]; ok && m.declared == declared && m.flux == flux {
		return m.val
	}
	val := build(View{s: v.s})
	if v.pass.memo == nil {
		v.pass.memo = map[string]passMemo{}
	}
	v.pass.memo[key] = passMemo{declared: declared, flux: flux, val: val}
	return val
}

// View is a read-only view of the model, valid only inside Store.Read. Its slices
// are sorted so detector output is deterministic.
type View struct {
	s *Store
	// ns restricts the namespaced lists when scoped (InNamespace).
	ns     string
	scoped bool
	// now and recheck: see At.
	now     time.Time
	recheck *time.Time
	// pass: what DesiredMemo keeps for the Store.Read the view belongs to.
	pass *readPass
}

// Secret returns a Secret by namespace and name.
func (v View) Secret(ns, name string) (*Secret, bool) {
	x, ok := v.s.secrets[refOf(ns, name)]
	return x, ok
}

// Secrets returns every Secret, sorted by namespace and name.
func (v View) Secrets() []*Secret {
	xs := v.s.secretList.list(v.s.secrets)
	if v.scoped {
		return nsRange(xs, v.ns)
	}
	return xs
}

// EachPod calls fn for every pod in no particular order: for detectors that sort
// their own output, it saves sorting the whole pod list per scrape.
func (v View) EachPod(fn func(*Pod)) {
	if v.scoped {
		for _, p := range v.Pods() {
			fn(p)
		}
		return
	}
	for _, p := range v.s.pods {
		fn(p)
	}
}

// EachSecret calls fn for every Secret in no particular order.
func (v View) EachSecret(fn func(*Secret)) {
	if v.scoped {
		for _, s := range v.Secrets() {
			fn(s)
		}
		return
	}
	for _, s := range v.s.secrets {
		fn(s)
	}
}

// EachExternalSecret calls fn for every ExternalSecret in no particular order.
func (v View) EachExternalSecret(fn func(*ExternalSecret)) {
	if v.scoped {
		for _, e := range v.ExternalSecrets() {
			fn(e)
		}
		return
	}
	for _, e := range v.s.es {
		fn(e)
	}
}

// Sizes returns the number of pods, Secrets and ExternalSecrets (for pre-sizing).
func (v View) Sizes() (pods, secrets, externalSecrets int) {
	return len(v.s.pods), len(v.s.secrets), len(v.s.es)
}

// Pods returns every pod, sorted.
func (v View) Pods() []*Pod {
	xs := v.s.podList.list(v.s.pods)
	if v.scoped {
		return nsRange(xs, v.ns)
	}
	return xs
}

// Pod returns a pod by name.
func (v View) Pod(ns, name string) (*Pod, bool) {
	x, ok := v.s.pods[refOf(ns, name)]
	return x, ok
}

// PodsUsing returns the pods that reference Secret ns/name, sorted.
func (v View) PodsUsing(ns, name string) []*Pod {
	names := v.s.podsBySecret[refOf(ns, name)]
	out := make([]*Pod, 0, len(names))
	for _, n := range names { // sorted, all in namespace ns
		if p := v.s.pods[refOf(ns, n)]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// ConsumedSecrets returns the Secrets that at least one pod references, sorted.
func (v View) ConsumedSecrets() []Ref {
	out := make([]Ref, 0, len(v.s.podsBySecret))
	for r := range v.s.podsBySecret {
		if v.InScope(r.Namespace) {
			out = append(out, r)
		}
	}
	sortRefs(out)
	return out
}

// ServiceAccount returns a ServiceAccount by name.
func (v View) ServiceAccount(ns, name string) (*ServiceAccount, bool) {
	x, ok := v.s.sas[refOf(ns, name)]
	return x, ok
}

// ServiceAccounts returns every ServiceAccount, sorted.
func (v View) ServiceAccounts() []*ServiceAccount { return sortedValues(v.s.sas) }

// ExternalSecrets returns every ExternalSecret, sorted.
func (v View) ExternalSecrets() []*ExternalSecret {
	xs := v.s.esList.list(v.s.es)
	if v.scoped {
		return nsRange(xs, v.ns)
	}
	return xs
}

// ExternalSecret returns one by name.
func (v View) ExternalSecret(ns, name string) (*ExternalSecret, bool) {
	x, ok := v.s.es[refOf(ns, name)]
	return x, ok
}

// ExternalSecretSyncSeen returns when this process saw e's spec change (or
// first saw e with a spec ESO has not synced: SyncPending) or saw ESO's
// status catch up with such a change; false when it saw neither (e unchanged
// since this process first saw it synced).
func (v View) ExternalSecretSyncSeen(e *ExternalSecret) (time.Time, bool) {
	at, ok := v.s.esSyncSeen[refOf(e.Namespace, e.Name)]
	return at, ok
}

// ExternalSecretsTargeting returns the ExternalSecrets whose target is ns/secret.
func (v View) ExternalSecretsTargeting(ns, secret string) []*ExternalSecret {
	names := v.s.esByTarget[refOf(ns, secret)]
	out := make([]*ExternalSecret, 0, len(names))
	for _, n := range names { // sorted, all in namespace ns
		if e := v.s.es[refOf(ns, n)]; e != nil {
			out = append(out, e)
		}
	}
	return out
}

// Stores returns every SecretStore and ClusterSecretStore, sorted by kind, namespace, name.
func (v View) Stores() []*SecretStore {
	out := make([]*SecretStore, 0, len(v.s.stores))
	for _, st := range v.s.stores {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.StoreKind != b.StoreKind {
			return a.StoreKind < b.StoreKind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// Store returns the store an ExternalSecret in namespace ns refers to.
func (v View) Store(kind, ns, name string) (*SecretStore, bool) {
	if kind == "" {
		kind = "SecretStore"
	}
	if kind == "ClusterSecretStore" {
		ns = ""
	}
	x, ok := v.s.stores[StoreKey{Kind: kind, Namespace: ns, Name: name}]
	return x, ok
}

// HelmReleases returns every Helm release record, sorted.
func (v View) HelmReleases() []*HelmRelease { return sortedValues(v.s.releases) }

// DeployedReleases returns, per release (namespace + release name), the deployed
// record with the highest revision. Superseded and failed revisions never count.
func (v View) DeployedReleases() []*HelmRelease {
	c := &v.s.deployed
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid {
		return c.xs
	}
	best := map[Ref]*HelmRelease{}
	for _, h := range v.s.releases {
		if h.Status != "deployed" || h.DecodeErr != "" {
			continue
		}
		k := refOf(h.Namespace, h.Release)
		if cur := best[k]; cur == nil || h.Revision > cur.Revision {
			best[k] = h
		}
	}
	c.xs, c.valid = sortedValues(best), true
	return c.xs
}

// Apps returns every Argo CD Application, sorted.
func (v View) Apps() []*ArgoApp { return sortedValues(v.s.apps) }

// App returns the Argo CD Application ns/name.
func (v View) App(ns, name string) (*ArgoApp, bool) {
	a, ok := v.s.apps[refOf(ns, name)]
	return a, ok
}

// Ignores reports whether findings of detector about object obj of namespace ns
// are silenced by a driftwatch.io/ignore annotation on the object or on its
// namespace. obj may be nil (an absent object: only the namespace counts).
func (v View) Ignores(ns string, obj *ObjectMeta, detector string) bool {
	if obj != nil && obj.Ignores(detector) {
		return true
	}
	if n := v.s.nss[ns]; n != nil && n.Ignores(detector) {
		return true
	}
	return false
}

// MetaKinds lists the kinds View.Meta resolves: every kind a finding names
// (finding.ObjectRef) must be one, so driftwatch.io/ignore on it works.
var MetaKinds = []string{"Secret", "ExternalSecret", "Pod", "ServiceAccount", "SecretStore", "ClusterSecretStore",
	"Application", "Kustomization", "GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"}

// Meta returns the metadata of object ns/name of kind (one of MetaKinds),
// when it is in the model.
func (v View) Meta(kind, ns, name string) (*ObjectMeta, bool) {
	r := refOf(ns, name)
	switch kind {
	case "Secret":
		if x := v.s.secrets[r]; x != nil {
			return &x.ObjectMeta, true
		}
	case "ExternalSecret":
		if x := v.s.es[r]; x != nil {
			return &x.ObjectMeta, true
		}
	case "Pod":
		if x := v.s.pods[r]; x != nil {
			return &x.ObjectMeta, true
		}
	case "ServiceAccount":
		if x := v.s.sas[r]; x != nil {
			return &x.ObjectMeta, true
		}
	case "SecretStore", "ClusterSecretStore":
		if kind == "ClusterSecretStore" {
			ns = ""
		}
		if x := v.s.stores[StoreKey{Kind: kind, Namespace: ns, Name: name}]; x != nil {
			return &x.ObjectMeta, true
		}
	case "Application":
		if x := v.s.apps[r]; x != nil {
			return &x.ObjectMeta, true
		}
	case "Kustomization", "GitRepository", "OCIRepository", "Bucket", "ExternalArtifact":
		return v.fluxMeta(kind, ns, name)
	}
	return nil, false
}

// History is the observed-change history (flips, last data change).
func (v View) History() *History { return v.s.history }

// Counts returns how many records of each resource the model holds.
func (v View) Counts() map[Resource]int {
	stores, cstores := 0, 0
	for k := range v.s.stores {
		if k.Kind == "ClusterSecretStore" {
			cstores++
		} else {
			stores++
		}
	}
	out := map[Resource]int{
		ResSecrets: len(v.s.secrets), ResPods: len(v.s.pods), ResServiceAccounts: len(v.s.sas),
		ResExternalSecrets: len(v.s.es), ResSecretStores: stores, ResClusterSecretStores: cstores,
		ResHelmReleases: len(v.s.releases), ResApplications: len(v.s.apps), ResNamespaces: len(v.s.nss),
	}
	v.fluxCounts(out)
	return out
}

type named interface {
	GetNamespace() string
	GetName() string
}

func sortedValues[T named](m map[Ref]T) []T {
	out := make([]T, 0, len(m))
	for _, x := range m {
		out = append(out, x)
	}
	sortByRef(out)
	return out
}

func sortByRef[T named](xs []T) {
	sort.Slice(xs, func(i, j int) bool {
		if a, b := xs[i].GetNamespace(), xs[j].GetNamespace(); a != b {
			return a < b
		}
		return xs[i].GetName() < xs[j].GetName()
	})
}

func sortRefs(rs []Ref) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Namespace != rs[j].Namespace {
			return rs[i].Namespace < rs[j].Namespace
		}
		return rs[i].Name < rs[j].Name
	})
}
