// Package scrape parses what the e2e tests scrape: the Prometheus text
// exposition format, flattened into Series (histograms and summaries into
// their _bucket/_sum/_count series, as Prometheus stores them), with the
// helpers the tests match series with. It needs no cluster: pure packages
// such as test/e2e/pages import it alone.
package scrape

import (
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	// collectors declares the families finding.Lookup reads.
	_ "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/finding"
)

// Series is one sample of a scrape: a metric name, its labels and value.
// Histograms and summaries are flattened into their _bucket/_sum/_count (and
// quantile) series, as Prometheus stores them.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64
}

func (s Series) String() string {
	keys := slices.Sorted(maps.Keys(s.Labels))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, s.Labels[k]))
	}
	return fmt.Sprintf("%s{%s} %g", s.Name, strings.Join(parts, ","), s.Value)
}

// Matches reports whether the series has the name and every given label
// with the given value (other labels are ignored; a label given as "" must
// be absent or empty).
func (s Series) Matches(name string, labels map[string]string) bool {
	if s.Name != name {
		return false
	}
	for k, v := range labels {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

// Find returns the series matching name and labels (see Series.Matches).
func Find(series []Series, name string, labels map[string]string) []Series {
	var out []Series
	for _, s := range series {
		if s.Matches(name, labels) {
			out = append(out, s)
		}
	}
	return out
}

// Parse parses the Prometheus text exposition format.
func Parse(r io.Reader) ([]Series, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	var out []Series
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			base := map[string]string{}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			with := func(k, v string) map[string]string {
				l := maps.Clone(base)
				l[k] = v
				return l
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, Series{name, base, m.GetCounter().GetValue()})
			case dto.MetricType_GAUGE:
				out = append(out, Series{name, base, m.GetGauge().GetValue()})
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					out = append(out, Series{name, with("quantile", fmt.Sprint(q.GetQuantile())), q.GetValue()})
				}
				out = append(out, Series{name + "_sum", base, sm.GetSampleSum()}, Series{name + "_count", base, float64(sm.GetSampleCount())})
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out = append(out, Series{name + "_bucket", with("le", formatLe(b.GetUpperBound())), float64(b.GetCumulativeCount())})
				}
				out = append(out, Series{name + "_sum", base, h.GetSampleSum()}, Series{name + "_count", base, float64(h.GetSampleCount())})
			default:
				out = append(out, Series{name, base, m.GetUntyped().GetValue()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Format renders series one per line, indented, for a failure message
// ("  (none)" when empty).
func Format(s []Series) string {
	if len(s) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, x := range s {
		b.WriteString("  " + x.String() + "\n")
	}
	return b.String()
}

func formatLe(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return fmt.Sprint(f)
}

var scrapeClient = &http.Client{Timeout: 10 * time.Second}

// URL fetches a /metrics URL in the text format and parses it.
func URL(url string) ([]Series, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return Parse(resp.Body)
}

// IsFinding reports whether a scraped series is the current state of a
// finding about a namespace: its family's catalog declaration says so
// (finding.Family.StateOfFinding: finding gauges and the object series that
// exist only with a finding, such as a short Secret's readers), and it names a
// namespace. Object metrics (sync age, inventory, compare readiness), counters
// of past events and the agent's own health are not.
func IsFinding(s Series) bool {
	f, ok := finding.Lookup(s.Name)
	if !ok {
		return false
	}
	_, hasNS := s.Labels["namespace"]
	return hasNS && f.StateOfFinding()
}
