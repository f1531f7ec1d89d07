package collectors

// The argocd_ignore_list_trap detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/argocdignorelisttrap.go is the detector itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descArgoIgnoreListTrap = declare(finding.Family{
		Name:  "driftwatch_argocd_ignore_list_trap",
		Panel: "Argo CD ignore-list trap",
		Lint: []finding.Rule{{ID: "argocd_ignore_list_trap",
			Why: "an Argo CD Application's ignoreDifferences reaches into a list: with RespectIgnoreDifferences every sync rebuilds the list from live, without it new entries never show as OutOfSync"}},
		Commands: argoIgnoreTrapCommands,
		Help: "1 for each Argo CD ignoreDifferences path (or managedFieldsManagers entry) that keeps list entries added in Git from shipping to a managed object: " +
			"effect rebuilds_list (every sync rebuilds the list from live), rebuilds_list_if_present (only when live has the ignored field), " +
			"hides_new_entries (no RespectIgnoreDifferences: new entries do not make the Application OutOfSync).",
		Labels:     []string{"namespace", "application", "group", "kind", "path", "respect_ignore_differences", "effect"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{Kind: "Application", NameLabel: "application"},
		Class:      "Argo CD ignore-list trap",
		Severity:   finding.SevWarning,
		SeverityBy: &finding.SeverityBy{Label: "effect", Values: map[string]finding.Severity{"rebuilds_list": finding.SevCritical}},
		Values: &finding.ValueTexts{Label: "effect", Text: map[string]string{
			string(detect.EffectRebuildsList):          "with RespectIgnoreDifferences=true every sync rebuilds the list from live: entries added in Git never ship, while the sync reports Succeeded",
			string(detect.EffectRebuildsListIfPresent): "with RespectIgnoreDifferences=true, whenever live has the ignored field, every sync rebuilds the list from live: entries added in Git never ship",
			string(detect.EffectHidesNewEntries):       "without RespectIgnoreDifferences, entries added in Git leave the diff unchanged: the Application stays Synced and an automated sync never ships them",
		}},
	})
)

func init() {
	register(detector{name: "argocd_ignore_list_trap", requires: []model.Resource{model.ResApplications}, emit: emitArgoIgnoreTrap,
		families: []*prometheus.Desc{descArgoIgnoreListTrap}})
}

func emitArgoIgnoreTrap(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, t := range detect.IgnoreListTraps(v, a) {
		respect := "false"
		if t.RespectIgnoreDifferences {
			respect = "true"
		}
		if f := e.gauge(descArgoIgnoreListTrap, 1, t.Namespace, t.Application, t.Group, t.Kind, t.Path, respect, string(t.Effect)); f != nil {
			f.Evidence = f.Family.ValueText(f.Labels) + fmt.Sprintf(" (ignoreDifferences %s on %s)", t.Path, t.Kind)
		}
	}
}

func argoIgnoreTrapCommands(c *finding.Commands) {
	c.Confirm("the Application's ignoreDifferences and sync options", "kubectl -n "+c.NS()+" get application "+c.Name()+
		` -o json | jq '{ignore: .spec.ignoreDifferences, syncOptions: .spec.syncPolicy.syncOptions}'`)
}
