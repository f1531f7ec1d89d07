package collectors

// The flux_substitute detector: its metric family (the catalog entry), its
// registry entry and how it emits (detect/fluxsubstitute.go is the detector
// itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var descFluxSubstituteMissing = declare(finding.Family{
	Name:     "driftwatch_flux_substitute_missing",
	Panel:    "Flux substitution",
	Offline:  "needs the Kustomization's live substitution sources",
	Commands: fluxSubstituteCommands,
	Help: "1 for each variable that the manifests of the revision a Flux Kustomization reports applied use without a default (${VAR}) " +
		"while an optional postBuild.substituteFrom Secret that could provide it is absent (reason absent) or lacks it (lacks_variable), " +
		"and nothing else provides it: the variable shipped unresolved.",
	Labels:   []string{"namespace", "kustomization", "kind", "name", "variable", "reason"},
	Kind:     finding.KindFinding,
	Object:   &finding.ObjectRef{Kind: "Kustomization", NameLabel: "kustomization"},
	Class:    "Flux substitution",
	Severity: finding.SevWarning,
})

func init() {
	register(detector{name: detect.DetectorFluxSubstitute, requires: []model.Resource{model.ResKustomizations, model.ResSecrets},
		emit: emitFluxSubstitute, families: []*prometheus.Desc{descFluxSubstituteMissing}})
}

func emitFluxSubstitute(e *emitter, v model.View, _ model.Availability, _ time.Time) {
	for _, s := range detect.FluxSubstitutesMissing(v) {
		if f := e.gauge(descFluxSubstituteMissing, 1, s.Namespace, s.KS, s.Kind, s.Name, s.Variable, s.Reason); f != nil {
			what := "does not exist"
			if s.Reason == "lacks_variable" {
				what = "has no key " + s.Variable
			}
			f.Evidence = fmt.Sprintf("Kustomization %s/%s is Ready at the revision driftwatch read; %s uses ${%s} without a default; "+
				"the optional substituteFrom %s %s %s and nothing else provides it", s.Namespace, s.KS, s.UsedBy, s.Variable, s.Kind, s.Name, what)
		}
	}
}

// fluxSubstituteCommands show where the variable should come from (the
// Kustomization's substituteFrom sources and the revision it applied, never
// postBuild.substitute, which holds values) and the key names of the source,
// and ask kustomize-controller to reconcile once the source provides it.
func fluxSubstituteCommands(c *finding.Commands) {
	ns, ks := c.NS(), c.L("kustomization")
	c.Confirm("the Kustomization's substitution sources and the revision it applied", "kubectl -n "+ns+" get kustomization "+ks+
		` -o json | jq '{substituteFrom: .spec.postBuild.substituteFrom, applied: .status.lastAppliedRevision}'`)
	switch c.F.Labels["kind"] {
	case "Secret":
		c.SecretKeys(c.L("name"))
	case "ConfigMap":
		c.Confirm("the keys the ConfigMap holds", "kubectl -n "+ns+" get configmap "+c.L("name")+" -o json | "+finding.JQKeys)
	}
	c.Fix("once the source provides "+c.F.Labels["variable"]+", reconcile the Kustomization",
		"kubectl -n "+ns+" annotate kustomization "+ks+" reconcile.fluxcd.io/requestedAt=$(date +%s) --overwrite")
}
