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
	"github.com/driftwatch/driftwatch/internal/model"
)

var descFluxIgnoreTrap = declare(Family{
	Name: "driftwatch_flux_ignore_trap",
	Help: "1 for each Flux Kustomization spec.ignore path that covers a whole Secret data map or ExternalSecret spec.data (or dataFrom) " +
		"of objects it applies: kustomize-controller leaves the path out of drift detection and sends live's value for it, so entries added " +
		"in Git never ship; biting=\"true\" when a selected object lacks entries of the revision the Kustomization reports applied.",
	Labels:     []string{"namespace", "kustomization", "kind", "path", "biting"},
	Kind:       KindFinding,
	Object:     &ObjectRef{Kind: "Kustomization", NameLabel: "kustomization"},
	Class:      "Flux ignore trap",
	Severity:   SevWarning,
	SeverityBy: &SeverityBy{Label: "biting", Values: map[string]Severity{"true": SevCritical}},
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
