package collectors

// The inventory detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/inventory.go is the detector itself).

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descConsumerInfo = declare(finding.Family{
		Name:   "driftwatch_secret_consumer_info",
		Help:   "Inventory: a workload consumes a Secret, written by an ExternalSecret from a store (empty when none).",
		Labels: []string{"namespace", "secret", "workload_kind", "workload", "externalsecret", "store_kind", "store"},
		Kind:   finding.KindObject,
		Object: &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
	descConsumerPods = declare(finding.Family{
		Name:   "driftwatch_secret_consumer_pods",
		Help:   "Inventory: running pods of a workload that consume a Secret.",
		Labels: []string{"namespace", "secret", "workload_kind", "workload"},
		Kind:   finding.KindObject,
		Object: &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
)

func init() {
	register(detector{name: "inventory", requires: []model.Resource{model.ResPods}, emit: emitInventory, perNamespace: true,
		families: []*prometheus.Desc{descConsumerInfo, descConsumerPods}})
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
