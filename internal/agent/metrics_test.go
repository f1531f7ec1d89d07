package agent_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/demo"
)

func families(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("unparsable /metrics: %v", err)
	}
	return mfs
}

func canon(mf *dto.MetricFamily) string {
	lines := make([]string, 0, len(mf.Metric))
	for _, m := range mf.Metric {
		var sb strings.Builder
		for _, l := range m.GetLabel() {
			sb.WriteString(l.GetName() + "=" + l.GetValue() + ",")
		}
		if !strings.HasSuffix(mf.GetName(), "_seconds") && !strings.HasPrefix(mf.GetHelp(), "Seconds") { // ages move between two reads
			sb.WriteString(" " + strings.TrimSpace(m.String()))
		}
		lines = append(lines, sb.String())
	}
	sort.Strings(lines)
	return mf.GetType().String() + " " + mf.GetHelp() + "\n" + strings.Join(lines, "\n")
}

// /metrics writes the findings through Findings.WriteText, not the registry:
// it must serve exactly the driftwatch series the registry gathers, as valid
// text exposition, gzipped or not.
func TestMetricsHandlerMatchesRegistry(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := demo.New(log)
	a := agent.New(d.Clients(), agent.Config{Logger: log, DiscoveryInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(20 * time.Second); !a.Manager.Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("demo did not sync")
		}
	}
	// Collectors added after New (the Argo CD poller's) are served too.
	extra := prometheus.NewGauge(prometheus.GaugeOpts{Name: "driftwatch_test_extra", Help: "A collector registered after New."})
	if err := a.Register(extra); err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	for _, gz := range []bool{false, true} {
		for round := 0; round < 2; round++ { // the second scrape reuses the encoded text
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if gz {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
				t.Fatalf("status %d, content type %q", w.Code, w.Header().Get("Content-Type"))
			}
			body := w.Body.Bytes()
			if gz {
				if w.Header().Get("Content-Encoding") != "gzip" {
					t.Fatal("gzip accepted but not used")
				}
				r, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(r); err != nil {
					t.Fatal(err)
				}
			}
			served := families(t, string(body))
			if _, ok := served["driftwatch_test_extra"]; !ok {
				t.Fatal("a collector added with Register is not served")
			}
			gathered, err := a.Registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, mf := range gathered {
				name := mf.GetName()
				if !strings.HasPrefix(name, "driftwatch_") || name == "driftwatch_detector_duration_seconds" ||
					name == "driftwatch_detector_namespace_evaluations_total" || name == "driftwatch_evaluations_total" {
					continue
				}
				n++
				got, ok := served[name]
				if !ok {
					t.Fatalf("gzip=%v: /metrics lacks %s", gz, name)
				}
				if canon(got) != canon(mf) {
					t.Fatalf("gzip=%v round %d: %s differs\nserved:\n%s\nregistry:\n%s", gz, round, name, canon(got), canon(mf))
				}
			}
			for name := range served {
				if strings.HasPrefix(name, "driftwatch_") {
					n--
				}
			}
			if n != -3 { // served also has the duration and the two evaluation counters
				t.Fatalf("gzip=%v: /metrics has %d driftwatch families the registry lacks", gz, -3-n)
			}
		}
	}
}
