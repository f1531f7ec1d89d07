package detect

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Expectation says that Secret Namespace/Secret must exist and, when Key is set,
// hold Key.
type Expectation struct {
	Namespace string
	Secret    string
	Key       string // "" when only the Secret's existence is expected
	Source    Source
	// Optional: the consumer tolerates the absence (optional secretKeyRef). Such a
	// key is still expected: its absence is the silent kind of failure.
	Optional  bool
	Consumers []Consumer
}

type expKey struct {
	ns, secret, key string
	source          Source
}

type expSet struct {
	m map[expKey]*Expectation
	// keep, when set, filters expectations before anything is allocated for them:
	// the missing-keys detector keeps only those its Secrets violate, so a scrape
	// does not build (and sort) an entry for every key every pod reads.
	keep func(ns, secret, key string) bool
	// scope, when scoped, drops expectations on Secrets of other namespaces (a
	// namespace-restricted view still sees every Helm release and Argo CD object).
	scope  string
	scoped bool
	// settle skips the expectations of an ExternalSecret whose target is absent
	// while its status is within TargetGrace, or whose spec's last change ESO
	// has not synced yet (esSyncUnsettled) (the missing-keys detector).
	settle bool
	// ignoring, when set, is the detector whose driftwatch.io/ignore on a
	// consumer (a pod, an ExternalSecret) drops that consumer's expectations;
	// the violated ones dropped are counted in silenced (per namespace, once per
	// Secret, key and source).
	ignoring string
	silenced map[expKey]bool
}

// ignored reports whether consumer meta ignores the set's detector, and counts
// the expectation it would have stated when it is violated.
func (s *expSet) ignored(meta *model.ObjectMeta, ns, secret, key string, src Source) bool {
	if s.ignoring == "" || !meta.Ignores(s.ignoring) {
		return false
	}
	if s.scoped && ns != s.scope {
		return true
	}
	if s.keep == nil || s.keep(ns, secret, key) {
		if s.silenced == nil {
			s.silenced = map[expKey]bool{}
		}
		s.silenced[expKey{ns, secret, key, src}] = true
	}
	return true
}

func newExpSet(size int) *expSet { return &expSet{m: make(map[expKey]*Expectation, size)} }

func (s *expSet) add(ns, secret, key string, src Source, optional bool, c Consumer) {
	if s.scoped && ns != s.scope {
		return
	}
	if s.keep != nil && !s.keep(ns, secret, key) {
		return
	}
	k := expKey{ns, secret, key, src}
	e := s.m[k]
	if e == nil {
		e = &Expectation{Namespace: ns, Secret: secret, Key: key, Source: src, Optional: optional}
		s.m[k] = e
	} else if !optional {
		e.Optional = false
	}
	for i := range e.Consumers {
		if e.Consumers[i].Kind == c.Kind && e.Consumers[i].Name == c.Name {
			e.Consumers[i].Pods += c.Pods
			return
		}
	}
	e.Consumers = append(e.Consumers, c)
}

func (s *expSet) list() []Expectation {
	out := make([]Expectation, 0, len(s.m))
	for _, e := range s.m {
		sortConsumers(e.Consumers)
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Key < b.Key
	})
	return out
}

// PodActive reports whether a pod still consumes its Secrets: not finished and
// not shutting down. A terminating pod starts no container again; counting it
// would report the Secrets of an uninstalled app (helm uninstall, kubectl
// delete -f) while its pods drain, for as long as a pod on an unreachable node
// stays Terminating.
func PodActive(p *model.Pod) bool {
	return p.Phase != "Succeeded" && p.Phase != "Failed" && !p.Terminating
}

// Expectations gathers every expectation from the sources that are available.
func Expectations(v model.View, avail model.Availability) []Expectation {
	np, ns, ne := v.Sizes()
	return gatherExpectations(v, avail, newExpSet(np/2+ns+ne*2))
}

