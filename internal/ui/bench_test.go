package ui_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
	"github.com/driftwatch/driftwatch/internal/ui"
)

// benchModel seeds n Secrets, each written by an ExternalSecret from one of
// ten stores and read by a Deployment's two pods, and one finding per Secret
// (missing keys, absent, ready-but-short, flapping, stale pods in turn), so
// the page draws n delivery paths.
func benchModel(n int) (*model.Store, []finding.Finding) {
	st := model.NewStore(nil)
	now := time.Now()
	fam := func(name string) *finding.Family {
		f, ok := finding.Lookup(name)
		if !ok {
			panic(name)
		}
		return f
	}
	var fs []finding.Finding
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("team-%02d", i%40)
		name := fmt.Sprintf("app-%04d-config", i)
		st.UpsertSecret(mt.WithManagers(mt.Secret(ns, name, "DB_PASSWORD", "API_KEY"), mt.Write("external-secrets", now)), now)
		st.UpsertExternalSecret(mt.BareES(ns, name, mt.ESStore("SecretStore", fmt.Sprintf("vault-%d", i%10)),
			mt.ESData("API_KEY", "DB_PASSWORD", "STRIPE_KEY"), mt.ESCreation("Owner"), mt.ESReady("True", "SecretSynced")), time.Time{})
		st.UpsertStore(mt.SecretStore(ns, fmt.Sprintf("vault-%d", i%10), mt.StoreProvider("vault")))
		for p := 0; p < 2; p++ {
			st.UpsertPod(mt.WithWorkload(mt.Pod(ns, fmt.Sprintf("app-%04d-%d", i, p), mt.Env(name, "DB_PASSWORD"), mt.OptEnv(name, "STRIPE_KEY")),
				"Deployment", fmt.Sprintf("app-%04d", i)))
		}
		cons := []finding.Consumer{{Kind: "Deployment", Name: fmt.Sprintf("app-%04d", i), Pods: 2}}
		obj := finding.Object{Kind: "Secret", Namespace: ns, Name: name}
		var f finding.Finding
		switch i % 5 {
		case 0, 1:
			f = finding.Finding{Family: fam("driftwatch_secret_missing_key"), Detector: "missing_keys", Severity: finding.SevCritical,
				Labels:   map[string]string{"namespace": ns, "secret": name, "key": "STRIPE_KEY", "source": "externalsecret", "optional": "false"},
				Evidence: "ExternalSecret " + name + " (writes it) expects key STRIPE_KEY; the Secret has 2 key(s): API_KEY, DB_PASSWORD"}
		case 2:
			f = finding.Finding{Family: fam("driftwatch_externalsecret_ready_but_short"), Detector: "ready_but_short", Severity: finding.SevCritical,
				Labels:   map[string]string{"namespace": ns, "externalsecret": name, "secret": name, "reason": "missing_keys"},
				Evidence: "Ready=True SecretSynced; the Secret has 2 of the 3 keys the ExternalSecret renders; missing: STRIPE_KEY"}
			obj.Kind = "ExternalSecret"
		case 3:
			f = finding.Finding{Family: fam("driftwatch_secret_flapping"), Detector: "flips", Severity: finding.SevCritical,
				Labels:   map[string]string{"namespace": ns, "secret": name, "writers": "external-secrets,kubectl-client-side-apply"},
				Evidence: "3 return(s) to an earlier value within the flip window"}
		case 4:
			f = finding.Finding{Family: fam("driftwatch_workload_stale_pods"), Detector: "stale_pods", Severity: finding.SevWarning,
				Labels:   map[string]string{"namespace": ns, "workload_kind": "Deployment", "workload": fmt.Sprintf("app-%04d", i), "secret": name, "change_source": "external-secrets"},
				Evidence: "2 pod(s) started before the Secret's data changed"}
		}
		f.Object, f.Consumers, f.Value = obj, cons, 1
		f.Class, f.Metric = f.Family.Class, f.Family.Name
		fs = append(fs, f)
	}
	finding.Sort(fs)
	return st, fs
}

// BenchmarkRenderPage1000 renders the findings page for 1,000 findings: the
// page data (grouping, commands, 1,000 delivery paths read from the model,
// their SVGs) and the HTML. A number, never an assertion; docs/performance.md
// states it.
func BenchmarkRenderPage1000(b *testing.B) {
	st, fs := benchModel(1000)
	s := ui.New(st, staticFindings(fs), ready{}, ui.Options{Now: func() time.Time { return time.Unix(0, 0) }})
	var size int
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		d := s.Page(fs, "")
		cw := &countWriter{}
		if err := ui.RenderPage(cw, d); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	// CPU time per render as well as wall time: on a shared machine the
	// wall time includes waiting for a core.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(size), "page-bytes")
}

// BenchmarkAPINamespaceFilter serves /api/v1/findings for 1,000 findings
// filtered by the largest list a request may carry (ui.MaxNamespaceFilter
// names, the last one matching): a set lookup per finding, not a scan of the
// list; and a request naming 100,000 namespaces (600 KB, under net/http's
// 1 MB header limit), refused before any finding is read. A number, never an
// assertion.
func BenchmarkAPINamespaceFilter(b *testing.B) {
	st, fs := benchModel(1000)
	h := ui.New(st, staticFindings(fs), ready{}, ui.Options{}).Handler()
	for _, n := range []int{ui.MaxNamespaceFilter, 100_000} {
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("x-%d", i)
			}
			names[len(names)-1] = "team-07"
			want := http.StatusOK
			if n > ui.MaxNamespaceFilter {
				want = http.StatusBadRequest
			}
			req := httptest.NewRequest(http.MethodGet, "/api/v1/findings?namespace="+strings.Join(names, ","), nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

type ready struct{}

func (ready) Ready() bool                   { return true }
func (ready) States() []model.ResourceState { return nil }
