package collectors

import (
	"runtime"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// EventSource reports informer event counts per {resource, type}.
type EventSource interface {
	EventCounts() map[[2]string]uint64
}

// DecodeErrorSource counts object parts that could not be decoded, per
// {resource, part, reason}.
type DecodeErrorSource interface {
	DecodeErrors() map[[3]string]uint64
}

// WireFallbackSource counts responses the wire decoder left to the typed
// decoder, per {resource, reason} (internal/transform wire.go).
type WireFallbackSource interface {
	WireFallbacks() map[[2]string]uint64
}

// BuildInfo identifies the running binary.
type BuildInfo struct {
	Version  string
	Revision string
}

// Self exports the agent's own health: build, informers, events, model size.
type Self struct {
	store  *model.Store
	health model.Health
	events EventSource
	build  BuildInfo
	decode DecodeErrorSource
}

// WithDecodeErrors adds driftwatch_decode_errors_total from src.
func (s *Self) WithDecodeErrors(src DecodeErrorSource) *Self { s.decode = src; return s }

// NewSelf builds the self-metrics collector.
func NewSelf(store *model.Store, health model.Health, events EventSource, build BuildInfo) *Self {
	return &Self{store: store, health: health, events: events, build: build}
}

var (
	descBuild = declareFor(collSelf, finding.Family{Name: "driftwatch_build_info", Help: "Build of the running agent.",
		Labels: []string{"version", "revision", "goversion"}, Kind: finding.KindHealth})
	descSynced = declareFor(collSelf, finding.Family{Name: "driftwatch_informer_synced", Help: "1 when every informer of the resource finished its initial list.",
		Labels: []string{"resource"}, Kind: finding.KindHealth})
	descEnabled = declareFor(collSelf, finding.Family{Name: "driftwatch_resource_enabled", Help: "1 when the resource's API is served and watched.",
		Labels: []string{"resource", "version"}, Kind: finding.KindHealth})
	descDegraded = declareFor(collSelf, finding.Family{Name: "driftwatch_resource_degraded", Help: "1 when access to a watched resource was lost (403/401): its detectors are paused.",
		Labels: []string{"resource"}, Kind: finding.KindHealth})
	descEvents = declareFor(collSelf, finding.Family{Name: "driftwatch_informer_events_total", Help: "Informer events handled.",
		Labels: []string{"resource", "type"}, Kind: finding.KindHealth, Type: finding.Counter})
	descObjects = declareFor(collSelf, finding.Family{Name: "driftwatch_model_objects", Help: "Records held in the value-free model.",
		Labels: []string{"resource"}, Kind: finding.KindHealth})
	descHistory = declareFor(collSelf, finding.Family{Name: "driftwatch_history_secrets", Help: "Secrets with observed-change history.",
		Kind: finding.KindHealth})
	descDecode = declareFor(collSelf, finding.Family{Name: "driftwatch_decode_errors_total", Help: "Object versions with a part that could not be decoded (too_large: over a documented limit; malformed). The rest of the object is kept.",
		Labels: []string{"resource", "part", "reason"}, Kind: finding.KindHealth, Type: finding.Counter})
	descWireFallback = declareFor(collSelf, finding.Family{Name: "driftwatch_wire_fallbacks_total", Help: "List responses and watch events the wire decoder (Secrets, Pods: protobuf) or the JSON reader (ExternalSecrets) left to client-go's typed or unstructured decoder (content_type: not protobuf; kind: another kind or version; decode: a message it does not read). The objects are decoded all the same, at that path's cost.",
		Labels: []string{"resource", "reason"}, Kind: finding.KindHealth, Type: finding.Counter})
)

// Describe implements prometheus.Collector.
func (s *Self) Describe(ch chan<- *prometheus.Desc) { describe(collSelf, ch) }

// Collect implements prometheus.Collector.
func (s *Self) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, s.build.Version, s.build.Revision, runtime.Version())
	for _, st := range s.health.States() {
		r := string(st.Resource)
		ch <- prometheus.MustNewConstMetric(descSynced, prometheus.GaugeValue, b2f(st.Enabled && st.Synced), r)
		ch <- prometheus.MustNewConstMetric(descEnabled, prometheus.GaugeValue, b2f(st.Enabled), r, st.Version)
		ch <- prometheus.MustNewConstMetric(descDegraded, prometheus.GaugeValue, b2f(st.Degraded), r)
	}
	if s.events != nil {
		counts := s.events.EventCounts()
		keys := make([][2]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
		for _, k := range keys {
			ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(counts[k]), k[0], k[1])
		}
	}
	if s.decode != nil {
		for k, n := range s.decode.DecodeErrors() {
			ch <- prometheus.MustNewConstMetric(descDecode, prometheus.CounterValue, float64(n), k[0], k[1], k[2])
		}
	}
	if w, ok := s.decode.(WireFallbackSource); ok {
		for k, n := range w.WireFallbacks() {
			ch <- prometheus.MustNewConstMetric(descWireFallback, prometheus.CounterValue, float64(n), k[0], k[1])
		}
	}
	s.store.Read(func(v model.View) {
		for r, n := range v.Counts() {
			ch <- prometheus.MustNewConstMetric(descObjects, prometheus.GaugeValue, float64(n), string(r))
		}
		ch <- prometheus.MustNewConstMetric(descHistory, prometheus.GaugeValue, float64(v.History().Len()))
	})
}
