package collectors

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descLastAppliedTruncated = declare(Family{
		Name:       "driftwatch_last_applied_truncated",
		Help:       "Entries (ExternalSecret spec.data secretKeys, Secret key names) missing between the desired, last-applied and live lists; cause says which.",
		Labels:     []string{"namespace", "kind", "name", "cause"},
		Kind:       KindFinding,
		Object:     &ObjectRef{KindLabel: "kind", NameLabel: "name"},
		Class:      "Truncated last-applied",
		Severity:   SevWarning,
		SeverityBy: &SeverityBy{Label: "cause", Values: map[string]Severity{detect.CauseTruncatedPatch: SevCritical}},
	})
	descArgoIgnoreListTrap = declare(Family{
		Name: "driftwatch_argocd_ignore_list_trap",
		Help: "1 for each Argo CD ignoreDifferences path (or managedFieldsManagers entry) that keeps list entries added in Git from shipping to a managed object: " +
			"effect rebuilds_list (every sync rebuilds the list from live), rebuilds_list_if_present (only when live has the ignored field), " +
			"hides_new_entries (no RespectIgnoreDifferences: new entries do not make the Application OutOfSync).",
		Labels:     []string{"namespace", "application", "group", "kind", "path", "respect_ignore_differences", "effect"},
		Kind:       KindFinding,
		Object:     &ObjectRef{Kind: "Application", NameLabel: "application"},
		Class:      "Argo CD ignore-list trap",
		Severity:   SevWarning,
		SeverityBy: &SeverityBy{Label: "effect", Values: map[string]Severity{"rebuilds_list": SevCritical}},
	})
	descArgoNotConverging = declare(Family{
		Name: "driftwatch_argocd_not_converging",
		Help: "Seconds an Argo CD Application has stayed OutOfSync at the revision its last sync operation applied with phase Succeeded " +
			"(reported above the threshold); automated says whether Argo CD syncs it by itself.",
		Labels:   []string{"namespace", "application", "automated"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "Application", NameLabel: "application"},
		Class:    "Argo CD not converging",
		Severity: SevWarning,
	})
)

// DefaultNotConvergingThreshold is how long an Application may stay OutOfSync after
// a successful sync before driftwatch_argocd_not_converging reports it.
const DefaultNotConvergingThreshold = 10 * time.Minute

func init() {
	register(
		// Secrets are the base; the ExternalSecret half is gated inside the detector
		// on the ExternalSecrets cache, the desired lists on the Helm cache.
		detector{name: "last_applied", requires: []model.Resource{model.ResSecrets}, emit: emitLastApplied, perNamespace: true},
		detector{name: "argocd_ignore_trap", requires: []model.Resource{model.ResApplications}, emit: emitArgoIgnoreTrap},
		detector{name: "argocd_not_converging", requires: []model.Resource{model.ResApplications}, emit: emitArgoNotConverging},
	)
}

func emitLastApplied(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, t := range detect.LastAppliedTruncated(v, a) {
		f := e.gauge(descLastAppliedTruncated, float64(t.Missing), t.Namespace, t.Kind, t.Name, t.Cause)
		if f == nil {
			continue
		}
		f.Evidence = map[string]string{
			detect.CauseTruncatedPatch:     "the last kubectl apply (its writer still holds the list) lacked %d entr(y/ies) of the desired state (Argo CD target or Helm release)",
			detect.CauseRevertedAfterApply: "the last apply held every desired entry, but the live object lacks %d of them",
			detect.CauseLiveShorter:        "the live object lacks %d entr(y/ies) of its last kubectl apply; the next apply restores them",
			detect.CauseLastAppliedShorter: "the live list has %d entr(y/ies) its last kubectl apply lacks; the next apply drops them",
		}[t.Cause]
		f.Evidence = fmt.Sprintf(f.Evidence, t.Missing)
	}
}

func emitArgoIgnoreTrap(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, t := range detect.IgnoreListTraps(v, a) {
		respect := "false"
		if t.RespectIgnoreDifferences {
			respect = "true"
		}
		if f := e.gauge(descArgoIgnoreListTrap, 1, t.Namespace, t.Application, t.Group, t.Kind, t.Path, respect, string(t.Effect)); f != nil {
			f.Evidence = map[detect.TrapEffect]string{
				detect.EffectRebuildsList:          "with RespectIgnoreDifferences every sync rebuilds the list from live: entries added in Git never ship",
				detect.EffectRebuildsListIfPresent: "with RespectIgnoreDifferences a sync rebuilds the list from live whenever live has the ignored field",
				detect.EffectHidesNewEntries:       "the diff ignores whole list entries: entries added in Git do not make the Application OutOfSync",
			}[t.Effect] + fmt.Sprintf(" (ignoreDifferences %s on %s)", t.Path, t.Kind)
		}
	}
}

func emitArgoNotConverging(e *emitter, v model.View, a model.Availability, now time.Time) {
	for _, n := range detect.NotConvergingApps(v, a, now, e.cfg.NotConvergingThreshold) {
		automated := "false"
		if n.Automated {
			automated = "true"
		}
		if f := e.gauge(descArgoNotConverging, n.Seconds, n.Namespace, n.Application, automated); f != nil {
			f.Evidence = fmt.Sprintf("OutOfSync for %s at the revision its last sync applied with phase Succeeded (automated=%s)",
				time.Duration(n.Seconds*float64(time.Second)).Round(time.Second), automated)
		}
	}
}
