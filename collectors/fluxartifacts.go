package collectors

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/flux"
)

// FluxArtifactSource reports the Flux artifact poller's downloads and the
// ones it refused (internal/flux's Poller).
type FluxArtifactSource interface {
	Fetches() uint64
	Failures() uint64
	Refusals() map[string]uint64
}

// fluxRefusalReasons are the reasons a download is refused
// (internal/flux Refuse*), each exported from the start.
var fluxRefusalReasons = []string{flux.RefuseNotHTTP, flux.RefuseHostNotAllowed, flux.RefuseAddress, flux.RefuseRedirect, flux.RefuseNoDigest}

var (
	descFluxFetches = declareFor(collFlux, finding.Family{Name: "driftwatch_flux_artifact_fetches_total",
		Help:   "Downloads of Flux source artifacts (status.artifact.url) by result (ok, error).",
		Labels: []string{"result"}, Kind: finding.KindHealth, Type: finding.Counter})
	descFluxRefusals = declareFor(collFlux, finding.Family{Name: "driftwatch_flux_artifact_refusals_total",
		Help: "Flux artifact downloads refused by reason: not_http, host_not_allowed (the URL does not name Flux's artifact server " +
			"or an allowed host), address_not_allowed (the host resolves to a loopback, link-local or metadata address), redirect " +
			"(never followed), no_digest. Nothing is read from a refused download; each is also counted as an error in " +
			"driftwatch_flux_artifact_fetches_total.",
		Labels: []string{"reason"}, Kind: finding.KindHealth, Type: finding.Counter})
)

// FluxArtifacts exports the Flux artifact poller's health (registered when the
// Flux source is on).
type FluxArtifacts struct{ src FluxArtifactSource }

// NewFluxArtifacts builds the collector of src's metrics.
func NewFluxArtifacts(src FluxArtifactSource) *FluxArtifacts { return &FluxArtifacts{src: src} }

// Describe implements prometheus.Collector.
func (f *FluxArtifacts) Describe(ch chan<- *prometheus.Desc) { describe(collFlux, ch) }

// Collect implements prometheus.Collector.
func (f *FluxArtifacts) Collect(ch chan<- prometheus.Metric) {
	if f.src == nil {
		return
	}
	fetches, failures := f.src.Fetches(), f.src.Failures()
	ch <- prometheus.MustNewConstMetric(descFluxFetches, prometheus.CounterValue, float64(fetches-failures), "ok")
	ch <- prometheus.MustNewConstMetric(descFluxFetches, prometheus.CounterValue, float64(failures), "error")
	refused := f.src.Refusals()
	for _, r := range fluxRefusalReasons {
		ch <- prometheus.MustNewConstMetric(descFluxRefusals, prometheus.CounterValue, float64(refused[r]), r)
	}
}
