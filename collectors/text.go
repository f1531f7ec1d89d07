package collectors

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
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
	pieces, scratch, err := f.textPieces()
	if scratch != nil {
		defer scratchPool.Put(scratch)
	}
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

// scratchPool holds the buffers the cluster-wide series of a scrape are
// encoded into (every scrape encodes them again: their values are times). A
// buffer goes back once WriteText has written it, so a scrape allocates
// nothing for them in the steady state.
var scratchPool sync.Pool

// textPieces evaluates the detectors and returns the exposition in order: per
// family its HELP/TYPE header, then every chunk of its series. scratch, when
// not nil, holds the cluster-wide series' text: the caller returns it to
// scratchPool once the pieces are written.
func (f *Findings) textPieces() (pieces [][]byte, scratch *[]byte, err error) {
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
	fresh := f.evaluate(false, false, func(r *nsResult) {
		found = append(found, r.findings)
		silenced += r.silenced
		if err := f.encodeResult(r); err != nil {
			encErr = err
			return
		}
		for _, d := range r.order {
			add(d, r.text[d])
		}
	})
	if encErr != nil {
		return nil, nil, encErr
	}
	f.remember(fresh.at, append(found, compact(fresh.found)), fresh.failed, silenced+fresh.silencedTotal)
	scratch, _ = scratchPool.Get().(*[]byte)
	if scratch == nil {
		scratch = new([]byte)
	}
	t, buf, err := f.encodeInto(fresh.buf, (*scratch)[:0])
	*scratch = buf
	if err != nil {
		return nil, scratch, err
	}
	for _, d := range descOrder(fresh.buf) {
		add(d, t[d])
	}
	for _, d := range order {
		pieces = append(pieces, textOf[d].header)
		pieces = append(pieces, chunks[d]...)
	}
	return pieces, scratch, nil
}

// encodeResult encodes a per-namespace result's metrics as text, once, and
// drops the metrics (nsResult.text).
func (f *Findings) encodeResult(r *nsResult) error {
	if r.text != nil {
		return nil
	}
	t, err := f.encode(r.metrics)
	if err != nil {
		return err
	}
	r.text, r.order, r.metrics = t, descOrder(r.metrics), nil
	return nil
}

// Prepare evaluates the per-namespace detectors over the namespaces that
// changed since they were last evaluated, and encodes their text, so that the
// next scrape reuses them and has only the cluster-wide detectors and what
// changed after Prepare left to do. The agent calls it shortly before it
// expects the next scrape (--evaluate-ahead): a scrape every 15-30 s under
// steady churn otherwise evaluates every namespace again while the scraper
// waits. What the scrape then exports is what it would have computed itself:
// a per-namespace result depends only on its namespace's generation and on
// the time through its recheck, both checked again by the scrape. It returns
// how many namespace evaluations it made.
func (f *Findings) Prepare() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noSplit {
		return 0
	}
	var before uint64
	for _, n := range f.evaluations {
		before += n
	}
	f.byAhead++
	f.evaluate(false, true, func(r *nsResult) {
		// An error (a family not registered) leaves r unencoded: the scrape
		// that reuses it meets the same error and reports it.
		_ = f.encodeResult(r)
	})
	var after uint64
	for _, n := range f.evaluations {
		after += n
	}
	return int(after - before)
}

// descOrder lists the descriptors of ss in order of first appearance.
func descOrder(ss []sample) []*prometheus.Desc {
	var out []*prometheus.Desc
	seen := map[*prometheus.Desc]bool{}
	for _, s := range ss {
		if !seen[s.d] {
			seen[s.d] = true
			out = append(out, s.d)
		}
	}
	return out
}

// encode renders samples per family, in the order they came, without the
// HELP/TYPE header (textForm.header). Every family's text is a slice of one
// buffer, sized by a first pass: the text of a namespace's result is cached,
// and a buffer grown by appends would hold up to twice its length.
func (f *Findings) encode(ss []sample) (map[*prometheus.Desc][]byte, error) {
	out, _, err := f.encodeInto(ss, nil)
	return out, err
}

// encodeInto is encode into buf's capacity when it suffices (a new buffer
// otherwise), and returns the buffer written.
func (f *Findings) encodeInto(ss []sample, buf []byte) (map[*prometheus.Desc][]byte, []byte, error) {
	order := descOrder(ss)
	ordinal := make(map[*prometheus.Desc]int, len(order))
	forms := make([]*textForm, len(order))
	for i, d := range order {
		t, ok := textOf[d]
		if !ok {
			return nil, buf, fmt.Errorf("collectors: no family registered for %s", d)
		}
		ordinal[d], forms[i] = i, t
	}
	// Counting sort of the samples by family, and the buffer's size.
	starts := make([]int, len(order)+1)
	size := 0
	for _, s := range ss {
		starts[ordinal[s.d]+1]++
		size += textOf[s.d].lineSize(s)
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	byFamily := make([]int32, len(ss))
	next := slices.Clone(starts[:len(order)])
	for i, s := range ss {
		k := ordinal[s.d]
		byFamily[next[k]] = int32(i)
		next[k]++
	}
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0]
	out := make(map[*prometheus.Desc][]byte, len(order))
	for k, d := range order {
		from := len(buf)
		for _, i := range byFamily[starts[k]:starts[k+1]] {
			buf = forms[k].appendLine(buf, ss[i])
		}
		out[d] = buf[from:len(buf):len(buf)]
	}
	return out, buf, nil
}
