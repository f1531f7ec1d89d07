package collectors

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/finding"
)

// ArgoCDAPISource reports the Argo CD API poller's request counts per HTTP
// status code, whether it has tried the API yet and whether the last request
// was answered and understood (internal/argocd's Client).
type ArgoCDAPISource interface {
	APIStats() (requests map[string]uint64, asked, up bool)
}

var (
	descArgoRequests = declareFor(collArgoCD, finding.Family{Name: "driftwatch_argocd_requests_total",
		Help:   "Requests to the Argo CD API by HTTP status code (\"timeout\" or \"error\" when no response arrived).",
		Labels: []string{"code"}, Kind: finding.KindHealth, Type: finding.Counter})
	descArgoUp = declareFor(collArgoCD, finding.Family{Name: "driftwatch_argocd_api_up",
		Help: "1 when the last request to the Argo CD API was answered and understood, 0 otherwise (absent until a request was made).",
		Kind: finding.KindHealth})
)

// ArgoCDAPI exports the Argo CD API poller's health (registered with
// --argocd-server only).
type ArgoCDAPI struct{ src ArgoCDAPISource }

// NewArgoCDAPI builds the collector of src's request metrics.
func NewArgoCDAPI(src ArgoCDAPISource) *ArgoCDAPI { return &ArgoCDAPI{src: src} }

// Describe implements prometheus.Collector.
func (a *ArgoCDAPI) Describe(ch chan<- *prometheus.Desc) { describe(collArgoCD, ch) }

// Collect implements prometheus.Collector.
func (a *ArgoCDAPI) Collect(ch chan<- prometheus.Metric) {
	if a.src == nil {
		return
	}
	requests, asked, up := a.src.APIStats()
	codes := make([]string, 0, len(requests))
	for c := range requests {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		ch <- prometheus.MustNewConstMetric(descArgoRequests, prometheus.CounterValue, float64(requests[c]), c)
	}
	if asked {
		ch <- prometheus.MustNewConstMetric(descArgoUp, prometheus.GaugeValue, b2f(up))
	}
}
