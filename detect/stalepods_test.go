package detect

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/model"
)

// spPod builds a Running pod of Deployment "api" whose container "app" started at
// started (zero: no startedAt in the status) and whose pod started an hour
// before the change at flT0.
func spPod(name string, started time.Time, uses ...model.SecretUse) *model.Pod {
	return &model.Pod{
		ObjectMeta: model.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
		Phase:      "Running", ServiceAccount: "default", StartTime: flT0.Add(-2 * time.Hour),
		Workload:   model.Workload{Kind: "Deployment", Name: "api"},
		Containers: []model.Container{{Name: "app", Kind: model.ContainerRegular, Running: true, StartedAt: started}},
		Uses:       uses,
	}
}

func spUse(sec, key string, via model.SecretVia) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: via, Container: "app"}
}

func TestStalePods(t *testing.T) {
	before := flT0.Add(-time.Hour) // container start, an hour before the change at flT0
	after := flT0.Add(time.Minute) // a restart after the change
	creds := func(a, b string, mf ...model.ManagedField) *model.Secret {
		return flSecret("shop", "api-creds", "u1", map[string]string{"user": a, "pass": b}, mf...)
	}
	// rotated: api-creds observed changing its pass at flT0.
	rotated := []flUpdate{{-3 * time.Hour, creds("U", "P1")}, {0, creds("U", "P2")}}
	stale := func(pod string, via model.SecretVia, started time.Time, src ChangeSource) StalePod {
		return StalePod{Namespace: "shop", Pod: pod, Container: "app", Secret: "api-creds", Via: via,
			WorkloadKind: "Deployment", Workload: "api", Started: started, Changed: flT0,
			Seconds: flT0.Sub(started).Seconds(), ChangeSource: src}
	}
	tests := []struct {
		name    string
		updates []flUpdate
		pods    []*model.Pod
		avail   model.Availability
		want    []StalePod
	}{
		{name: "env secretKeyRef of the changed key",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))},
			want: []StalePod{stale("api-1", model.ViaEnv, before, ChangeObserved)}},
		{name: "env of a key that did not change is current",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "user", model.ViaEnv))}},
		{name: "envFrom reads every key",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "", model.ViaEnvFrom))},
			want: []StalePod{stale("api-1", model.ViaEnvFrom, before, ChangeObserved)}},
		{name: "volume with subPath",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "", model.ViaVolumeSub))},
			want: []StalePod{stale("api-1", model.ViaVolumeSub, before, ChangeObserved)}},
		{name: "projected volume with subPath",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaProjectedSub))},
			want: []StalePod{stale("api-1", model.ViaProjectedSub, before, ChangeObserved)}},
		{name: "plain volume is refreshed by the kubelet: never stale",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "", model.ViaVolume),
				spUse("api-creds", "pass", model.ViaProjected))}},
		{name: "several keys of one Secret in one container are one finding",
			updates: rotated, pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "user", model.ViaEnv),
				spUse("api-creds", "pass", model.ViaEnv))},
			want: []StalePod{stale("api-1", model.ViaEnv, before, ChangeObserved)}},
		{name: "container restarted after the change is current",
			updates: rotated, pods: []*model.Pod{spPod("api-1", after, spUse("api-creds", "pass", model.ViaEnv))}},
		{name: "no startedAt: the pod's startTime",
			updates: rotated, pods: []*model.Pod{spPod("api-1", time.Time{}, spUse("api-creds", "", model.ViaEnvFrom))},
			want: []StalePod{stale("api-1", model.ViaEnvFrom, flT0.Add(-2*time.Hour), ChangeObserved)}},
		{name: "pods not Running are ignored",
			updates: rotated, pods: []*model.Pod{
				func() *model.Pod {
					p := spPod("api-1", before, spUse("api-creds", "", model.ViaEnvFrom))
					p.Phase = "Pending"
					return p
				}(),
				func() *model.Pod {
					p := spPod("api-2", before, spUse("api-creds", "", model.ViaEnvFrom))
					p.Phase = "Succeeded"
					return p
				}()}},
		{name: "a container not running (waiting, crash-looping) is ignored",
			updates: rotated, pods: []*model.Pod{func() *model.Pod {
				p := spPod("api-1", before, spUse("api-creds", "", model.ViaEnvFrom))
				p.Containers[0].Running = false
				return p
			}()}},
		{name: "init containers: a finished one is ignored, a running one (sidecar) is judged",
			updates: rotated, pods: []*model.Pod{func() *model.Pod {
				p := spPod("api-1", after,
					model.SecretUse{Secret: "api-creds", Via: model.ViaEnvFrom, Container: "migrate"},
					model.SecretUse{Secret: "api-creds", Via: model.ViaEnvFrom, Container: "proxy"},
					spUse("api-creds", "", model.ViaEnvFrom))
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
			updates: []flUpdate{{0, creds("U", "P1", flWrite("externalsecrets.external-secrets.io/api-creds", flT0))}},
			pods:    []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))},
			want:    []StalePod{stale("api-1", model.ViaEnv, before, ChangeManagedFields)}},
		{name: "start-up: managedFields data write before the start",
			updates: []flUpdate{{0, creds("U", "P1", flWrite("helm", before.Add(-time.Minute)))}},
			pods:    []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))}},
		{name: "start-up: a metadata-only managedFields entry after the start is ignored",
			updates: []flUpdate{{0, creds("U", "P1", flWrite("helm", before.Add(-time.Minute)), flMeta("kubectl-label", flT0))}},
			pods:    []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))}},
		{name: "a data owner editing only labels while watched does not move the change time",
			updates: []flUpdate{
				{-time.Minute, creds("U", "P1", flWrite("helm", before.Add(-time.Minute)))},
				{0, func() *model.Secret {
					s := creds("U", "P1", flWrite("helm", flT0))
					s.Labels = map[string]string{"helm.sh/chart": "api-1.2.4"}
					return s
				}()},
			},
			pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "", model.ViaEnvFrom))}},
		{name: "observed change of another key: the untouched key keeps the start-up estimate",
			updates: []flUpdate{
				{-3 * time.Hour, creds("U", "P1", flWrite("eso", flT0.Add(-30*time.Minute)))},
				{0, creds("U", "P2", flWrite("eso", flT0))},
			},
			pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "user", model.ViaEnv))},
			want: []StalePod{func() StalePod {
				s := stale("api-1", model.ViaEnv, before, ChangeManagedFields)
				s.Changed, s.Seconds = flT0.Add(-30*time.Minute), (30 * time.Minute).Seconds()
				return s
			}()}},
		{name: "a key added after the start: judged by the Secret's change",
			updates: []flUpdate{{-3 * time.Hour, flSecret("shop", "api-creds", "u1", map[string]string{"user": "U"})}, {0, creds("U", "P1")}},
			pods:    []*model.Pod{spPod("api-1", before, model.SecretUse{Secret: "api-creds", Key: "pass", Optional: true, Via: model.ViaEnv, Container: "app"})},
			want:    []StalePod{stale("api-1", model.ViaEnv, before, ChangeObserved)}},
		{name: "a key added while the pod reads another, unchanged key: current",
			updates: []flUpdate{
				{-3 * time.Hour, flSecret("shop", "api-creds", "u1", map[string]string{"user": "U"}, flWrite("kubectl-client-side-apply", flT0.Add(-3*time.Hour)))},
				{0, creds("U", "P1", flWrite("kubectl-client-side-apply", flT0.Add(-3*time.Hour)), flWrite("kubectl-patch", flT0))},
			},
			pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "user", model.ViaEnv))}},
		{name: "a key added: an envFrom reader lacks it (stale)",
			updates: []flUpdate{{-3 * time.Hour, flSecret("shop", "api-creds", "u1", map[string]string{"user": "U"})}, {0, creds("U", "P1")}},
			pods:    []*model.Pod{spPod("api-1", before, spUse("api-creds", "", model.ViaEnvFrom))},
			want:    []StalePod{stale("api-1", model.ViaEnvFrom, before, ChangeObserved)}},
		{name: "a key removed and restored with the value the container read: current",
			updates: []flUpdate{{-3 * time.Hour, creds("U", "P1")},
				{-time.Minute, flSecret("shop", "api-creds", "u1", map[string]string{"user": "U"})}, {0, creds("U", "P1")}},
			pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))}},
		{name: "a key changed and changed back to the value the container read: current",
			updates: []flUpdate{{-3 * time.Hour, creds("U", "P1")}, {-time.Minute, creds("U", "P2")}, {0, creds("U", "P1")}},
			pods:    []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))}},
		{name: "absent Secret: not this detector's finding",
			pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))}},
		{name: "pods cache not available: nothing",
			avail: flAvail(model.ResSecrets), updates: rotated,
			pods: []*model.Pod{spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(nil)
			for _, u := range tc.updates {
				st.UpsertSecret(u.sec, flT0.Add(u.at))
			}
			for _, p := range tc.pods {
				st.UpsertPod(p)
			}
			avail := tc.avail
			if avail == nil {
				avail = flAvail(model.ResSecrets, model.ResPods)
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
	before := flT0.Add(-time.Hour)
	for _, tc := range []struct {
		name      string
		recreated map[string]string
		want      int
	}{
		{"same data", map[string]string{"pass": "P1"}, 0},
		{"other data", map[string]string{"pass": "P2"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := model.NewStore(nil)
			st.UpsertSecret(flSecret("shop", "api-creds", "u1", map[string]string{"pass": "P1"}, flWrite("kubectl-client-side-apply", flT0.Add(-2*time.Hour))), flT0.Add(-2*time.Hour))
			st.UpsertPod(spPod("api-1", before, spUse("api-creds", "pass", model.ViaEnv)))
			st.DeleteSecret("shop", "api-creds", flT0)
			st.UpsertSecret(flSecret("shop", "api-creds", "u2", tc.recreated, flWrite("kubectl-client-side-apply", flT0)), flT0)
			var res StalePodsResult
			st.Read(func(v model.View) { res = StalePods(v, flAvail(model.ResSecrets, model.ResPods)) })
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
	st.UpsertSecret(flSecret("shop", "api-creds", "u1", map[string]string{"pass": "P1"}), flT0.Add(-time.Hour))
	st.UpsertSecret(flSecret("shop", "api-creds", "u1", map[string]string{"pass": "P2"}), flT0)
	// tls is only mounted as a plain volume: no consumer reads it once.
	st.UpsertSecret(flSecret("shop", "tls", "u2", map[string]string{"crt": "C1"}), flT0.Add(-time.Hour))
	st.UpsertSecret(flSecret("shop", "tls", "u2", map[string]string{"crt": "C2"}), flT0)
	// web-config is read once and never changed, but managedFields know its write.
	st.UpsertSecret(flSecret("shop", "web-config", "u3", map[string]string{"A": "a"}, flWrite("helm", flT0.Add(-48*time.Hour))), flT0)
	for i, started := range []time.Time{flT0.Add(-time.Hour), flT0.Add(-time.Hour), flT0.Add(time.Minute)} {
		p := spPod("api-"+string(rune('a'+i)), started, spUse("api-creds", "pass", model.ViaEnv),
			spUse("tls", "", model.ViaVolume), spUse("web-config", "A", model.ViaEnv))
		if i == 0 {
			p.ReloadAnnotations = []string{"reloader.stakater.com/auto"}
		}
		st.UpsertPod(p)
	}
	var res StalePodsResult
	st.Read(func(v model.View) { res = StalePods(v, flAvail(model.ResSecrets, model.ResPods)) })
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
		{Namespace: "shop", Secret: "api-creds", Time: flT0, Source: ChangeObserved},
		{Namespace: "shop", Secret: "web-config", Time: flT0.Add(-48 * time.Hour), Source: ChangeManagedFields},
	}
	if !reflect.DeepEqual(res.Changes, wantChanges) {
		t.Errorf("Changes = %+v", res.Changes)
	}
}
