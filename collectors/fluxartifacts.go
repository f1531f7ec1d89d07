package collectors

import (
	"github.com/driftwatch/driftwatch/finding"
	"github.com/prometheus/client_golang/prometheus"
)

// FluxArtifactSource reports the Flux artifact poller's downloads and the
// Kustomizations whose build it could not read (internal/flux's Poller).
type FluxArtifactSource interface {
	Fetches() uint64
	Failures() uint64
	Unjudged() int
}

var (
	descFluxFetches = declareFor(collFlux, finding.Family{Name: "driftwatch_flux_artifact_fetches_total",
		Help:   "Downloads of Flux source artifacts (status.artifact.url) by result (ok, error).",
		Labels: []string{"result"}, Kind: finding.KindHealth, Type: finding.Counter})
	descFluxUnjudged = declareFor(collFlux, finding.Family{Name: "driftwatch_flux_kustomizations_unjudged",
		Help: "Kustomizations whose artifact driftwatch could not download or build, or whose build uses what it does not reproduce " +
			"(components, generators, remote resources): nothing is expected from them.",
		Kind: finding.KindHealth})
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
	ch <- prometheus.MustNewConstMetric(descFluxUnjudged, prometheus.GaugeValue, float64(f.src.Unjudged()))
}