// gatherExpectations adds every source's expectations to set (which may filter
// them) and returns the set's sorted list.
func gatherExpectations(v model.View, avail model.Availability, set *expSet) []Expectation {
	set.scope, set.scoped = v.Scope()
	if avail[model.ResPods] {
		var seen []expKey // the keys this pod already stated; pods read a handful
		v.EachPod(func(p *model.Pod) {
			if !PodActive(p) {
				return
			}
			c := Consumer{Kind: p.Workload.Kind, Name: p.Workload.Name, Pods: 1}
			seen = seen[:0]
		uses:
			for _, u := range p.Uses {
				if u.Key == "" && u.Optional {
					continue // optional envFrom / volume: the Secret may be absent
				}
				if !u.Via.Expects() {
					continue // an imagePullSecret: a reader, not an expectation
				}
				k := expKey{p.Namespace, u.Secret, u.Key, SourcePod}
				for _, s := range seen {
					if s == k {
						if !u.Optional {
							if e := set.m[k]; e != nil {
								e.Optional = false // a required use of the same key makes it required
							}
						}
						continue uses // one pod counts once per expectation
					}
				}
				seen = append(seen, k)
				if set.ignored(&p.ObjectMeta, p.Namespace, u.Secret, u.Key, SourcePod) {
					continue
				}
				set.add(p.Namespace, u.Secret, u.Key, SourcePod, u.Optional, c)
			}
		})
	}
	if avail[model.ResExternalSecrets] {
		v.EachExternalSecret(func(e *model.ExternalSecret) {
			if e.DecodeErr != "" || e.Ready.Status == "" || e.Deleting {
				return // not reconciled yet (ESO has not acted), or on its way out: nothing to expect
			}
			emptied := ESEmptiedOnPurpose(v, e)
			if set.settle {
				if _, ok := v.Secret(e.Namespace, e.Target); !ok && targetUnsettled(v, e) {
					return
				}
				if esSyncUnsettled(v, e) {
					return // ESO has not acted on the spec's last change yet
				}
			}
			c := Consumer{Kind: "ExternalSecret", Name: e.Name}
			add := func(key string, src Source) {
				if !set.ignored(&e.ObjectMeta, e.Namespace, e.Target, key, src) {
					set.add(e.Namespace, e.Target, key, src, false, c)
				}
			}
			if e.WritesTarget() && !emptied {
				keys := e.WrittenKeys()
				if len(keys) == 0 {
					add("", SourceExternalSecret)
				}
				for _, k := range keys {
					add(k, SourceExternalSecret)
				}
			}
			for _, k := range e.ExpectedKeys {
				add(k, SourceAnnotation)
			}
		})
	}
	if avail[model.ResHelmReleases] {
		for _, h := range v.DeployedReleases() {
			c := Consumer{Kind: "HelmRelease", Name: h.Release}
			for _, x := range h.Expectations {
				ns := x.Namespace
				if ns == "" {
					ns = h.Namespace
				}
				if !v.InScope(ns) {
					continue // the target is in ns (DesiredTarget), another namespace's: a scoped view sees every release
				}
				x.Namespace = ns
				t, ok := DesiredTarget(v, &x)
				if !ok {
					continue // creationPolicy None, or emptied on purpose: as for a live ExternalSecret
				}
				if len(t.Keys) == 0 {
					set.add(t.Namespace, t.Secret, "", SourceHelm, false, c)
				}
				for _, k := range t.Keys {
					set.add(t.Namespace, t.Secret, k, SourceHelm, false, c)
				}
			}
		}
	}
	gitopsExpectations(v, GitOpsDesired(v), func(ns, secret, key string, src Source, c Consumer) {
		set.add(ns, secret, key, src, false, c)
	})
	v.EachSecret(func(s *model.Secret) {
		if len(s.ExpectedKeys) == 0 {
			return
		}
		c := Consumer{Kind: "Secret", Name: s.Name}
		for _, k := range s.ExpectedKeys {
			set.add(s.Namespace, s.Name, k, SourceAnnotation, false, c)
		}
	})
	return set.list()
}
