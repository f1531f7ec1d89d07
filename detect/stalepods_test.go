package detect

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// spPod builds a Running pod of Deployment "api" in namespace shop whose
// container "app" started at started (zero: no startedAt in the status) and
// whose pod started two hours before the change at mt.T0.
func spPod(name string, started time.Time, uses ...model.SecretUse) *model.Pod {
	return mt.StartedAt(mt.WithWorkload(mt.Pod("shop", name, uses...), "Deployment", "api"), mt.T0.Add(-2*time.Hour), started)
}

func TestStalePods(t *testing.T) {
	before := mt.T0.Add(-time.Hour) // container start, an hour before the change at mt.T0
	after := mt.T0.Add(time.Minute) // a restart after the change
	creds := func(a, b string, mf ...model.ManagedField) *model.Secret {
		return mt.WithManagers(mt.SecretValues("shop", "api-creds", "user", a, "pass", b), mf...)
	}
	// rotated: api-creds observed changing its pass at mt.T0.
	rotated := []flUpdate{{-3 * time.Hour, creds("U", "P1")}, {0, creds("U", "P2")}}
	stale := func(pod string, via model.SecretVia, started time.Time, src ChangeSource) StalePod {
		return StalePod{Namespace: "shop", Pod: pod, Container: "app", Secret: "api-creds", Via: via,
			WorkloadKind: "Deployment", Workload: "api", Started: started, Changed: mt.T0,
			Seconds: mt.T0.Sub(started).Seconds(), ChangeSource: src}
	}
	tests := []struct {
		name    string
		updates []flUpdate
		pods    []*model.Pod
		avail   model.Availability
		want    []StalePod
	}{
		{name: "env secretKeyRef of the changed key",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))},
			want: []StalePod{stale("api-1", model.ViaEnv, before, ChangeObserved)}},
		{name: "env of a key that did not change is current",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "user", model.ViaEnv))}},
		{name: "envFrom reads every key",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "", model.ViaEnvFrom))},
			want: []StalePod{stale("api-1", model.ViaEnvFrom, before, ChangeObserved)}},
		{name: "volume with subPath",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "", model.ViaVolumeSub))},
			want: []StalePod{stale("api-1", model.ViaVolumeSub, before, ChangeObserved)}},
		{name: "projected volume with subPath",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaProjectedSub))},
			want: []StalePod{stale("api-1", model.ViaProjectedSub, before, ChangeObserved)}},
		{name: "plain volume is refreshed by the kubelet: never stale",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "", model.ViaVolume),
				mt.Use("api-creds", "pass", model.ViaProjected))}},
		{name: "several keys of one Secret in one container are one finding",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "user", model.ViaEnv),
				mt.Use("api-creds", "pass", model.ViaEnv))},
			want: []StalePod{stale("api-1", model.ViaEnv, before, ChangeObserved)}},
		{name: "container restarted after the change is current",
			updates: rotated, pods: []*model.Pod{spPod("api-1", after, mt.Use("api-creds", "pass", model.ViaEnv))}},
		{name: "no startedAt: the pod's startTime",
			updates: rotated, pods: []*model.Pod{spPod("api-1", time.Time{}, mt.Use("api-creds", "", model.ViaEnvFrom))},
			want: []StalePod{stale("api-1", model.ViaEnvFrom, mt.T0.Add(-2*time.Hour), ChangeObserved)}},
		{name: "pods not Running are ignored",
			updates: rotated, pods: []*model.Pod{
				func() *model.Pod {
					p := spPod("api-1", before, mt.Use("api-creds", "", model.ViaEnvFrom))
					p.Phase = "Pending"
					return p
				}(),
				func() *model.Pod {
					p := spPod("api-2", before, mt.Use("api-creds", "", model.ViaEnvFrom))
					p.Phase = "Succeeded"
					return p
				}()}},
		{name: "a terminating pod (the restart that fixes it, under way) is ignored",
			updates: rotated, pods: []*model.Pod{mt.Terminating(spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv)))}},
		{name: "a container not running (waiting, crash-looping) is ignored",
			updates: rotated, pods: []*model.Pod{func() *model.Pod {
				p := spPod("api-1", before, mt.Use("api-creds", "", model.ViaEnvFrom))
				p.Containers[0].Running = false
				return p
			}()}},
		{name: "init containers: a finished one is ignored, a running one (sidecar) is judged",
			updates: rotated, pods: []*model.Pod{func() *model.Pod {
				p := spPod("api-1", after,
					model.SecretUse{Secret: "api-creds", Via: model.ViaEnvFrom, Container: "migrate"},
					model.SecretUse{Secret: "api-creds", Via: model.ViaEnvFrom, Container: "proxy"},
					mt.Use("api-creds", "", model.ViaEnvFrom))
				p.Containers = append([]model.Container{
					{Name: "migrate", Kind: model.ContainerInit},
					{Name: "proxy", Kind: model.ContainerInit, Running: true, StartedAt: before},
				}, p.Containers...)
				return p
			}()},
			want: []StalePod{func() StalePod {
				s := stale("api-1", model.ViaEnvFrom, before, ChangeObserved)
				s.Container = "proxy"
				return s
			}()}},
		{name: "pod-level uses (no container) are not judged",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, model.SecretUse{Secret: "api-creds", Via: model.ViaEnvFrom})}},
		{name: "start-up: no observed change, a data write in managedFields after the start",
			updates: []flUpdate{{0, creds("U", "P1", mt.Write("externalsecrets.external-secrets.io/api-creds", mt.T0))}},
			pods:    []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))},
			want:    []StalePod{stale("api-1", model.ViaEnv, before, ChangeManagedFields)}},
		{name: "start-up: managedFields data write before the start",
			updates: []flUpdate{{0, creds("U", "P1", mt.Write("helm", before.Add(-time.Minute)))}},
			pods:    []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))}},
		{name: "start-up: a metadata-only managedFields entry after the start is ignored",
			updates: []flUpdate{{0, creds("U", "P1", mt.Write("helm", before.Add(-time.Minute)), mt.MetaWrite("kubectl-label", mt.T0))}},
			pods:    []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))}},
		{name: "a data owner editing only labels while watched does not move the change time",
			updates: []flUpdate{
				{-time.Minute, creds("U", "P1", mt.Write("helm", before.Add(-time.Minute)))},
				{0, func() *model.Secret {
					s := creds("U", "P1", mt.Write("helm", mt.T0))
					mt.Label(s, "helm.sh/chart", "api-1.2.4")
					return s
				}()},
			},
			pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "", model.ViaEnvFrom))}},
		{name: "observed change of another key: the untouched key keeps the start-up estimate",
			updates: []flUpdate{
				{-3 * time.Hour, creds("U", "P1", mt.Write("eso", mt.T0.Add(-30*time.Minute)))},
				{0, creds("U", "P2", mt.Write("eso", mt.T0))},
			},
			pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "user", model.ViaEnv))},
			want: []StalePod{func() StalePod {
				s := stale("api-1", model.ViaEnv, before, ChangeManagedFields)
				s.Changed, s.Seconds = mt.T0.Add(-30*time.Minute), (30 * time.Minute).Seconds()
				return s
			}()}},
		{name: "a key added after the start: judged by the Secret's change",
			updates: []flUpdate{{-3 * time.Hour, mt.SecretValues("shop", "api-creds", "user", "U")}, {0, creds("U", "P1")}},
			pods:    []*model.Pod{spPod("api-1", before, model.SecretUse{Secret: "api-creds", Key: "pass", Optional: true, Via: model.ViaEnv, Container: "app"})},
			want:    []StalePod{stale("api-1", model.ViaEnv, before, ChangeObserved)}},
		{name: "a key added while the pod reads another, unchanged key: current",
			updates: []flUpdate{
				{-3 * time.Hour, mt.WithManagers(mt.SecretValues("shop", "api-creds", "user", "U"), mt.Write("kubectl-client-side-apply", mt.T0.Add(-3*time.Hour)))},
				{0, creds("U", "P1", mt.Write("kubectl-client-side-apply", mt.T0.Add(-3*time.Hour)), mt.Write("kubectl-patch", mt.T0))},
			},
			pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "user", model.ViaEnv))}},
		{name: "a key added: an envFrom reader lacks it (stale)",
			updates: []flUpdate{{-3 * time.Hour, mt.SecretValues("shop", "api-creds", "user", "U")}, {0, creds("U", "P1")}},
			pods:    []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "", model.ViaEnvFrom))},
			want:    []StalePod{stale("api-1", model.ViaEnvFrom, before, ChangeObserved)}},
		{name: "a key removed and restored with the value the container read: current",
			updates: []flUpdate{{-3 * time.Hour, creds("U", "P1")},
				{-time.Minute, mt.SecretValues("shop", "api-creds", "user", "U")}, {0, creds("U", "P1")}},
			pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))}},
		{name: "a key changed and changed back to the value the container read: current",
			updates: []flUpdate{{-3 * time.Hour, creds("U", "P1")}, {-time.Minute, creds("U", "P2")}, {0, creds("U", "P1")}},
			pods:    []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))}},
		{name: "absent Secret: not this detector's finding",
			pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))}},
		{name: "pods cache not available: nothing",
			avail: mt.Only(model.ResSecrets), updates: rotated,
			pods: []*model.Pod{spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(nil)
			for _, u := range tc.updates {
				st.UpsertSecret(u.sec, mt.T0.Add(u.at))
			}
			for _, p := range tc.pods {
				st.UpsertPod(p)
			}
			avail := tc.avail
			if avail == nil {
				avail = mt.Only(model.ResSecrets, model.ResPods)
			}
			var res StalePodsResult
			st.Read(func(v model.View) { res = StalePods(v, avail) })
			if !reflect.DeepEqual(res.Stale, tc.want) {
				t.Errorf("Stale =\n  %+v\nwant\n  %+v", res.Stale, tc.want)
			}
			if len(tc.want) > 0 && (len(res.Workloads) != 1 || res.Workloads[0].Pods != 1) {
				t.Errorf("Workloads = %+v", res.Workloads)
			}
		})
	}
}

