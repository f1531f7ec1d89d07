package detect

import (
	"sort"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// ChangeSource says where the time of a Secret's last data change came from.
type ChangeSource string

const (
	// ChangeObserved: a fingerprint change this process saw through the watch.
	ChangeObserved ChangeSource = "observed"
	// ChangeManagedFields: before any change is observed, the newest time of a
	// managedFields entry that owns f:data or f:stringData.
	ChangeManagedFields ChangeSource = "managed_fields"
)

// StalePod is a running container that read a Secret once at start (env
// secretKeyRef, envFrom, a volume mounted with subPath) and started before that
// Secret's data last changed: it still runs the old value.
type StalePod struct {
	Namespace    string
	Pod          string
	Container    string
	Secret       string
	Via          model.SecretVia
	WorkloadKind string
	Workload     string
	// Started is the container's start (state.running.startedAt, else the pod's
	// status.startTime); Changed is the data change it missed.
	Started time.Time
	Changed time.Time
	// Seconds is Changed − Started: how long after the container started the
	// Secret changed.
	Seconds      float64
	ChangeSource ChangeSource
}

// WorkloadStale rolls stale pods up per workload and Secret, so a 300-replica
// Deployment is one finding.
type WorkloadStale struct {
	Namespace    string
	WorkloadKind string
	Workload     string
	Secret       string
	// Pods counts the workload's pods with at least one stale container.
	Pods int
	// Reload is set when a stale pod carries Reloader or Wave annotations: a
	// restart was expected and did not happen (info only).
	Reload bool
	// ChangeSource is ChangeObserved when the watch saw the data change that at
	// least one of these pods missed, else ChangeManagedFields: inferred at
	// start-up from managedFields times, which a metadata-only edit by a data
	// owner (a Helm upgrade that only relabels) also moves. An inferred finding
	// must not alert like an observed one.
	ChangeSource ChangeSource
}

// DataChange is the last data change of a Secret that a running container reads
// once at start.
type DataChange struct {
	Namespace string
	Secret    string
	Time      time.Time
	Source    ChangeSource
}

// StalePodsResult is the output of the stale-pods detector.
type StalePodsResult struct {
	Stale     []StalePod
	Workloads []WorkloadStale
	// Changes lists the last data change of every Secret read once by a running
	// container, whether or not a container is stale (the Secrets whose change
	// times matter), sorted.
	Changes []DataChange
	// Silenced counts, per namespace, the stale containers of pods whose
	// driftwatch.io/ignore names stale_pods (an application that reloads its
	// Secrets itself).
	Silenced map[string]int
}

// DetectorStalePods is the stale-pods detector's name, as driftwatch.io/ignore
// names it.
const DetectorStalePods = "stale_pods"

// StalePods finds running containers that started before the last data change of
// a Secret they read once. Plain secret volumes are refreshed by the kubelet and
// are never stale; pods not Running and containers not running (finished init
// containers) are ignored; a container restarted after the change is current.
// Reloader/Wave annotations are reported, never used to judge: staleness is
// judged by times only.
//
// For a use that names a key (env secretKeyRef, volume items), the change of that
// key counts when the observed history knows it; otherwise the Secret's.
func StalePods(v model.View, avail model.Availability) StalePodsResult {
	var res StalePodsResult
	if !avail.All(model.ResSecrets, model.ResPods) {
		return res
	}
	h := v.History()
	type findingKey struct {
		pod, container, secret string
		via                    model.SecretVia
	}
	type wlKey struct{ ns, kind, name, secret string }
	wlPods := map[wlKey]map[string]bool{}
	wlReload := map[wlKey]bool{}
	wlObserved := map[wlKey]bool{}
	var wlOrder []wlKey
	changes := map[model.Ref]DataChange{}

	for _, p := range v.Pods() {
		if p.Phase != "Running" || p.Terminating {
			continue // a terminating pod is on its way out, as a restart would have it
		}
		idx := map[findingKey]int{}
		silencedKeys := map[findingKey]bool{}
		for _, u := range p.Uses {
			if !u.Via.ReadOnce() || u.Container == "" {
				continue
			}
			c, ok := containerOf(p, u.Container)
			if !ok || !c.Running {
				continue
			}
			started := c.StartedAt
			if started.IsZero() {
				started = p.StartTime
			}
			if started.IsZero() {
				continue
			}
			sec, ok := v.Secret(p.Namespace, u.Secret)
			if !ok {
				continue // absent Secrets are the missing-keys detector's
			}
			sr := ref(p.Namespace, u.Secret)
			if _, seen := changes[sr]; !seen {
				t, src := LastDataChange(h, sec)
				changes[sr] = DataChange{Namespace: sr.Namespace, Secret: sr.Name, Time: t, Source: src}
			}
			changed, src := useChange(h, sec, u.Key, started)
			if changed.IsZero() || !changed.After(started) {
				continue
			}
			fk := findingKey{p.Name, u.Container, u.Secret, u.Via}
			if p.Ignores(DetectorStalePods) {
				if _, dup := silencedKeys[fk]; !dup {
					silencedKeys[fk] = true
					if res.Silenced == nil {
						res.Silenced = map[string]int{}
					}
					res.Silenced[p.Namespace]++
				}
				continue
			}
			if i, dup := idx[fk]; dup {
				if changed.After(res.Stale[i].Changed) {
					res.Stale[i].Changed, res.Stale[i].ChangeSource = changed, src
					res.Stale[i].Seconds = changed.Sub(started).Seconds()
				}
				continue
			}
			idx[fk] = len(res.Stale)
			res.Stale = append(res.Stale, StalePod{
				Namespace: p.Namespace, Pod: p.Name, Container: u.Container, Secret: u.Secret, Via: u.Via,
				WorkloadKind: p.Workload.Kind, Workload: p.Workload.Name,
				Started: started, Changed: changed, Seconds: changed.Sub(started).Seconds(), ChangeSource: src,
			})
			wk := wlKey{p.Namespace, p.Workload.Kind, p.Workload.Name, u.Secret}
			if wlPods[wk] == nil {
				wlPods[wk] = map[string]bool{}
				wlOrder = append(wlOrder, wk)
			}
			wlPods[wk][p.Name] = true
			if len(p.ReloadAnnotations) > 0 {
				wlReload[wk] = true
			}
			if src == ChangeObserved {
				wlObserved[wk] = true
			}
		}
	}
	sort.SliceStable(res.Stale, func(i, j int) bool {
		a, b := res.Stale[i], res.Stale[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.Container != b.Container {
			return a.Container < b.Container
		}
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		return a.Via < b.Via
	})
	for _, wk := range wlOrder {
		src := ChangeManagedFields
		if wlObserved[wk] {
			src = ChangeObserved
		}
		res.Workloads = append(res.Workloads, WorkloadStale{Namespace: wk.ns, WorkloadKind: wk.kind, Workload: wk.name,
			Secret: wk.secret, Pods: len(wlPods[wk]), Reload: wlReload[wk], ChangeSource: src})
	}
	sort.Slice(res.Workloads, func(i, j int) bool {
		a, b := res.Workloads[i], res.Workloads[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.WorkloadKind != b.WorkloadKind {
			return a.WorkloadKind < b.WorkloadKind
		}
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		return a.Secret < b.Secret
	})
	for _, c := range changes {
		if !c.Time.IsZero() {
			res.Changes = append(res.Changes, c)
		}
	}
	sort.Slice(res.Changes, func(i, j int) bool {
		if res.Changes[i].Namespace != res.Changes[j].Namespace {
			return res.Changes[i].Namespace < res.Changes[j].Namespace
		}
		return res.Changes[i].Secret < res.Changes[j].Secret
	})
	return res
}

func containerOf(p *model.Pod, name string) (model.Container, bool) {
	for _, c := range p.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return model.Container{}, false
}

// LastDataChange is the time of Secret s's last data change and where it came
// from: the last change observed through the watch, else (at start-up, before any
// is observed) the newest managedFields time of an entry that owns data. It is
// zero when neither is known.
func LastDataChange(h *model.History, s *model.Secret) (time.Time, ChangeSource) {
	if h != nil {
		if t, ok := h.LastObservedChange(ref(s.Namespace, s.Name)); ok {
			return t, ChangeObserved
		}
	}
	return managedFieldsChange(h, s)
}

// managedFieldsChange is the managedFields estimate of s's last data change. Once
// the watch has seen a data change or a metadata-only edit by a data owner, the
// live managedFields no longer say when the data changed: the estimate from
// before is used.
func managedFieldsChange(h *model.History, s *model.Secret) (time.Time, ChangeSource) {
	t := parse.LastDataWrite(s.Managers)
	if h != nil {
		if pinned, ok := h.PinnedDataWrite(ref(s.Namespace, s.Name)); ok {
			t = pinned
		}
	}
	if t.IsZero() {
		return time.Time{}, ""
	}
	return t, ChangeManagedFields
}

// useChange is the data change that matters to a use of key (or of the whole
// Secret when key is "") by a container started at started: the key's own
// observed change when the history can tell (none when the key holds again the
// value it held at the start: removed and restored, flipped back), else the
// Secret's.
func useChange(h *model.History, s *model.Secret, key string, started time.Time) (time.Time, ChangeSource) {
	if key == "" || h == nil {
		return LastDataChange(h, s)
	}
	r := ref(s.Namespace, s.Name)
	t, known := h.KeyLastChange(r, key)
	if !known {
		return LastDataChange(h, s)
	}
	if !t.IsZero() {
		if !started.IsZero() {
			if changed, at, ok := h.KeyValueChangedSince(r, key, started); ok {
				if !changed {
					return time.Time{}, "" // the same value as at the start
				}
				return at, ChangeObserved
			}
		}
		return t, ChangeObserved
	}
	return managedFieldsChange(h, s)
}
