package agent

import (
	"bufio"
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
)

// textContentType is the Prometheus text exposition format, version 0.0.4, which
// every Prometheus version scrapes.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// metricsHandler serves /metrics: the agent's own collectors (Go runtime,
// process, driftwatch_* self metrics) encoded by client_golang, then the findings
// from Findings.WriteText, which copies the already encoded text of namespaces
// that did not change since the previous scrape instead of rebuilding and
// re-encoding every series (the registry's path costs about half of a scrape at
// 20k Secrets). A collector error is logged and the rest is served, as
// promhttp's ContinueOnError does. gzip when the scraper accepts it (Prometheus
// does), at BestSpeed: the text compresses about 30× anyway.
func (a *Agent) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.ahead != nil {
			a.ahead.seen(r.RemoteAddr, time.Now())
		}
		log := a.log
		w.Header().Set("Content-Type", textContentType)
		var out *bufio.Writer
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			gz := gzipPool.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() {
				_ = gz.Close()
				gzipPool.Put(gz)
			}()
			out = bufio.NewWriterSize(gz, 64<<10)
		} else {
			out = bufio.NewWriterSize(w, 64<<10)
		}
		defer out.Flush()
		mfs, err := a.others.Gather()
		if err != nil {
			log.Warn("gathering self metrics", "err", err)
		}
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(out, mf); err != nil {
				log.Warn("encoding self metrics", "err", err)
				return
			}
		}
		if err := a.Findings.WriteText(out); err != nil {
			log.Warn("encoding findings", "err", err)
		}
	})
}

func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
