package collectors

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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
		Kind:   KindObject,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descShortReaders = declare(Family{
		Name:   "driftwatch_secret_short_consumer_pods",
		Help:   "Running pods of a workload that read (env, envFrom, volume, any way) a Secret that lacks expected keys or is absent. Bounded by findings; the page uses it.",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   KindObject,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descReadyButShort = declare(Family{
		Name:     "driftwatch_externalsecret_ready_but_short",
		Help:     "Expected keys missing from the target of an ExternalSecret that reports Ready=True.",
		Labels:   []string{"namespace", "externalsecret", "secret", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Ready but short",
		Severity: SevCritical,
	})
	descNotReady = declare(Family{
		Name:     "driftwatch_externalsecret_not_ready",
		Help:     "1 when an ExternalSecret's Ready condition is False or Unknown.",
		Labels:   []string{"namespace", "externalsecret", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Sync health",
		Severity: SevWarning,
	})
	descSyncAge = declare(Family{
		Name:   "driftwatch_externalsecret_sync_age_seconds",
		Help:   "Seconds since the ExternalSecret's status.refreshTime.",
		Labels: []string{"namespace", "externalsecret"},
		Kind:   KindObject,
		Object: &ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
	})
	descSyncOverdue = declare(Family{
		Name:     "driftwatch_externalsecret_sync_overdue",
		Help:     "1 when the sync age exceeds the configured multiple of refreshInterval.",
		Labels:   []string{"namespace", "externalsecret"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Sync health",
		Severity: SevWarning,
	})
	descStoreNotReady = declare(Family{
		Name:     "driftwatch_secretstore_not_ready",
		Help:     "1 when a SecretStore or ClusterSecretStore is not Ready.",
		Labels:   []string{"namespace", "kind", "store", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{KindLabel: "kind", NameLabel: "store"},
		Class:    "Sync health",
		Severity: SevWarning,
	})
	descConsumerInfo = declare(Family{
		Name:   "driftwatch_secret_consumer_info",
		Help:   "Inventory: a workload consumes a Secret, written by an ExternalSecret from a store (empty when none).",
		Labels: []string{"namespace", "secret", "workload_kind", "workload", "externalsecret", "store_kind", "store"},
		Kind:   KindObject,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descConsumerPods = declare(Family{
		Name:   "driftwatch_secret_consumer_pods",
		Help:   "Inventory: running pods of a workload that consume a Secret.",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   KindObject,
		Object: &ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
)

// registered is the detector registry. Each detector file adds its entries with
// register from an init function, so detectors are added without editing a list.
var registered []detector

func register(d ...detector) { registered = append(registered, d...) }

func (f *Findings) registry() []detector { return append([]detector(nil), registered...) }

func init() {
	register(
		detector{name: detect.DetectorMissingKeys, requires: []model.Resource{model.ResSecrets}, emit: emitMissingKeys, perNamespace: true},
		detector{name: "ready_but_short", requires: []model.Resource{model.ResSecrets, model.ResExternalSecrets}, emit: emitReadyButShort, perNamespace: true},
		detector{name: "sync_health", requires: []model.Resource{model.ResExternalSecrets}, emit: emitSyncHealth},
		detector{name: "inventory", requires: []model.Resource{model.ResPods}, emit: emitInventory, perNamespace: true},
	)
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
	// Who reads each Secret with a finding, however it reads it.
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
			for _, c := range detect.SecretReaders(v, r.Namespace, r.Name) {
				e.gauge(descShortReaders, float64(c.Pods), r.Namespace, r.Name, c.Kind, c.Name)
			}
		}
	}
}

func emitReadyButShort(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, r := range detect.ReadyButShortES(v, a) {
		f := e.gauge(descReadyButShort, float64(r.Missing), r.Namespace, r.ExternalSecret, r.Secret, r.Reason)
		if f == nil {
			continue
		}
		switch r.Reason {
		case detect.ShortAbsent:
			f.Evidence = fmt.Sprintf("Ready=True %s; its target Secret %s does not exist", r.ReadyReason, r.Secret)
		case detect.ShortEmpty:
			f.Evidence = fmt.Sprintf("Ready=True %s; its target Secret %s holds no key", r.ReadyReason, r.Secret)
		default:
			f.Evidence = fmt.Sprintf("Ready=True %s; the Secret has %d of the %d keys the ExternalSecret renders; missing: %s",
				r.ReadyReason, len(r.Expected)-len(r.MissingKeys), len(r.Expected), strings.Join(r.MissingKeys, ", "))
		}
		f.Consumers = readers(v, a, r.Namespace, r.Secret)
	}
}

func emitSyncHealth(e *emitter, v model.View, a model.Availability, now time.Time) {
	res := detect.SyncHealth(v, a, now, e.cfg.OverdueFactor)
	for _, n := range res.NotReady {
		if f := e.gauge(descNotReady, 1, n.Namespace, n.ExternalSecret, n.Reason); f != nil {
			f.Evidence = "Ready is not True: reason " + n.Reason + "; the target keeps its last data and stops refreshing"
		}
	}
	for _, s := range res.Ages {
		e.gauge(descSyncAge, s.Age.Seconds(), s.Namespace, s.ExternalSecret)
		if s.Overdue {
			if f := e.gauge(descSyncOverdue, 1, s.Namespace, s.ExternalSecret); f != nil {
				f.Evidence = fmt.Sprintf("last refresh %s ago, more than %g × its refreshInterval", s.Age.Round(time.Second), e.cfg.OverdueFactor)
			}
		}
	}
	for _, s := range res.Stores {
		if f := e.gauge(descStoreNotReady, 1, s.Namespace, s.Kind, s.Store, s.Reason); f != nil {
			f.Evidence = s.Kind + " Ready is not True: reason " + s.Reason + "; the ExternalSecrets using it stop refreshing"
		}
	}
}

func emitInventory(e *emitter, v model.View, a model.Availability, _ time.Time) {
	if !e.cfg.Inventory {
		return
	}
	type pk struct{ ns, secret, kind, name string }
	seen := map[pk]bool{}
	for _, c := range detect.Inventory(v, a) {
		e.gauge(descConsumerInfo, 1, c.Namespace, c.Secret, c.WorkloadKind, c.Workload, c.ExternalSecret, c.StoreKind, c.Store)
		k := pk{c.Namespace, c.Secret, c.WorkloadKind, c.Workload}
		if !seen[k] {
			seen[k] = true
			e.gauge(descConsumerPods, float64(c.Pods), c.Namespace, c.Secret, c.WorkloadKind, c.Workload)
		}
	}
}
