package detect

import (
	"slices"

	"github.com/driftwatch/driftwatch/internal/model"
)

// EmptyKeyRead is a key of an existing Secret whose value is empty (0 bytes)
// and that running pods read by name: each of them sees "" (an empty
// environment variable, a 0-byte file), which fails nowhere until the
// application uses it.
type EmptyKeyRead struct {
	Namespace string
	Secret    string
	Key       string
	// Pods counts the running pods that read the key by name; Consumers
	// groups them by workload.
	Pods      int
	Consumers []Consumer
}

// SecretKeyEmptyReadResult is the output of the empty-key detector.
type SecretKeyEmptyReadResult struct {
	Empty []EmptyKeyRead
	// Silenced counts, per namespace, the empty keys read whose reading pod's
	// driftwatch.io/ignore names secret_key_empty_read (once per Secret and
	// key).
	Silenced map[string]int
}

// DetectorSecretKeyEmptyRead is the empty-key detector's name, as
// driftwatch.io/ignore names it.
const DetectorSecretKeyEmptyRead = "secret_key_empty_read"

// SecretKeyEmptyRead finds the keys of existing Secrets whose value is empty
// and that running pods read by name: env valueFrom.secretKeyRef and the items
// of a secret or projected volume a container mounts, optional or not (an
// optional reference to a key that exists still sets the variable to "").
// Reads that name no key (envFrom, a whole volume) are not counted: the
// application may never look at that key. A key the Secret lacks, and an
// absent Secret, are the missing-keys detector's. Pods not Running (pending,
// finished) and terminating pods are not counted. It needs the Secret and Pod
// caches; without either nothing is reported.
func SecretKeyEmptyRead(v model.View, avail model.Availability) SecretKeyEmptyReadResult {
	var res SecretKeyEmptyReadResult
	if !avail.All(model.ResSecrets, model.ResPods) {
		return res
	}
	// The expectation set of the missing-keys detector, kept to the keys that
	// exist and are empty: it scopes, honours a pod's driftwatch.io/ignore and
	// counts what that silences, and groups the pods by workload.
	set := newExpSet(0)
	set.scope, set.scoped = v.Scope()
	set.ignoring = DetectorSecretKeyEmptyRead
	set.keep = func(ns, secret, key string) bool {
		s, ok := v.Secret(ns, secret)
		if !ok {
			return false
		}
		ki, has := s.Keys.Get(key)
		return has && ki.Len == 0
	}
	var seen []expKey // the keys this pod already read; pods read a handful
	v.EachPod(func(p *model.Pod) {
		if p.Phase != "Running" || p.Terminating {
			return
		}
		c := Consumer{Kind: p.Workload.Kind, Name: p.Workload.Name, Pods: 1}
		seen = seen[:0]
		for _, u := range p.Uses {
			if u.Key == "" || u.Container == "" || !u.Via.Expects() {
				continue // no key named, a volume no container mounts, or an imagePullSecret
			}
			k := expKey{p.Namespace, u.Secret, u.Key, SourcePod}
			if slices.Contains(seen, k) {
				continue // one pod counts once per key
			}
			seen = append(seen, k)
			if set.ignored(&p.ObjectMeta, p.Namespace, u.Secret, u.Key, SourcePod) {
				continue
			}
			set.add(p.Namespace, u.Secret, u.Key, SourcePod, u.Optional, c)
		}
	})
	for k := range set.silenced {
		if res.Silenced == nil {
			res.Silenced = map[string]int{}
		}
		res.Silenced[k.ns]++
	}
	for _, e := range set.list() {
		r := EmptyKeyRead{Namespace: e.Namespace, Secret: e.Secret, Key: e.Key, Consumers: e.Consumers}
		for _, c := range e.Consumers {
			r.Pods += c.Pods
		}
		res.Empty = append(res.Empty, r)
	}
	return res
}
