package collectors

// The stale_pods detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/stalepods.go is the detector itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descPodStale = declare(finding.Family{
		Name: "driftwatch_pod_stale_secret_seconds",
		Help: "Seconds after the container started that a Secret it read once at start (env, envFrom, subPath) changed: it still runs the old value. " +
			"change_source: observed (the watch saw the change) or managed_fields (inferred at start-up; a metadata-only edit by a data owner also moves it).",
		Labels:     []string{"namespace", "pod", "container", "secret", "via", "change_source"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Stale pods",
		Severity:   finding.SevWarning,
		SeverityBy: &finding.SeverityBy{Label: "change_source", Values: map[string]finding.Severity{string(detect.ChangeManagedFields): finding.SevInfo}},
		Restates:   "driftwatch_workload_stale_pods",
	})
	descWorkloadStale = declare(finding.Family{
		Name:     "driftwatch_workload_stale_pods",
		Panel:    "stale workloads",
		Offline:  "needs running pods and the Secret's observed history",
		Commands: stalePodsCommands,
		Help: "Running pods of a workload with a container older than the last data change of a Secret it read once at start. " +
			"change_source: observed when the watch saw a change one of them missed, else managed_fields (inferred).",
		Labels:     []string{"namespace", "workload_kind", "workload", "secret", "change_source"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:      "Stale pods",
		Severity:   finding.SevWarning,
		SeverityBy: &finding.SeverityBy{Label: "change_source", Values: map[string]finding.Severity{string(detect.ChangeManagedFields): finding.SevInfo}},
	})
	descLastDataChange = declare(finding.Family{
		Name:   "driftwatch_secret_last_data_change_timestamp_seconds",
		Help:   "Time of the Secret's last data change, for Secrets that running containers read once at start; source is observed (seen by the watch) or managed_fields (start-up estimate).",
		Labels: []string{"namespace", "secret", "source"},
		Kind:   finding.KindObject,
		Object: &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
)

func init() {
	register(detector{name: detect.DetectorStalePods, requires: []model.Resource{model.ResSecrets, model.ResPods}, emit: emitStalePods, perNamespace: true,
		families: []*prometheus.Desc{descPodStale, descWorkloadStale, descLastDataChange}})
}

func emitStalePods(e *emitter, v model.View, a model.Availability, _ time.Time) {
	res := detect.StalePods(v, a)
	for ns, n := range res.Silenced {
		e.silence(ns, n)
	}
	for _, s := range res.Stale {
		e.gauge(descPodStale, s.Seconds, s.Namespace, s.Pod, s.Container, s.Secret, string(s.Via), string(s.ChangeSource))
	}
	for _, w := range res.Workloads {
		f := e.gauge(descWorkloadStale, float64(w.Pods), w.Namespace, w.WorkloadKind, w.Workload, w.Secret, string(w.ChangeSource))
		if f == nil {
			continue
		}
		var changed time.Time
		for _, s := range res.Stale {
			if s.Namespace == w.Namespace && s.Workload == w.Workload && s.WorkloadKind == w.WorkloadKind && s.Secret == w.Secret && s.Changed.After(changed) {
				changed = s.Changed
			}
		}
		how := "observed by the watch"
		if w.ChangeSource == detect.ChangeManagedFields {
			how = "inferred at agent start from managedFields (a metadata-only edit by a data owner moves it too)"
		}
		f.Evidence = fmt.Sprintf("%d running pod(s) read Secret %s once at start (env, envFrom or subPath) and started before its data changed at %s (%s)",
			w.Pods, w.Secret, changed.UTC().Format(time.RFC3339), how)
		f.Consumers = []finding.Consumer{{Kind: w.WorkloadKind, Name: w.Workload, Pods: w.Pods}}
	}
	for _, c := range res.Changes {
		e.gauge(descLastDataChange, float64(c.Time.UnixNano())/1e9, c.Namespace, c.Secret, string(c.Source))
	}
}

func stalePodsCommands(c *finding.Commands) {
	ns := c.NS()
	c.Confirm("when the pods started", "kubectl -n "+ns+` get pods -o json | jq -r '.items[] | .metadata.name as $p | .status.containerStatuses[]? | "\($p) \(.name) \(.state.running.startedAt // "-")"'`)
	c.Confirm("who changed the Secret", "kubectl -n "+ns+" get secret "+c.L("secret")+" --show-managed-fields -o json | "+finding.JQManagers)
	if r := finding.RolloutRef(c.F.Labels["workload_kind"], c.F.Labels["workload"]); r != "" {
		c.Fix("restart the workload so its pods read the current data", "kubectl -n "+ns+" rollout restart "+finding.Sh(r))
	}
}