// A Secret deleted and re-created with the same data while the agent watched
// (kubectl replace --force, a prune and re-create): its new managedFields say
// "written now", but the data did not change: readers that started before are
// current. Re-created with other data: they are stale, observed.
func TestStalePodsDeleteRecreate(t *testing.T) {
	before := mt.T0.Add(-time.Hour)
	for _, tc := range []struct {
		name      string
		recreated []string // key, value pairs
		want      int
	}{
		{"same data", []string{"pass", "P1"}, 0},
		{"other data", []string{"pass", "P2"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(nil)
			st.UpsertSecret(mt.WithUID(mt.WithManagers(mt.SecretValues("shop", "api-creds", "pass", "P1"), mt.Write("kubectl-client-side-apply", mt.T0.Add(-2*time.Hour))), "u1"), mt.T0.Add(-2*time.Hour))
			st.UpsertPod(spPod("api-1", before, mt.Use("api-creds", "pass", model.ViaEnv)))
			st.DeleteSecret("shop", "api-creds", mt.T0)
			st.UpsertSecret(mt.WithUID(mt.WithManagers(mt.SecretValues("shop", "api-creds", tc.recreated...), mt.Write("kubectl-client-side-apply", mt.T0)), "u2"), mt.T0)
			var res StalePodsResult
			st.Read(func(v model.View) { res = StalePods(v, mt.Only(model.ResSecrets, model.ResPods)) })
			if len(res.Stale) != tc.want {
				t.Fatalf("stale = %+v, want %d", res.Stale, tc.want)
			}
			if tc.want > 0 && res.Workloads[0].ChangeSource != ChangeObserved {
				t.Errorf("re-created with other data while watched: %+v", res.Workloads)
			}
		})
	}
}

