// Package collectors turns the model into Prometheus metrics at scrape time: every
// detector runs over a consistent read of the model and its findings are emitted as
// const metrics, so no series outlives the object or finding it describes.
package collectors

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Config tunes what the findings collector emits.
type Config struct {
	// NoKeyLabel drops the key label: missing keys are reported as counts per Secret.
	NoKeyLabel bool
	// OverdueFactor: an ExternalSecret is overdue when its sync age exceeds this
	// multiple of its refreshInterval.
	OverdueFactor float64
	// Inventory enables driftwatch_secret_consumer_info (one series per consumed
	// Secret and workload).
	Inventory bool
	Now       func() time.Time
}

func (c *Config) defaults() {
	if c.OverdueFactor <= 0 {
		c.OverdueFactor = 3
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// detector is one entry of the registry: its name (the detector label), the
// resources without which it must stay silent, and how it emits.
type detector struct {
	name     string
	requires []model.Resource
	emit     func(e *emitter, v model.View, a model.Availability, now time.Time)
}

// Findings is the scrape-time collector of every detector's findings.
type Findings struct {
	store     *model.Store
	health    model.Health
	cfg       Config
	detectors []detector
}

// NewFindings builds the collector.
func NewFindings(store *model.Store, health model.Health, cfg Config) *Findings {
	cfg.defaults()
	f := &Findings{store: store, health: health, cfg: cfg}
	f.detectors = f.registry()
	return f
}

// DetectorNames lists the detectors in registry order.
func (f *Findings) DetectorNames() []string {
	out := make([]string, 0, len(f.detectors))
	for _, d := range f.detectors {
		out = append(out, d.name)
	}
	return out
}

var (
	descDetectorEnabled  = prometheus.NewDesc("driftwatch_detector_enabled", "1 when the detector runs: every resource it needs is served, permitted and synced.", []string{"detector"}, nil)
	descDetectorDuration = prometheus.NewDesc("driftwatch_detector_duration_seconds", "How long the detector took during this scrape.", []string{"detector"}, nil)
)

// Describe sends every descriptor the collector may emit.
func (f *Findings) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDetectorEnabled
	ch <- descDetectorDuration
	for _, d := range allFindingDescs {
		ch <- d
	}
}

// Collect runs every enabled detector over one consistent read of the model.
func (f *Findings) Collect(ch chan<- prometheus.Metric) {
	avail := model.AvailabilityOf(f.health.States())
	now := f.cfg.Now()
	// Detectors run under the model's read lock; the metrics are sent after it is
	// released, so the informers' event handlers (which need the write lock) wait
	// only for the detectors, not for the registry to encode every series.
	e := &emitter{cfg: &f.cfg}
	f.store.Read(func(v model.View) {
		for _, d := range f.detectors {
			enabled := avail.All(d.requires...)
			e.gauge(descDetectorEnabled, b2f(enabled), d.name)
			if !enabled {
				continue
			}
			start := time.Now()
			d.emit(e, v, avail, now)
			e.gauge(descDetectorDuration, time.Since(start).Seconds(), d.name)
		}
	})
	for _, m := range e.buf {
		ch <- m
	}
}

type emitter struct {
	buf []prometheus.Metric
	cfg *Config
}

func (e *emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.buf = append(e.buf, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
}

func (e *emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	e.buf = append(e.buf, prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func itoa(i int) string { return strconv.Itoa(i) }

// joinBounded joins names with commas, cut to at most max bytes on a name boundary.
func joinBounded(names []string, max int) string {
	var sb strings.Builder
	for i, n := range names {
		add := len(n)
		if i > 0 {
			add++
		}
		if sb.Len()+add > max {
			if sb.Len()+4 <= max {
				sb.WriteString(",...")
			}
			break
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(n)
	}
	return sb.String()
}
