package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

func TestInventory(t *testing.T) {
	const ns = "app"
	replicas := func(name string, n int, uses ...model.SecretUse) []*model.Pod {
		var ps []*model.Pod
		for i := 0; i < n; i++ {
			ps = append(ps, deployPod(ns, name, i, uses...))
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
			objs: []any{secret(ns, "db", "A"), replicas("web", 3, useEnv("db", "A"), envFrom("db")),
				es(ns, "db-es", esTarget("db"), esData("A"), esStore("ClusterSecretStore", "aws"))},
			want: []ConsumerInfo{ci("db", "Deployment", "web", 3, "db-es", "ClusterSecretStore", "aws")},
		},
		{
			name: "a Secret without ExternalSecret",
			objs: []any{secret(ns, "plain", "A"), pod(ns, "p", volItem("plain", "A"))},
			want: []ConsumerInfo{ci("plain", "Pod", "p", 1, "", "", "")},
		},
		{
			name: "a consumed Secret that does not exist is still listed",
			objs: []any{pod(ns, "p", envFrom("gone"))},
			want: []ConsumerInfo{ci("gone", "Pod", "p", 1, "", "", "")},
		},
		{
			name: "finished pods excluded",
			objs: []any{secret(ns, "db", "A"), withPhase(pod(ns, "job-a", useEnv("db", "A")), "Succeeded"),
				withPhase(pod(ns, "job-b", useEnv("only-finished", "A")), "Failed"), pod(ns, "live", useEnv("db", "A"))},
			want: []ConsumerInfo{ci("db", "Pod", "live", 1, "", "", "")},
		},
		{
			name: "two workloads and two ExternalSecrets writing the Secret (Merge): the cross product",
			objs: []any{secret(ns, "shared", "A"),
				replicas("api", 2, useEnv("shared", "A")), replicas("worker", 1, envFrom("shared")),
				es(ns, "a-es", esTarget("shared"), esData("A"), esStore("SecretStore", "vault")),
				es(ns, "b-es", esTarget("shared"), esCreation("Merge"), esData("B"), esStore("SecretStore", "aws"))},
			want: []ConsumerInfo{
				ci("shared", "Deployment", "api", 2, "a-es", "SecretStore", "vault"),
				ci("shared", "Deployment", "api", 2, "b-es", "SecretStore", "aws"),
				ci("shared", "Deployment", "worker", 1, "a-es", "SecretStore", "vault"),
				ci("shared", "Deployment", "worker", 1, "b-es", "SecretStore", "aws"),
			},
		},
		{
			name: "several Secrets sorted by namespace and name; same name in another namespace stays apart",
			objs: []any{pod(ns, "p", useEnv("z", "A"), useEnv("a", "A")), pod("other", "q", useEnv("a", "A")),
				es("other", "a", esData("A"))},
			want: []ConsumerInfo{
				ci("a", "Pod", "p", 1, "", "", ""),
				ci("z", "Pod", "p", 1, "", "", ""),
				{Namespace: "other", Secret: "a", WorkloadKind: "Pod", Workload: "q", Pods: 1, ExternalSecret: "a", StoreKind: "SecretStore", Store: "vault"},
			},
		},
		{
			name:  "ExternalSecrets unavailable: the edge stops at the Secret",
			objs:  []any{pod(ns, "p", useEnv("db", "A")), es(ns, "db", esData("A"))},
			avail: allBut(model.ResExternalSecrets),
			want:  []ConsumerInfo{ci("db", "Pod", "p", 1, "", "", "")},
		},
		{
			name:  "pods unavailable: nothing",
			objs:  []any{pod(ns, "p", useEnv("db", "A")), es(ns, "db", esData("A"))},
			avail: allBut(model.ResPods),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = availAll()
			}
			s := newStore(t, tc.objs...)
			got := readView(s, func(v model.View) []ConsumerInfo { return Inventory(v, avail) })
			checkSlice(t, "Inventory", got, tc.want)
		})
	}
}
