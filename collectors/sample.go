package collectors

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// sample is one series a detector emitted: its family's descriptor, value and
// label values in the family's label order. Collect turns it into a
// client_golang const metric; WriteText appends its line of the text
// exposition directly (textForm), without the const metric and the protobuf
// message client_golang's encoder goes through: at every scrape the
// cluster-wide detectors' series are encoded again (their values are times),
// one per ExternalSecret for sync_age, and building a const metric, a dto
// message and its text per series was a third of a scrape's CPU.
type sample struct {
	d      *prometheus.Desc
	v      float64
	labels []string
	// line, when set, holds the line up to the value: the name, the labels
	// and the space (lineMemo).
	line *lineEntry
}

// newSample checks what client_golang's MustNewConstMetric checks (the number
// of label values and their UTF-8 validity) and panics with its error, so a
// bad label value fails the detector that emitted it (run recovers it) as
// before, not the encoding after the lock.
func newSample(d *prometheus.Desc, fam *finding.Family, v float64, labels []string) sample {
	ok := len(labels) == len(fam.Labels)
	for _, l := range labels {
		ok = ok && utf8.ValidString(l)
	}
	if !ok {
		prometheus.MustNewConstMetric(d, valueType(fam), v, labels...)
		panic(fmt.Sprintf("collectors: %s: bad label values", fam.Name)) // not reached: the line above panics
	}
	return sample{d: d, v: v, labels: labels}
}

// metric is s as a client_golang const metric (Collect).
func (s sample) metric() prometheus.Metric {
	return prometheus.MustNewConstMetric(s.d, valueType(familyOf[s.d]), s.v, s.labels...)
}

// textForm is how a family's series are written in the text exposition
// format (version 0.0.4), byte for byte as client_golang's encoder
// (expfmt.MetricFamilyToText of the const metric) writes them:
// TestTextFormMatchesExpfmt holds the two equal.
type textForm struct {
	// header is the family's "# HELP" and "# TYPE" lines.
	header []byte
	// name is the metric name; order the label indices sorted by label name
	// (client_golang sorts a metric's label pairs by name), and open[i] what
	// precedes label order[i]'s value: `{name="` or `,name="`.
	name  string
	order []int
	open  []string
}

// textOf holds every declared family's textForm.
var textOf = map[*prometheus.Desc]*textForm{}

func newTextForm(fam *finding.Family, d *prometheus.Desc) *textForm {
	if !pmodel.LegacyValidation.IsValidMetricName(fam.Name) {
		// expfmt quotes such a name inside the braces; no family needs it.
		panic(fmt.Sprintf("collectors: family name %q is not a legacy metric name", fam.Name))
	}
	t := &textForm{name: fam.Name, order: make([]int, len(fam.Labels))}
	for i := range t.order {
		t.order[i] = i
	}
	slices.SortFunc(t.order, func(a, b int) int { return strings.Compare(fam.Labels[a], fam.Labels[b]) })
	for j, i := range t.order {
		sep := ","
		if j == 0 {
			sep = "{"
		}
		t.open = append(t.open, sep+fam.Labels[i]+`="`)
	}
	// The header as client_golang's encoder writes it: encode one series
	// and keep its first two lines.
	labels := make([]string, len(fam.Labels))
	var buf bytes.Buffer
	pb := &dto.Metric{}
	if err := prometheus.MustNewConstMetric(d, valueType(fam), 0, labels...).Write(pb); err != nil {
		panic(err)
	}
	typ := dto.MetricType_GAUGE
	if fam.Type == finding.Counter {
		typ = dto.MetricType_COUNTER
	}
	if _, err := expfmt.MetricFamilyToText(&buf, &dto.MetricFamily{Name: &fam.Name, Help: &fam.Help, Type: &typ, Metric: []*dto.Metric{pb}}); err != nil {
		panic(err)
	}
	b := buf.Bytes()
	cut := bytes.IndexByte(b, '\n')
	cut += 1 + bytes.IndexByte(b[cut+1:], '\n')
	t.header = bytes.Clone(b[:cut+1])
	return t
}

// quotedEscaper escapes a label value as expfmt does.
var quotedEscaper = strings.NewReplacer("\\", `\\`, "\n", `\n`, "\"", `\"`)

// appendLine appends s's line to b.
func (t *textForm) appendLine(b []byte, s sample) []byte {
	if s.line != nil {
		b = append(b, s.line.prefix...)
	} else {
		b = t.appendPrefix(b, s)
	}
	b = appendFloat(b, s.v)
	return append(b, '\n')
}

