package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/agent"
)

// BenchmarkScrapeUnderPageLoad measures GET /metrics over HTTP, one scrape
// every 100 ms, on the bench's fake cluster (DRIFTWATCH_BENCH_SCALE) while 50
// clients request the findings page, the JSON API and a Secret's page as fast
// as they are answered ("load"), and with no other client ("quiet"). It reports
// the scrape latency's p50, p99 and maximum, and what the 50 clients got
// (answers per second, the share refused with 429). docs/performance.md
// records the figures before and after the page stopped evaluating under the
// scrape's lock:
//
//	go test -run '^$' -bench ScrapeUnderPageLoad -benchtime 100x ./internal/agent/
func BenchmarkScrapeUnderPageLoad(b *testing.B) {
	c := buildBenchCluster(benchScale(b))
	a, _, stop := startBenchAgentWith(b, c, func(cfg *agent.Config) { cfg.Web.UI = true })
	defer stop()
	srv := httptest.NewUnstartedServer(a.Handler())
	agent.HardenServer(srv.Config)
	srv.Start()
	defer srv.Close()
	secret := c.secrets[0]
	paths := []string{"/", "/api/v1/findings", fmt.Sprintf("/secret/%s/%s", secret.Namespace, secret.Name)}
	for _, load := range []int{0, 50} {
		name := "quiet"
		if load > 0 {
			name = "load"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var ok, refused, other atomic.Int64
			for i := 0; i < load; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
					for j := i; ctx.Err() == nil; j++ {
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+paths[j%len(paths)], nil)
						resp, err := cl.Do(req)
						if err != nil {
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						switch resp.StatusCode {
						case http.StatusOK:
							ok.Add(1)
						case http.StatusTooManyRequests:
							refused.Add(1)
						default:
							other.Add(1)
						}
					}
				}()
			}
			time.Sleep(500 * time.Millisecond) // the clients are running
			cl := &http.Client{}
			lat := make([]time.Duration, 0, b.N)
			start := time.Now()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				resp, err := cl.Get(srv.URL + "/metrics")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET /metrics: %d", resp.StatusCode)
				}
				lat = append(lat, time.Since(t0))
				time.Sleep(100 * time.Millisecond)
			}
			b.StopTimer()
			elapsed := time.Since(start).Seconds()
			cancel()
			wg.Wait()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			if load > 0 {
				total := float64(ok.Load() + refused.Load() + other.Load())
				b.ReportMetric(float64(ok.Load())/elapsed, "page-ok/s")
				b.ReportMetric(float64(refused.Load())/max(total, 1), "refused-share")
				if other.Load() > 0 {
					b.Fatalf("%d page requests answered neither 200 nor 429", other.Load())
				}
			}
		})
	}
}
