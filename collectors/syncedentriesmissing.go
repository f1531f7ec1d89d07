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
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descSyncedEntriesMissing = declare(finding.Family{
		Name:     "driftwatch_gitops_synced_entries_missing",
		Panel:    "synced but missing",
		Offline:  "needs what the GitOps tool reports it synced and the live object",
		Commands: syncedEntriesMissingCommands,
		Help: "Entries (ExternalSecret spec.data secretKeys and template.data keys, Secret key names) that the revision a GitOps tool says it delivered " +
			"declares and the live object lacks: the last sync Succeeded at that revision and applied the object, yet what Git added never arrived " +
			"(an ignoreDifferences trap under client-side or server-side apply, or a later removal).",
		Labels:     append([]string{"namespace", "kind", "name", "source"}, syncLabels...),
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{KindLabel: "kind", Kinds: []string{"Secret", "ExternalSecret"}, NameLabel: "name"},
		Class:      "GitOps delivery",
		Severity:   finding.SevWarning,
		SeverityBy: &finding.SeverityBy{Label: "kind", Values: map[string]finding.Severity{"ExternalSecret": finding.SevCritical}},
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

// applicationSyncCommand shows what the Application a GitOps finding names
// says it synced and compares.
func applicationSyncCommand(c *finding.Commands) {
	if c.F.Labels["sync_kind"] == "Application" {
		c.Confirm("what the Application says it synced and compares", "kubectl -n "+c.L("sync_namespace")+" get application "+c.L("sync_name")+
			` -o json | jq '{phase: .status.operationState.phase, synced: .status.operationState.syncResult.revision, compared: .status.sync.revision, options: .spec.syncPolicy.syncOptions, ignore: .spec.ignoreDifferences}'`)
	}
}

func syncedEntriesMissingCommands(c *finding.Commands) {
	ns, name := c.NS(), c.Name()
	applicationSyncCommand(c)
	kind := finding.Sh(strings.ToLower(c.F.Labels["kind"]))
	if c.F.Labels["kind"] == "ExternalSecret" {
		c.Confirm("the entries the live ExternalSecret has (names only)", "kubectl -n "+ns+" get externalsecret "+name+" -o json | jq '[.spec.data[]?.secretKey]'")
	} else {
		c.SecretKeys(name)
	}
	c.Confirm("who wrote the object", "kubectl -n "+ns+" get "+kind+" "+name+" --show-managed-fields -o json | "+finding.JQManagers)
}
