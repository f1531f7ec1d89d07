package collectors

// The argocd_not_converging detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/argocdnotconverging.go is the detector itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descArgoNotConverging = declare(finding.Family{
		Name:     "driftwatch_argocd_not_converging",
		Panel:    "Argo CD not converging",
		Offline:  "needs the Application's live sync state over time",
		Commands: notConvergingCommands,
		Help: "Seconds an Argo CD Application has stayed OutOfSync at the revision its last sync operation applied with phase Succeeded " +
			"(reported above the threshold); automated says whether Argo CD syncs it by itself.",
		Labels:   []string{"namespace", "application", "automated"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Application", NameLabel: "application"},
		Class:    "Argo CD not converging",
		Severity: finding.SevWarning,
	})
)

// DefaultNotConvergingThreshold is how long an Application may stay OutOfSync after
// a successful sync before driftwatch_argocd_not_converging reports it.
const DefaultNotConvergingThreshold = 10 * time.Minute

func init() {
	register(detector{name: "argocd_not_converging", requires: []model.Resource{model.ResApplications}, emit: emitArgoNotConverging,
		families: []*prometheus.Desc{descArgoNotConverging}})
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

func notConvergingCommands(c *finding.Commands) {
	c.Confirm("the Application's sync state", "kubectl -n "+c.NS()+" get application "+c.Name()+
		` -o json | jq '{sync: .status.sync | {status, revision}, operation: .status.operationState | {phase, finishedAt}}'`)
}
