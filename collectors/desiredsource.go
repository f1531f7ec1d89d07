package collectors

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// DesiredSource is the contract every desired-state poller keeps (the Argo
// CD API poller, the Flux artifact poller): it reports the same health,
// exported as driftwatch_desired_source_*{source}.
type DesiredSource interface {
	SourceHealth() model.SourceHealth
}

var (
	descSourceUp = declareFor(collDesired, finding.Family{Name: "driftwatch_desired_source_up",
		Help: "1 when the last read of what a desired-state source declares succeeded (source argocd: a managed-resources request; " +
			"flux: an artifact download), 0 otherwise; absent until a read was tried.",
		Labels: []string{"source"}, Kind: finding.KindHealth})
	descSourceReads = declareFor(collDesired, finding.Family{Name: "driftwatch_desired_source_reads_total",
		Help:   "Reads of what a desired-state source declares, by result (ok, error).",
		Labels: []string{"source", "result"}, Kind: finding.KindHealth, Type: finding.Counter})
	descSourceLastSuccess = declareFor(collDesired, finding.Family{Name: "driftwatch_desired_source_last_success_timestamp_seconds",
		Help:   "When a read of what a desired-state source declares last succeeded (Unix seconds); absent until one did.",
		Labels: []string{"source"}, Kind: finding.KindHealth})
)

// DesiredSources exports the health of the desired-state pollers that run,
// one label value per source.
type DesiredSources struct {
	mu   sync.Mutex
	srcs map[string]DesiredSource
}

// NewDesiredSources builds the collector; pollers join it with Add.
func NewDesiredSources() *DesiredSources { return &DesiredSources{srcs: map[string]DesiredSource{}} }

// Add exports src's health as source name (argocd, flux).
func (d *DesiredSources) Add(name string, src DesiredSource) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.srcs[name] = src
}

// Describe implements prometheus.Collector.
func (d *DesiredSources) Describe(ch chan<- *prometheus.Desc) { describe(collDesired, ch) }

// Collect implements prometheus.Collector.
func (d *DesiredSources) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	names := make([]string, 0, len(d.srcs))
	for n := range d.srcs {
		names = append(names, n)
	}
	srcs := make(map[string]DesiredSource, len(d.srcs))
	for n, s := range d.srcs {
		srcs[n] = s
	}
	d.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		h := srcs[n].SourceHealth()
		ch <- prometheus.MustNewConstMetric(descSourceReads, prometheus.CounterValue, float64(h.Reads-h.Failures), n, "ok")
		ch <- prometheus.MustNewConstMetric(descSourceReads, prometheus.CounterValue, float64(h.Failures), n, "error")
		if h.Asked {
			ch <- prometheus.MustNewConstMetric(descSourceUp, prometheus.GaugeValue, b2f(h.Up), n)
		}
		if !h.LastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(descSourceLastSuccess, prometheus.GaugeValue, float64(h.LastSuccess.UnixNano())/1e9, n)
		}
	}
}
