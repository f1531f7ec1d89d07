package collectors

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// The direct encoder writes every declared family's series byte for byte as
// client_golang's (the const metric, its dto message, expfmt's text), over
// label values that need escaping or are not ASCII and values expfmt writes
// specially.
func TestTextFormMatchesExpfmt(t *testing.T) {
	values := []float64{0, 1, -1, 2, 0.5, 1e-9, 123456789, 1e21, 1.7976931348623157e308, -3.25,
		math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1700000000.123}
	labelValues := []string{"", "app", `a"b`, `back\slash`, "line\nbreak", "ünïcödé", "x=y,z", `\"` + "\n", "}{", "sp ace"}
	r := rand.New(rand.NewPCG(3, 5))
	if len(declared) < 50 {
		t.Fatalf("only %d families declared", len(declared))
	}
	for _, dc := range declared {
		f := &Findings{}
		var ss []sample
		for i := 0; i < 12; i++ {
			labels := make([]string, len(dc.fam.Labels))
			for j := range labels {
				labels[j] = labelValues[r.IntN(len(labelValues))]
			}
			ss = append(ss, newSample(dc.desc, dc.fam, values[r.IntN(len(values))], labels))
		}
		got, err := f.encode(ss)
		if err != nil {
			t.Fatal(err)
		}
		typ := dto.MetricType_GAUGE
		if dc.fam.Type == finding.Counter {
			typ = dto.MetricType_COUNTER
		}
		fam := &dto.MetricFamily{Name: &dc.fam.Name, Help: &dc.fam.Help, Type: &typ}
		for _, s := range ss {
			pb := &dto.Metric{}
			if err := s.metric().Write(pb); err != nil {
				t.Fatal(err)
			}
			fam.Metric = append(fam.Metric, pb)
		}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, fam); err != nil {
			t.Fatal(err)
		}
		if g := string(textOf[dc.desc].header) + string(got[dc.desc]); g != want.String() {
			t.Fatalf("%s:\n got %q\nwant %q", dc.fam.Name, g, want.String())
		}
		// The same series with their lines' prefixes memoized (lineMemo).
		m := newLineMemo()
		m.begin()
		metas := make([]model.ObjectMeta, len(ss))
		memo := make([]sample, len(ss))
		for i, s := range ss {
			memo[i] = m.sample(&metas[i], s.d, dc.fam, s.v, s.labels)
		}
		gotMemo, err := f.encode(memo)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := string(gotMemo[dc.desc]), string(got[dc.desc]); g != w {
			t.Fatalf("%s with memoized prefixes:\n got %q\nwant %q", dc.fam.Name, g, w)
		}
	}
}

// lineMemo reuses a line's prefix only for the same label values, and keeps
// only what the last evaluation used.
func TestLineMemo(t *testing.T) {
	fam := familyOf[descSyncAge]
	m := newLineMemo()
	a, b := &model.ObjectMeta{}, &model.ObjectMeta{}
	line := func(s sample) string { return string(textOf[descSyncAge].appendLine(nil, s)) }
	m.begin()
	if got := line(m.sample(a, descSyncAge, fam, 3, []string{"ns", "es1"})); got != `driftwatch_externalsecret_sync_age_seconds{externalsecret="es1",namespace="ns"} 3`+"\n" {
		t.Fatalf("first line %q", got)
	}
	m.sample(b, descSyncAge, fam, 4, []string{"ns", "es2"})
	m.end()
	m.begin()
	// Same key, other labels (a record reused for another object): rebuilt.
	if got := line(m.sample(a, descSyncAge, fam, 5, []string{"ns", `we"ird`})); got != `driftwatch_externalsecret_sync_age_seconds{externalsecret="we\"ird",namespace="ns"} 5`+"\n" {
		t.Fatalf("line after the labels changed %q", got)
	}
	m.end()
	if len(m.m) != 1 {
		t.Fatalf("%d entries after an evaluation that used one", len(m.m))
	}
	if _, ok := m.m[lineKey{b, descSyncAge}]; ok {
		t.Fatal("the entry the last evaluation did not use was kept")
	}
}

// The memo's order: series emitted in the last evaluation's order are found
// in it; one added, dropped or moved costs a lookup, never a wrong line, and
// every entry reused keeps its prefix.
func TestLineMemoOrder(t *testing.T) {
	fam := familyOf[descSyncAge]
	m := newLineMemo()
	metas := make([]*model.ObjectMeta, 12)
	for i := range metas {
		metas[i] = &model.ObjectMeta{}
	}
	name := func(i int) string { return fmt.Sprintf("es%02d", i) }
	want := func(i int, v float64) string {
		return fmt.Sprintf(`driftwatch_externalsecret_sync_age_seconds{externalsecret="%s",namespace="ns"} %g`, name(i), v) + "\n"
	}
	first := map[int]*lineEntry{}
	round := func(order []int, v float64, hashed int) {
		t.Helper()
		m.begin()
		for _, i := range order {
			s := m.sample(metas[i], descSyncAge, fam, v, []string{"ns", name(i)})
			if got := string(textOf[descSyncAge].appendLine(nil, s)); got != want(i, v) {
				t.Fatalf("order %v: meta %d: line %q, want %q", order, i, got, want(i, v))
			}
			if e := first[i]; e == nil {
				first[i] = s.line
			} else if s.line != e {
				t.Errorf("order %v: meta %d: its entry was rebuilt", order, i)
			}
		}
		if m.hashed != hashed {
			t.Errorf("order %v: %d lookups in the map, want %d", order, m.hashed, hashed)
		}
		m.end()
		if len(m.m) != len(order) || len(m.prev) != len(order) {
			t.Fatalf("order %v: %d entries, %d in order", order, len(m.m), len(m.prev))
		}
	}
	round([]int{0, 1, 2, 3, 4, 5, 6, 7}, 1, 8)
	round([]int{0, 1, 2, 3, 4, 5, 6, 7}, 2, 0)
	// 8 and 9 are new; 4 is found in the map (3 went), and the rest in order.
	round([]int{0, 8, 1, 2, 4, 5, 6, 7, 9}, 3, 3)
	round([]int{9, 7, 6, 5, 4, 2, 1, 8, 0}, 4, 9) // reversed: every one hashed
	round([]int{10, 0, 8, 11}, 5, 4)
}

// A label value client_golang refuses fails the detector that emits it, at
// the emit (run recovers it), with client_golang's error.
func TestNewSampleRefusesWhatClientGolangRefuses(t *testing.T) {
	for _, labels := range [][]string{{"ns", "es"}, {"ns", "es\xff", "r"}} {
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(fmt.Sprint(p), "label") {
					t.Errorf("%q: panic %v, want client_golang's label error", labels, p)
				}
			}()
			newSample(descNotReady, familyOf[descNotReady], 1, labels)
		}()
	}
	if s := newSample(descNotReady, familyOf[descNotReady], 1, []string{"ns", "es", "r"}); s.v != 1 || len(s.labels) != 3 {
		t.Fatalf("valid sample: %+v", s)
	}
}
