package detect

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// ConsumerInfo is one edge of the map workload → Secret → ExternalSecret → store.
type ConsumerInfo struct {
	Namespace      string
	Secret         string
	WorkloadKind   string
	Workload       string
	Pods           int
	ExternalSecret string // "" when no ExternalSecret writes the Secret
	StoreKind      string
	Store          string
}

// Inventory lists, for every Secret a running workload consumes, the workload and
// the ExternalSecret and store behind the Secret.
func Inventory(v model.View, avail model.Availability) []ConsumerInfo {
	if !avail[model.ResPods] {
		return nil
	}
	var out []ConsumerInfo
	for _, sref := range v.ConsumedSecrets() {
		type wl struct{ kind, name string }
		pods := map[wl]int{}
		var order []wl
		for _, p := range v.PodsUsing(sref.Namespace, sref.Name) {
			if !PodActive(p) {
				continue
			}
			w := wl{p.Workload.Kind, p.Workload.Name}
			if _, ok := pods[w]; !ok {
				order = append(order, w)
			}
			pods[w]++
		}
		var ess []*model.ExternalSecret
		if avail[model.ResExternalSecrets] {
			ess = v.ExternalSecretsTargeting(sref.Namespace, sref.Name)
		}
		for _, w := range order {
			base := ConsumerInfo{Namespace: sref.Namespace, Secret: sref.Name, WorkloadKind: w.kind, Workload: w.name, Pods: pods[w]}
			if len(ess) == 0 {
				out = append(out, base)
				continue
			}
			for _, e := range ess {
				ci := base
				ci.ExternalSecret, ci.StoreKind, ci.Store = e.Name, e.StoreKind, e.StoreName
				out = append(out, ci)
			}
		}
	}
	return out
}
