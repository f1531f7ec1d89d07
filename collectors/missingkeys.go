package collectors

// The missing_keys detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/missingkeys.go is the detector itself).

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descMissingKey = declare(Family{
		Name:       "driftwatch_secret_missing_key",
		Help:       "1 for each key an expectation names that the Secret lacks; optional=\"true\" when only optional references (secretKeyRef or volume items with optional: true) name it.",
		Labels:     []string{"namespace", "secret", "key", "source", "optional"},
		Kind:       KindFinding,
		Object:     &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Missing keys",
		Severity:   SevCritical,
		SeverityBy: &SeverityBy{Label: "optional", Values: map[string]Severity{"true": SevWarning}},
	})
	descMissingKeys = declare(Family{
		Name:       "driftwatch_secret_missing_keys",
		Help:       "Number of expected keys the Secret lacks, per expectation source and optionality.",
		Labels:     []string{"namespace", "secret", "source", "optional"},
		Kind:       KindFinding,
		Object:     &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Missing keys",
		Severity:   SevCritical,
		SeverityBy: &SeverityBy{Label: "optional", Values: map[string]Severity{"true": SevWarning}},
		Restates:   "driftwatch_secret_missing_key",
	})
	descAbsent = declare(Family{
		Name:     "driftwatch_secret_absent",
		Help:     "1 when a Secret that an expectation names does not exist.",
		Labels:   []string{"namespace", "secret", "source"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Missing keys",
		Severity: SevCritical,
	})
	descMissingConsumer = declare(Family{
		Name:   "driftwatch_secret_missing_key_consumer_pods",
		Help:   "Pods of a workload that expect keys the Secret lacks (or the Secret itself, when absent).",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   KindObject, WithFinding: true,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descShortReaders = declare(Family{
		Name:   "driftwatch_secret_short_consumer_pods",
		Help:   "Running pods of a workload that read (env, envFrom, volume, any way but imagePullSecrets) a Secret that lacks expected keys or is absent. Bounded by findings; the page uses it.",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   KindObject, WithFinding: true,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
)

func init() {
	register(detector{name: detect.DetectorMissingKeys, requires: []model.Resource{model.ResSecrets}, emit: emitMissingKeys, perNamespace: true,
		families: []*prometheus.Desc{descMissingKey, descMissingKeys, descAbsent, descMissingConsumer, descShortReaders}})
}

func emitMissingKeys(e *emitter, v model.View, a model.Availability, _ time.Time) {
	res := detect.MissingKeys(v, a)
	for ns, n := range res.Silenced {
		e.silence(ns, n)
	}
	type sk struct{ ns, secret, src, optional string }
	counts := map[sk]int{}
	var order []sk
	type ck struct{ ns, secret, kind, name string }
	consumers := map[ck]int{}
	var corder []ck
	addConsumers := func(ns, secret string, cs []detect.Consumer) {
		for _, c := range cs {
			if c.Pods == 0 {
				continue
			}
			k := ck{ns, secret, c.Kind, c.Name}
			if _, ok := consumers[k]; !ok {
				corder = append(corder, k)
			}
			if c.Pods > consumers[k] {
				consumers[k] = c.Pods
			}
		}
	}
	for _, m := range res.Missing {
		optional := strconv.FormatBool(m.Optional)
		var f *Finding
		if !e.cfg.NoKeyLabel {
			f = e.gauge(descMissingKey, 1, m.Namespace, m.Secret, m.Key, string(m.Source), optional)
		} else {
			f = e.record(descMissingKey, 1, m.Namespace, m.Secret, m.Key, string(m.Source), optional)
		}
		if f != nil {
			sec, _ := v.Secret(m.Namespace, m.Secret)
			f.Evidence = fmt.Sprintf("%s expect%s key %s; the Secret has %s", expectedBy(m.Source, m.Consumers, m.Optional),
				plural(len(m.Consumers)), m.Key, keyList(sec))
			f.Consumers = readers(v, a, m.Namespace, m.Secret)
		}
		k := sk{m.Namespace, m.Secret, string(m.Source), optional}
		if _, ok := counts[k]; !ok {
			order = append(order, k)
		}
		counts[k]++
		addConsumers(m.Namespace, m.Secret, m.Consumers)
	}
	for _, k := range order {
		e.gauge(descMissingKeys, float64(counts[k]), k.ns, k.secret, k.src, k.optional)
	}
	for _, ab := range res.Absent {
		if f := e.gauge(descAbsent, 1, ab.Namespace, ab.Secret, string(ab.Source)); f != nil {
			f.Evidence = fmt.Sprintf("%s expect%s Secret %s/%s, which does not exist", expectedBy(ab.Source, ab.Consumers, false),
				plural(len(ab.Consumers)), ab.Namespace, ab.Secret)
			f.Consumers = readers(v, a, ab.Namespace, ab.Secret)
		}
		addConsumers(ab.Namespace, ab.Secret, ab.Consumers)
	}
	for _, k := range corder {
		e.gauge(descMissingConsumer, float64(consumers[k]), k.ns, k.secret, k.kind, k.name)
	}
	// Who reads each Secret with a finding, however it reads it but as an
	// imagePullSecret: this is the page alerts' consumer condition, and a
	// missing pull Secret fails loudly in the kubelet.
	if a[model.ResPods] {
		short := map[model.Ref]bool{}
		var sorder []model.Ref
		mark := func(ns, secret string) {
			r := model.Ref{Namespace: ns, Name: secret}
			if !short[r] {
				short[r] = true
				sorder = append(sorder, r)
			}
		}
		for _, m := range res.Missing {
			mark(m.Namespace, m.Secret)
		}
		for _, ab := range res.Absent {
			mark(ab.Namespace, ab.Secret)
		}
		for _, r := range sorder {
			for _, c := range detect.SecretDataReaders(v, r.Namespace, r.Name) {
				e.gauge(descShortReaders, float64(c.Pods), r.Namespace, r.Name, c.Kind, c.Name)
			}
		}
	}
}
