package collectors

// The synced_entries_missing detector: its metric family (the catalog entry),
// its registry entry and how it emits (detect/syncedentriesmissing.go is the
// detector).

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descSyncedEntriesMissing = declare(Family{
		Name: "driftwatch_gitops_synced_entries_missing",
		Help: "Entries (ExternalSecret spec.data secretKeys and template.data keys, Secret key names) that the revision a GitOps tool says it delivered " +
			"declares and the live object lacks: the last sync Succeeded at that revision and applied the object, yet what Git added never arrived " +
			"(an ignoreDifferences trap under client-side or server-side apply, or a later removal).",
		Labels:     append([]string{"namespace", "kind", "name", "source"}, syncLabels...),
		Kind:       KindFinding,
		Object:     &ObjectRef{KindLabel: "kind", NameLabel: "name"},
		Class:      "GitOps delivery",
		Severity:   SevWarning,
		SeverityBy: &SeverityBy{Label: "kind", Values: map[string]Severity{"ExternalSecret": SevCritical}},
	})
)

func init() {
	// Secrets are the base; the ExternalSecret half is gated inside the
	// detector on the ExternalSecrets cache, and each GitOps source on its own
	// resource (Argo CD Applications, Flux Kustomizations). The sync objects
	// are read through the desired state (detect.GitOpsDesired), which stamps
	// the global generation (Flux: its own).
	register(detector{name: detect.DetectorSyncedEntriesMissing, requires: []model.Resource{model.ResSecrets},
		emit: emitSyncedEntriesMissing, perNamespace: true, families: []*prometheus.Desc{descSyncedEntriesMissing}})
}

func emitSyncedEntriesMissing(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, m := range detect.SyncedEntries(v, a) {
		f := e.gauge(descSyncedEntriesMissing, float64(len(m.Missing)), m.Namespace, m.Kind, m.Name, string(m.Source),
			m.Sync.Kind, m.Sync.Namespace, m.Sync.Name)
		if f == nil {
			continue
		}
		names := m.Missing
		if len(names) > maxListed {
			names = append(names[:maxListed:maxListed], "…")
		}
		f.Evidence = fmt.Sprintf("%s says it delivered revision %s, which declares %d entr(y/ies) the live %s lacks: %s; last-applied: %s",
			syncDesc(v, m.Sync), m.Revision, len(m.Missing), m.Kind, strings.Join(names, ", "), map[string]string{
				detect.LastAppliedNone:  "none that its writer still holds (a server-side apply sync writes none)",
				detect.LastAppliedLacks: "lacks them too: what was applied was cut short",
				detect.LastAppliedHolds: "holds them: they were removed after the apply",
			}[m.LastApplied])
	}
}
