package collectors

// The flux_never_updated detector: its metric family (the catalog entry), its
// registry entry and how it emits (detect/fluxneverupdated.go is the detector
// itself).

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// fluxSkipReasons is the text of each reason kustomize-controller skips an
// object for (flux.SkipReason: its ssa and reconcile selectors), the reason
// label of driftwatch_flux_never_updated and of its manifest form
// (driftwatch_flux_never_updated_in_manifest, agent lint's flux_never_updated).
var fluxSkipReasons = &finding.ValueTexts{Label: "reason", Text: map[string]string{
	flux.SkipSSAIfNotPresent:   "kustomize-controller creates it once and never patches it",
	flux.SkipSSAIgnore:         "kustomize-controller never applies it, not even to create it",
	flux.SkipReconcileDisabled: "kustomize-controller never applies it, not even to create it",
}}

var descFluxNeverUpdated = declare(finding.Family{
	Name:     "driftwatch_flux_never_updated",
	Panel:    "Flux never-updated objects",
	Offline:  "needs the live object (agent lint reports the manifest form, driftwatch_flux_never_updated_in_manifest)",
	Commands: (*finding.Commands).Object,
	Help: "Entries (Secret key names, ExternalSecret spec.data secretKeys) that the revision a Flux Kustomization reports applied declares " +
		"and the live object lacks, for objects kustomize-controller never updates: reason ssa_if_not_present " +
		"(kustomize.toolkit.fluxcd.io/ssa: IfNotPresent, created once), ssa_ignore (ssa: Ignore) or reconcile_disabled " +
		"(kustomize.toolkit.fluxcd.io/reconcile: disabled); set_in says whether the annotation is on the object in Git or in the cluster.",
	Labels:   []string{"namespace", "kind", "name", "kustomization_namespace", "kustomization", "reason", "set_in"},
	Kind:     finding.KindFinding,
	Object:   &finding.ObjectRef{KindLabel: "kind", Kinds: []string{"Secret", "ExternalSecret"}, NameLabel: "name"},
	Class:    "Flux never-updated objects",
	Severity: finding.SevCritical,
	Values:   fluxSkipReasons,
})

func init() {
	register(detector{name: detect.DetectorFluxNeverUpdated, requires: []model.Resource{model.ResKustomizations, model.ResSecrets},
		emit: emitFluxNeverUpdated, families: []*prometheus.Desc{descFluxNeverUpdated}})
}

func emitFluxNeverUpdated(e *emitter, v model.View, _ model.Availability, _ time.Time) {
	for _, n := range detect.FluxNeverUpdatedObjects(v) {
		count := float64(len(n.Missing))
		if count == 0 {
			count = 1 // absent, without entries
		}
		if f := e.gauge(descFluxNeverUpdated, count, n.Namespace, n.Kind, n.Name, n.KSNamespace, n.KS, n.Reason, n.SetIn); f != nil {
			state := "lacks " + strings.Join(n.Missing, ", ")
			if n.Absent {
				state = "does not exist"
			}
			f.Evidence = fmt.Sprintf("Kustomization %s/%s is Ready at the revision driftwatch read, which declares this %s; the live object %s, "+
				"and %s (%s, set in %s)", n.KSNamespace, n.KS, n.Kind, state, f.Family.ValueText(f.Labels), n.Reason, n.SetIn)
		}
	}
}
