package collectors

// The flux_unjudged detector: its metric families (the catalog entries), its
// registry entry and how it emits (detect/fluxunjudged.go is the detector
// itself).

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descFluxUnjudged = declare(finding.Family{Name: "driftwatch_flux_kustomizations_unjudged",
		Help: "Flux Kustomizations nothing is expected from, by reason: no_artifact (the source serves none), source_kind_unknown, " +
			"source_unavailable (its resource is not listed), source_suspended (not fetched), fetch_refused (the URL, a redirect or " +
			"the address is not allowed, or no digest), fetch_failed (retried with backoff), limit (size, files, objects or build " +
			"time), remote_base (never fetched), build_failed (Flux's build fails on the artifact), spec_unreadable. " +
			"Every reason is exported, 0 when none.",
		Labels: []string{"reason"}, Kind: finding.KindHealth})
	descFluxUnjudgedKS = declare(finding.Family{Name: "driftwatch_flux_kustomization_unjudged",
		Help: "1 for each Flux Kustomization nothing is expected from, with the reason (see driftwatch_flux_kustomizations_unjudged): " +
			"its Secrets and ExternalSecrets are not judged, so a key missing from them is not reported.",
		Labels: []string{"namespace", "kustomization", "reason"}, Kind: finding.KindHealth})
	descFluxUndetermined = declare(finding.Family{Name: "driftwatch_flux_undetermined_objects",
		Help: "Secrets and ExternalSecrets of a judged Flux Kustomization whose name or keys driftwatch cannot determine " +
			"(a postBuild.substituteFrom variable in them, a generated name hashed from SOPS-encrypted content): nothing is " +
			"expected of them. The agent's log names them.",
		Labels: []string{"namespace", "kustomization"}, Kind: finding.KindHealth})
)

func init() {
	register(detector{name: detect.DetectorFluxUnjudged, requires: []model.Resource{model.ResKustomizations},
		emit: emitFluxUnjudged, families: []*prometheus.Desc{descFluxUnjudged, descFluxUnjudgedKS, descFluxUndetermined}})
}

func emitFluxUnjudged(e *emitter, v model.View, _ model.Availability, _ time.Time) {
	count := map[string]int{}
	for _, u := range detect.FluxUnjudged(v) {
		if own := e.cfg.OwnsNamespace; own != nil && !own(u.Namespace) {
			continue // another shard's: it counts and exports it
		}
		count[u.Reason]++
		e.gauge(descFluxUnjudgedKS, 1, u.Namespace, u.Name, u.Reason)
	}
	for _, r := range flux.UnjudgedReasons {
		e.gauge(descFluxUnjudged, float64(count[r]), r)
	}
	for _, u := range detect.FluxUndetermined(v) {
		e.gauge(descFluxUndetermined, float64(u.Objects), u.Namespace, u.Name)
	}
}
