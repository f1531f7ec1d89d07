package collectors

import (
	"sync/atomic"
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

var notConvergingThreshold atomic.Int64

func init() {
	notConvergingThreshold.Store(int64(DefaultNotConvergingThreshold))
	register(
		// Secrets are the base; the ExternalSecret half is gated inside the detector
		// on the ExternalSecrets cache, the desired lists on the Helm cache.
		detector{name: "last_applied", requires: []model.Resource{model.ResSecrets}, emit: emitLastApplied, perNamespace: true},
		detector{name: "argocd_ignore_trap", requires: []model.Resource{model.ResApplications}, emit: emitArgoIgnoreTrap},
		detector{name: "argocd_not_converging", requires: []model.Resource{model.ResApplications}, emit: emitArgoNotConverging},
	)
}

// SetNotConvergingThreshold sets the not-converging threshold (a flag of
// cmd/agent); d <= 0 restores the default.
func SetNotConvergingThreshold(d time.Duration) {
	if d <= 0 {
		d = DefaultNotConvergingThreshold
	}
	notConvergingThreshold.Store(int64(d))
}

// NotConvergingThreshold returns the threshold in use.
func NotConvergingThreshold() time.Duration { return time.Duration(notConvergingThreshold.Load()) }

func emitLastApplied(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, t := range detect.LastAppliedTruncated(v, a) {
		e.gauge(descLastAppliedTruncated, float64(t.Missing), t.Namespace, t.Kind, t.Name, t.Cause)
	}
}

func emitArgoIgnoreTrap(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, t := range detect.IgnoreListTraps(v, a) {
		respect := "false"
		if t.RespectIgnoreDifferences {
			respect = "true"
		}
		e.gauge(descArgoIgnoreListTrap, 1, t.Namespace, t.Application, t.Group, t.Kind, t.Path, respect, string(t.Effect))
	}
}

func emitArgoNotConverging(e *emitter, v model.View, a model.Availability, now time.Time) {
	for _, n := range detect.NotConvergingApps(v, a, now, NotConvergingThreshold()) {
		automated := "false"
		if n.Automated {
			automated = "true"
		}
		e.gauge(descArgoNotConverging, n.Seconds, n.Namespace, n.Application, automated)
	}
}
