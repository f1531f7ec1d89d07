package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestInventory(t *testing.T) {
	const ns = "app"
	replicas := func(name string, n int, uses ...model.SecretUse) []*model.Pod {
		var ps []*model.Pod
		for i := 0; i < n; i++ {
			ps = append(ps, mt.DeployPod(ns, name, i, uses...))
		}
		return ps
	}
	ci := func(sec, wkind, wname string, pods int, esName, storeKind, storeName string) ConsumerInfo {
		return ConsumerInfo{Namespace: ns, Secret: sec, WorkloadKind: wkind, Workload: wname, Pods: pods,
			ExternalSecret: esName, StoreKind: storeKind, Store: storeName}
	}
	tests := []struct {
		name  string
		objs  []any
		avail model.Availability
		want  []ConsumerInfo
	}{
		{
			name: "workload → Secret → ExternalSecret → store",
			objs: []any{mt.Secret(ns, "db", "A"), replicas("web", 3, mt.Env("db", "A"), mt.EnvFrom("db")),
				mt.ES(ns, "db-es", mt.ESTarget("db"), mt.ESData("A"), mt.ESStore("ClusterSecretStore", "aws"))},
			want: []ConsumerInfo{ci("db", "Deployment", "web", 3, "db-es", "ClusterSecretStore", "aws")},
		},
		{
			name: "a Secret without ExternalSecret",
			objs: []any{mt.Secret(ns, "plain", "A"), mt.Pod(ns, "p", mt.VolItem("plain", "A"))},
			want: []ConsumerInfo{ci("plain", "Pod", "p", 1, "", "", "")},
		},
		{
			name: "a Secret read only as an imagePullSecret is in the inventory",
			objs: []any{mt.Secret(ns, "regcred", ".dockerconfigjson"), replicas("web", 2, mt.ImagePull("regcred"))},
			want: []ConsumerInfo{ci("regcred", "Deployment", "web", 2, "", "", "")},
		},
		{
			name: "a consumed Secret that does not exist is still listed",
			objs: []any{mt.Pod(ns, "p", mt.EnvFrom("gone"))},
			want: []ConsumerInfo{ci("gone", "Pod", "p", 1, "", "", "")},
		},
		{
			name: "finished pods excluded",
			objs: []any{mt.Secret(ns, "db", "A"), mt.WithPhase(mt.Pod(ns, "job-a", mt.Env("db", "A")), "Succeeded"),
				mt.WithPhase(mt.Pod(ns, "job-b", mt.Env("only-finished", "A")), "Failed"), mt.Pod(ns, "live", mt.Env("db", "A"))},
			want: []ConsumerInfo{ci("db", "Pod", "live", 1, "", "", "")},
		},
		{
			name: "two workloads and two ExternalSecrets writing the Secret (Merge): the cross product",
			objs: []any{mt.Secret(ns, "shared", "A"),
				replicas("api", 2, mt.Env("shared", "A")), replicas("worker", 1, mt.EnvFrom("shared")),
				mt.ES(ns, "a-es", mt.ESTarget("shared"), mt.ESData("A"), mt.ESStore("SecretStore", "vault")),
				mt.ES(ns, "b-es", mt.ESTarget("shared"), mt.ESCreation("Merge"), mt.ESData("B"), mt.ESStore("SecretStore", "aws"))},
			want: []ConsumerInfo{
				ci("shared", "Deployment", "api", 2, "a-es", "SecretStore", "vault"),
				ci("shared", "Deployment", "api", 2, "b-es", "SecretStore", "aws"),
				ci("shared", "Deployment", "worker", 1, "a-es", "SecretStore", "vault"),
				ci("shared", "Deployment", "worker", 1, "b-es", "SecretStore", "aws"),
			},
		},
		{
			name: "several Secrets sorted by namespace and name; same name in another namespace stays apart",
			objs: []any{mt.Pod(ns, "p", mt.Env("z", "A"), mt.Env("a", "A")), mt.Pod("other", "q", mt.Env("a", "A")),
				mt.ES("other", "a", mt.ESData("A"))},
			want: []ConsumerInfo{
				ci("a", "Pod", "p", 1, "", "", ""),
				ci("z", "Pod", "p", 1, "", "", ""),
				{Namespace: "other", Secret: "a", WorkloadKind: "Pod", Workload: "q", Pods: 1, ExternalSecret: "a", StoreKind: "SecretStore", Store: "vault"},
			},
		},
		{
			name:  "ExternalSecrets unavailable: the edge stops at the Secret",
			objs:  []any{mt.Pod(ns, "p", mt.Env("db", "A")), mt.ES(ns, "db", mt.ESData("A"))},
			avail: mt.AllBut(model.ResExternalSecrets),
			want:  []ConsumerInfo{ci("db", "Pod", "p", 1, "", "", "")},
		},
		{
			name:  "pods unavailable: nothing",
			objs:  []any{mt.Pod(ns, "p", mt.Env("db", "A")), mt.ES(ns, "db", mt.ESData("A"))},
			avail: mt.AllBut(model.ResPods),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = mt.All()
			}
			s := mt.NewStore(t, tc.objs...)
			got := mt.Read(s, func(v model.View) []ConsumerInfo { return Inventory(v, avail) })
			checkSlice(t, "Inventory", got, tc.want)
		})
	}
}