// appendPrefix appends s's line up to its value: the name, the labels and
// the space.
func (t *textForm) appendPrefix(b []byte, s sample) []byte {
	b = append(b, t.name...)
	for j, i := range t.order {
		b = append(b, t.open[j]...)
		v := s.labels[i]
		if strings.ContainsAny(v, "\\\n\"") {
			v = quotedEscaper.Replace(v)
		}
		b = append(b, v...)
		b = append(b, '"')
	}
	if len(t.order) > 0 {
		b = append(b, '}')
	}
	return append(b, ' ')
}

// lineSize is the length of s's line, or a little more (an escaped label
// value grows the buffer).
func (t *textForm) lineSize(s sample) int {
	n := 1 // the newline
	if s.line != nil {
		n += len(s.line.prefix)
	} else {
		n = len(t.name) + 3 // the space, the newline and "}"
		for j, i := range t.order {
			n += len(t.open[j]) + len(s.labels[i]) + 1
		}
	}
	if s.v == 0 || s.v == 1 {
		return n + 1
	}
	return n + 24 // the longest 'g' form of a float64
}

// appendFloat writes f as expfmt's writeFloat does.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// lineMemo keeps, per object and family, the text of a series' line up to its
// value, from one evaluation to the next: the cluster-wide detectors emit the
// same series at every scrape with a new value (the sync age of every
// ExternalSecret, a time), and checking, escaping and writing their labels
// again was most of their encoding. An entry is reused only for the same
// label values, so a stale key costs a rebuild, never a wrong line; the
// entries not used in an evaluation are dropped at its end, so the memo holds
// what one evaluation emits (and the records it is keyed by, until then).
//
// The detectors emit these series in the same order at every evaluation (the
// ExternalSecrets sorted), so the memo also keeps the order the last one asked
// for them in, and looks at the entry after the one found last before hashing:
// a lookup in a map of one entry per ExternalSecret missed the CPU's caches
// and was a sixth of an idle scrape.
type lineMemo struct {
	m     map[lineKey]*lineEntry
	round uint64
	used  int
	// prev is the entries in the order the last evaluation asked for them,
	// cur this evaluation's; next is where in prev the next lookup looks first.
	prev, cur []*lineEntry
	next      int
	// hashed counts this evaluation's lookups in m (TestLineMemoOrder).
	hashed int
}

type lineKey struct {
	meta *model.ObjectMeta
	d    *prometheus.Desc
}

type lineEntry struct {
	key    lineKey
	labels []string
	prefix []byte
	round  uint64
	// at is the entry's place in the order of the evaluation that last used it.
	at int
}

func newLineMemo() *lineMemo { return &lineMemo{m: map[lineKey]*lineEntry{}} }

func (m *lineMemo) begin() { m.round++; m.used, m.next, m.hashed = 0, 0, 0; m.cur = m.cur[:0] }

// end drops the entries the evaluation did not use.
func (m *lineMemo) end() {
	clear(m.prev) // no pointer to a dropped entry stays behind
	m.prev, m.cur = m.cur, m.prev[:0]
	if len(m.m) == m.used {
		return
	}
	for k, e := range m.m {
		if e.round != m.round {
			delete(m.m, k)
		}
	}
}

// sample is newSample with the line's prefix memoized under (meta, d).
func (m *lineMemo) sample(meta *model.ObjectMeta, d *prometheus.Desc, fam *finding.Family, v float64, labels []string) sample {
	k := lineKey{meta, d}
	var e *lineEntry
	if m.next < len(m.prev) && m.prev[m.next].key == k {
		e = m.prev[m.next]
		m.next++
	} else {
		m.hashed++
		if e = m.m[k]; e != nil && e.round == m.round-1 {
			m.next = e.at + 1 // back in step after a series came or went
		}
	}
	if e == nil || !slices.Equal(e.labels, labels) {
		s := newSample(d, fam, v, labels)
		e = &lineEntry{key: k, labels: labels, prefix: slices.Clip(textOf[d].appendPrefix(make([]byte, 0, textOf[d].lineSize(s)), s))}
		m.m[k] = e
	}
	if e.round != m.round {
		e.round = m.round
		e.at = len(m.cur)
		m.cur = append(m.cur, e)
		m.used++
	}
	return sample{d: d, v: v, labels: e.labels, line: e}
}
