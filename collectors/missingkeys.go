package collectors

// The missing_keys detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/missingkeys.go is the detector itself).

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descMissingKey = declare(finding.Family{
		Name: "driftwatch_secret_missing_key",
		Path: finding.PathMissingKey,
		Lint: []finding.Rule{{ID: "missing_key",
			Why: "a workload (or an expected-keys annotation) reads a key that neither the Secret nor the ExternalSecret of the rendering provides: the pod fails to start, or starts without it when the reference is optional"}},
		Commands:   missingKeyCommands,
		Help:       "1 for each key an expectation names that the Secret lacks; optional=\"true\" when only optional references (secretKeyRef or volume items with optional: true) name it.",
		Labels:     []string{"namespace", "secret", "key", "source", "optional"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Missing keys",
		Severity:   finding.SevCritical,
		SeverityBy: &finding.SeverityBy{Label: "optional", Values: map[string]finding.Severity{"true": finding.SevWarning}},
	})
	descMissingKeys = declare(finding.Family{
		Name:       "driftwatch_secret_missing_keys",
		Panel:      "missing keys",
		Help:       "Number of expected keys the Secret lacks, per expectation source and optionality.",
		Labels:     []string{"namespace", "secret", "source", "optional"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Missing keys",
		Severity:   finding.SevCritical,
		SeverityBy: &finding.SeverityBy{Label: "optional", Values: map[string]finding.Severity{"true": finding.SevWarning}},
		Restates:   "driftwatch_secret_missing_key",
	})
	descAbsent = declare(finding.Family{
		Name:  "driftwatch_secret_absent",
		Panel: "absent Secrets",
		Path:  finding.PathAbsent,
		Lint: []finding.Rule{{ID: "absent_secret", Strict: true,
			Why: "a workload reads a Secret that is not in the rendering and that no ExternalSecret of it writes (only with --strict: otherwise it is assumed to exist)"}},
		Commands: absentCommands,
		Help:     "1 when a Secret that an expectation names does not exist.",
		Labels:   []string{"namespace", "secret", "source"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Missing keys",
		Severity: finding.SevCritical,
	})
	descMissingConsumer = declare(finding.Family{
		Name:   "driftwatch_secret_missing_key_consumer_pods",
		Help:   "Pods of a workload that expect keys the Secret lacks (or the Secret itself, when absent).",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   finding.KindObject, WithFinding: true,
		Object: &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descShortReaders = declare(finding.Family{
		Name:   "driftwatch_secret_short_consumer_pods",
		Help:   "Running pods of a workload that read (env, envFrom, volume, any way but imagePullSecrets) a Secret that lacks expected keys or is absent. Bounded by findings; the page uses it.",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   finding.KindObject, WithFinding: true,
		Object: &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
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
		var f *finding.Finding
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

func missingKeyCommands(c *finding.Commands) {
	ns, name := c.NS(), c.Name()
	c.SecretKeys(name)
	switch c.F.Labels["source"] {
	case "externalsecret":
		c.Confirm("the keys its ExternalSecrets write", "kubectl -n "+ns+` get externalsecret -o json | jq -r --arg s `+name+
			` '.items[] | select((.spec.target.name // .metadata.name) == $s) | {name: .metadata.name, keys: [.spec.data[]?.secretKey]}'`)
	case "pod":
		c.Confirm("the pods that reference the key", "kubectl -n "+ns+` get pods -o json | jq -r --arg s `+name+` --arg k `+c.L("key")+
			` '.items[] | .metadata.name as $p | .spec.containers[] | .env[]? | select(.valueFrom.secretKeyRef.name == $s and .valueFrom.secretKeyRef.key == $k) | "\($p) \(.name) optional=\(.valueFrom.secretKeyRef.optional // false)"'`)
	}
	c.Confirm("who wrote the Secret's data", "kubectl -n "+ns+" get secret "+name+" --show-managed-fields -o json | "+finding.JQManagers)
	if c.F.Labels["source"] == "externalsecret" {
		for _, es := range c.Writers {
			c.Fix("after adding the key at the provider or fixing remoteRef, refresh the ExternalSecret",
				"kubectl -n "+ns+" annotate externalsecret "+finding.Sh(es)+" force-sync=$(date +%s) --overwrite")
		}
	}
	c.Restarts()
}

func absentCommands(c *finding.Commands) {
	ns, name := c.NS(), c.Name()
	c.Confirm("the Secret does not exist", "kubectl -n "+ns+" get secret "+name)
	c.Confirm("ExternalSecrets that should write it", "kubectl -n "+ns+` get externalsecret -o json | jq -r --arg s `+name+
		` '.items[] | select((.spec.target.name // .metadata.name) == $s) | {name: .metadata.name, ready: [.status.conditions[]? | select(.type=="Ready") | {status, reason}]}'`)
	c.Restarts()
}
