package detect

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// MissingKey is a key an expectation names that its Secret lacks.
type MissingKey struct {
	Namespace string
	Secret    string
	Key       string
	Source    Source
	Optional  bool
	Consumers []Consumer
}

// AbsentSecret is a Secret an expectation names that does not exist.
type AbsentSecret struct {
	Namespace string
	Secret    string
	Source    Source
	Consumers []Consumer
}

// MissingKeysResult is the output of the missing-keys detector.
type MissingKeysResult struct {
	Missing []MissingKey
	Absent  []AbsentSecret
	// Silenced counts, per namespace, the violated expectations that a
	// consumer's driftwatch.io/ignore (a pod or ExternalSecret naming
	// missing_keys) dropped.
	Silenced map[string]int
}

// DetectorMissingKeys is the missing-keys detector's name, as driftwatch.io/ignore
// names it.
const DetectorMissingKeys = "missing_keys"

// MissingKeys compares every expectation with the Secrets that exist. It needs the
// Secret cache; without it nothing can be judged and nothing is reported.
func MissingKeys(v model.View, avail model.Availability) MissingKeysResult {
	var res MissingKeysResult
	if !avail[model.ResSecrets] {
		return res
	}
	absent := map[expKey]int{}
	// Only the violated expectations are gathered: an expectation is kept when its
	// Secret is absent or lacks the key, before any entry is built for it.
	set := newExpSet(0)
	set.settle = true
	set.ignoring = DetectorMissingKeys
	set.keep = func(ns, secret, key string) bool {
		s, ok := v.Secret(ns, secret)
		if !ok {
			return true
		}
		if key == "" {
			return false
		}
		return !s.Keys.Has(key)
	}
	exps := gatherExpectations(v, avail, set)
	for k := range set.silenced {
		if res.Silenced == nil {
			res.Silenced = map[string]int{}
		}
		res.Silenced[k.ns]++
	}
	for _, e := range exps {
		s, ok := v.Secret(e.Namespace, e.Secret)
		if !ok {
			if e.Optional {
				// Only optional references name it (an optional secret volume with
				// items, an optional secretKeyRef): a feature switched off, such as
				// Argo CD's argocd-dex-server-tls. Pods start without it.
				continue
			}
			k := expKey{e.Namespace, e.Secret, "", e.Source}
			if i, dup := absent[k]; dup {
				res.Absent[i].Consumers = mergeConsumers(res.Absent[i].Consumers, e.Consumers)
				continue
			}
			absent[k] = len(res.Absent)
			res.Absent = append(res.Absent, AbsentSecret{Namespace: e.Namespace, Secret: e.Secret, Source: e.Source,
				Consumers: append([]Consumer(nil), e.Consumers...)})
			continue
		}
		if e.Key == "" {
			continue
		}
		if _, has := s.Keys.Get(e.Key); !has {
			res.Missing = append(res.Missing, MissingKey(e))
		}
	}
	// Count the pods behind an absent Secret from the pods themselves: merging the
	// per-key expectations would count a workload whose replicas read different
	// keys (a rollout) by its largest group only.
	if avail[model.ResPods] {
		for i := range res.Absent {
			if ab := &res.Absent[i]; ab.Source == SourcePod {
				ab.Consumers = podConsumers(v, ab.Namespace, ab.Secret)
			}
		}
	}
	return res
}

// podConsumers groups by workload the active pods that need Secret ns/name to
// exist (a reference that is not optional).
func podConsumers(v model.View, ns, name string) []Consumer {
	return workloadsUsing(v, ns, name, func(p *model.Pod) bool {
		for _, u := range p.Uses {
			if u.Secret == name && !u.Optional && u.Via.Expects() {
				return true
			}
		}
		return false
	})
}

// workloadsUsing groups by workload the active pods that reference Secret
// ns/name and pass keep (nil: all).
func workloadsUsing(v model.View, ns, name string, keep func(*model.Pod) bool) []Consumer {
	var out []Consumer
	idx := map[[2]string]int{}
	for _, p := range v.PodsUsing(ns, name) {
		if !PodActive(p) || keep != nil && !keep(p) {
			continue
		}
		k := [2]string{p.Workload.Kind, p.Workload.Name}
		if i, ok := idx[k]; ok {
			out[i].Pods++
			continue
		}
		idx[k] = len(out)
		out = append(out, Consumer{Kind: k[0], Name: k[1], Pods: 1})
	}
	sortConsumers(out)
	return out
}

func mergeConsumers(a, b []Consumer) []Consumer {
	for _, c := range b {
		found := false
		for i := range a {
			if a[i].Kind == c.Kind && a[i].Name == c.Name {
				if a[i].Pods < c.Pods {
					a[i].Pods = c.Pods
				}
				found = true
				break
			}
		}
		if !found {
			a = append(a, c)
		}
	}
	sortConsumers(a)
	return a
}

// SecretReaders groups the active pods that reference Secret ns/name in any way
// (env, envFrom, volumes, imagePullSecrets), by workload. For a Secret with a
// finding it says who is affected even when no pod names the missing key (an
// envFrom reader of a Secret an ExternalSecret left short).
func SecretReaders(v model.View, ns, name string) []Consumer {
	return workloadsUsing(v, ns, name, nil)
}

// SecretDataReaders is SecretReaders without the pods that name Secret
// ns/name only in imagePullSecrets: the pods that read its data into a
// container. It is the consumer condition of the page alerts (through
// driftwatch_secret_short_consumer_pods): a missing pull Secret fails loudly
// in the kubelet and is never a page.
func SecretDataReaders(v model.View, ns, name string) []Consumer {
	return workloadsUsing(v, ns, name, func(p *model.Pod) bool {
		for _, u := range p.Uses {
			if u.Secret == name && u.Via.Expects() {
				return true
			}
		}
		return false
	})
}