func TestStalePodsWorkloadRollupAndChanges(t *testing.T) {
	st := model.NewStore(nil)
	st.UpsertSecret(mt.SecretValues("shop", "api-creds", "pass", "P1"), mt.T0.Add(-time.Hour))
	st.UpsertSecret(mt.SecretValues("shop", "api-creds", "pass", "P2"), mt.T0)
	// tls is only mounted as a plain volume: no consumer reads it once.
	st.UpsertSecret(mt.SecretValues("shop", "tls", "crt", "C1"), mt.T0.Add(-time.Hour))
	st.UpsertSecret(mt.SecretValues("shop", "tls", "crt", "C2"), mt.T0)
	// web-config is read once and never changed, but managedFields know its write.
	st.UpsertSecret(mt.WithManagers(mt.SecretValues("shop", "web-config", "A", "a"), mt.Write("helm", mt.T0.Add(-48*time.Hour))), mt.T0)
	for i, started := range []time.Time{mt.T0.Add(-time.Hour), mt.T0.Add(-time.Hour), mt.T0.Add(time.Minute)} {
		p := spPod("api-"+string(rune('a'+i)), started, mt.Use("api-creds", "pass", model.ViaEnv),
			mt.Use("tls", "", model.ViaVolume), mt.Use("web-config", "A", model.ViaEnv))
		if i == 0 {
			p.ReloadAnnotations = []string{"reloader.stakater.com/auto"}
		}
		st.UpsertPod(p)
	}
	var res StalePodsResult
	st.Read(func(v model.View) { res = StalePods(v, mt.Only(model.ResSecrets, model.ResPods)) })
	var pods []string
	for _, s := range res.Stale {
		pods = append(pods, s.Pod+"/"+s.Secret)
	}
	if got := strings.Join(pods, " "); got != "api-a/api-creds api-b/api-creds" {
		t.Errorf("stale = %s", got)
	}
	want := []WorkloadStale{{Namespace: "shop", WorkloadKind: "Deployment", Workload: "api", Secret: "api-creds", Pods: 2, Reload: true, ChangeSource: ChangeObserved}}
	if !reflect.DeepEqual(res.Workloads, want) {
		t.Errorf("Workloads = %+v", res.Workloads)
	}
	wantChanges := []DataChange{
		{Namespace: "shop", Secret: "api-creds", Time: mt.T0, Source: ChangeObserved},
		{Namespace: "shop", Secret: "web-config", Time: mt.T0.Add(-48 * time.Hour), Source: ChangeManagedFields},
	}
	if !reflect.DeepEqual(res.Changes, wantChanges) {
		t.Errorf("Changes = %+v", res.Changes)
	}
}
