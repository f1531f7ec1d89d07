package agent_test

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkFindingsHeap measures what the findings collector keeps between
// scrapes on the scrape benchmark's cluster (buildBenchCluster: at scale 1,
// 4,000 Secrets with data in last-applied and 5,000 ExternalSecrets with
// creationPolicy Owner over existing Secrets are findings): the live heap after
// a forced GC once the agent synced, against after two scrapes (scraped: the
// per-namespace results, their encoded text and typed findings, and the last
// evaluation) and after the findings page's read of that evaluation (read).
//
//	DRIFTWATCH_BENCH_SCALE=1 go test -run '^$' -bench FindingsHeap -benchtime 1x ./internal/agent/
func BenchmarkFindingsHeap(b *testing.B) {
	c := buildBenchCluster(benchScale(b))
	for i := 0; i < b.N; i++ {
		a, _, stop := startBenchAgent(b, c, false)
		h := a.Handler()
		live := func() uint64 {
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		before := live()
		scrape(b, h, false)
		scrape(b, h, false)
		afterScrapes := live()
		ev := a.Findings.Latest(time.Hour) // what the page and /api/v1/findings read
		afterRead := live()
		n := len(ev.Findings)
		b.ReportMetric(float64(n), "findings")
		b.ReportMetric(float64(int64(afterScrapes)-int64(before))/(1<<20), "scraped_MiB")
		b.ReportMetric(float64(int64(afterRead)-int64(before))/(1<<20), "read_MiB")
		if n > 0 {
			b.ReportMetric(float64(int64(afterScrapes)-int64(before))/float64(n), "scraped_B/finding")
		}
		runtime.KeepAlive(a)
		runtime.KeepAlive(ev)
		stop()
	}
}
