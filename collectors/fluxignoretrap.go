package collectors

// The flux_ignore_trap detector: its metric family (the catalog entry), its
// registry entry and how it emits (detect/fluxignoretrap.go is the detector
// itself).

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var descFluxIgnoreTrap = declare(finding.Family{
	Name:  "driftwatch_flux_ignore_trap",
	Panel: "Flux ignore trap",
	Lint: []finding.Rule{{ID: "flux_ignore_trap",
		Why: "a Flux Kustomization's spec.ignore covers a whole Secret data map or ExternalSecret spec.data: kustomize-controller applies live's value for it, so entries added in Git never ship"}},
	Commands: (*finding.Commands).Object,
	Help: "1 for each Flux Kustomization spec.ignore path that covers a whole Secret data map or ExternalSecret spec.data (or dataFrom) " +
		"of objects it applies: kustomize-controller leaves the path out of drift detection and sends live's value for it, so entries added " +
		"in Git never ship; biting=\"true\" when a selected object lacks entries of the revision the Kustomization reports applied.",
	Labels:     []string{"namespace", "kustomization", "kind", "path", "biting"},
	Kind:       finding.KindFinding,
	Object:     &finding.ObjectRef{Kind: "Kustomization", NameLabel: "kustomization"},
	Class:      "Flux ignore trap",
	Severity:   finding.SevWarning,
	SeverityBy: &finding.SeverityBy{Label: "biting", Values: map[string]finding.Severity{"true": finding.SevCritical}},
})

func init() {
	register(detector{name: detect.DetectorFluxIgnoreTrap, requires: []model.Resource{model.ResKustomizations, model.ResSecrets},
		emit: emitFluxIgnoreTrap, families: []*prometheus.Desc{descFluxIgnoreTrap}})
}

func emitFluxIgnoreTrap(e *emitter, v model.View, _ model.Availability, _ time.Time) {
	for _, t := range detect.FluxIgnoreTraps(v) {
		biting := "false"
		if t.Biting {
			biting = "true"
		}
		if f := e.gauge(descFluxIgnoreTrap, 1, t.Namespace, t.KS, t.Kind, t.Path, biting); f != nil {
			f.Evidence = fmt.Sprintf("spec.ignore %q selects %s %s: entries added in Git to it never ship", t.Path, t.Kind, strings.Join(t.Objects, ", "))
			if t.Biting {
				f.Evidence += fmt.Sprintf("; the revision the Kustomization reports applied declares %s, live lacks them", strings.Join(t.Missing, ", "))
			}
		}
	}
}
