package collectors

import (
	"bytes"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/driftwatch/driftwatch/finding"
)

// WriteText writes every finding in the Prometheus text exposition format
// (version 0.0.4), the same series Collect sends. A namespace's results that a
// scrape reuses are also reused already encoded: the text of a per-namespace
// result is produced once, when it is first written, and copied afterwards, so
// a scrape encodes only what changed and the cluster-wide detectors' series. The
// agent's /metrics handler uses it (with the other collectors encoded by
// client_golang); tests hold it equal to the registry's output.
//
// The findings are gathered under the collector's lock and written after it is
// released (the encoded pieces are never modified once made), so a slow or
// stuck scraper does not hold up the other scrapes.
func (f *Findings) WriteText(w io.Writer) error {
	pieces, err := f.textPieces()
	if err != nil {
		return err
	}
	for _, b := range pieces {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// textPieces evaluates the detectors and returns the exposition in order: per
// family its HELP/TYPE header, then every chunk of its series.
func (f *Findings) textPieces() ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var order []*prometheus.Desc
	chunks := map[*prometheus.Desc][][]byte{}
	add := func(d *prometheus.Desc, b []byte) {
		if _, ok := chunks[d]; !ok {
			order = append(order, d)
		}
		chunks[d] = append(chunks[d], b)
	}
	var encErr error
	var found [][]stored
	silenced := 0
	f.byScrape++
	fresh := f.evaluate(false, func(r *nsResult) {
		found = append(found, r.findings)
		silenced += r.silenced
		if r.text == nil {
			t, err := f.encode(r.metrics)
			if err != nil {
				encErr = err
				return
			}
			r.text, r.order, r.metrics = t, descOrder(r.metrics), nil
		}
		for _, d := range r.order {
			add(d, r.text[d])
		}
	})
	if encErr != nil {
		return nil, encErr
	}
	f.remember(fresh.at, append(found, compact(fresh.found)), fresh.failed, silenced+fresh.silencedTotal)
	t, err := f.encode(fresh.buf)
	if err != nil {
		return nil, err
	}
	for _, d := range descOrder(fresh.buf) {
		add(d, t[d])
	}
	var out [][]byte
	for _, d := range order {
		out = append(out, f.headers[d])
		out = append(out, chunks[d]...)
	}
	return out, nil
}

// descOrder lists the descriptors of ms in order of first appearance.
func descOrder(ms []prometheus.Metric) []*prometheus.Desc {
	var out []*prometheus.Desc
	seen := map[*prometheus.Desc]bool{}
	for _, m := range ms {
		if d := m.Desc(); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// encode renders metrics per family, without the HELP/TYPE header, which it
// records in f.headers (the caller holds f.mu).
func (f *Findings) encode(ms []prometheus.Metric) (map[*prometheus.Desc][]byte, error) {
	fams := map[*prometheus.Desc]*dto.MetricFamily{}
	var order []*prometheus.Desc
	for _, m := range ms {
		d := m.Desc()
		fam := fams[d]
		if fam == nil {
			info, ok := familyOf[d]
			if !ok {
				return nil, fmt.Errorf("collectors: no family registered for %s", d)
			}
			typ := dto.MetricType_GAUGE
			if info.Type == finding.Counter {
				typ = dto.MetricType_COUNTER
			}
			fam = &dto.MetricFamily{Name: &info.Name, Help: &info.Help, Type: &typ}
			fams[d] = fam
			order = append(order, d)
		}
		pb := &dto.Metric{}
		if err := m.Write(pb); err != nil {
			return nil, fmt.Errorf("collectors: %s: %w", d, err)
		}
		fam.Metric = append(fam.Metric, pb)
	}
	out := make(map[*prometheus.Desc][]byte, len(order))
	var buf bytes.Buffer
	for _, d := range order {
		buf.Reset()
		if _, err := expfmt.MetricFamilyToText(&buf, fams[d]); err != nil {
			return nil, err
		}
		b := buf.Bytes()
		// The first two lines are "# HELP ..." and "# TYPE ...".
		cut := bytes.IndexByte(b, '\n')
		cut += 1 + bytes.IndexByte(b[cut+1:], '\n')
		if f.headers == nil {
			f.headers = map[*prometheus.Desc][]byte{}
		}
		if _, ok := f.headers[d]; !ok {
			f.headers[d] = bytes.Clone(b[:cut+1])
		}
		out[d] = bytes.Clone(b[cut+1:])
	}
	return out, nil
}
