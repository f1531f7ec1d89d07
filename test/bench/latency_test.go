package main

import (
	"strings"
	"testing"
	"time"
)

// The latency report's medians: five repetitions, one of them with a stall
// in the bare row. The pooled p99 follows the stall; the median of the
// repetitions' p99 ratios and the side-by-side median rows do not.
func TestLatencyReportMedians(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	lr := latencyResult{reps: 5, rates: []int{200}, probes: 3}
	for rep := 1; rep <= 5; rep++ {
		bare := ms(2, 3, 10)
		if rep == 3 {
			bare = ms(2, 3, 200) // the stall
		}
		lr.runs = append(lr.runs,
			latRun{row: "bare", rep: rep, rate: 200, achieved: 200, pr: probeResult{latencies: bare}},
			latRun{row: "bare+scrape", rep: rep, rate: 200, achieved: 200, pr: probeResult{latencies: ms(5, 6, 20), scrapes: ms(1)}},
			latRun{row: "driftwatch", rep: rep, rate: 200, achieved: 200, pr: probeResult{latencies: ms(20, 30, 40), scrapes: ms(10)}})
	}
	report := lr.render()
	for _, want := range []string{
		"| 0.20 | 0.20–4.00 (median 4.00) |", // pooled 40/200; the repetitions' ratios 4 ×4 and 0.2
		"| 2.00 | 2.00–2.00 (median 2.00) |", // to bare+scrape
		"median of the repetitions' p99 ratios: 4.00 to bare, 2.00 to bare+scrape",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	side := renderSideBySide(config{}, nil, nil, &lr)
	for _, want := range []string{
		"| median of the 5 repetitions' p99 ms at 200 updates/s (event delivery / event→metric) | 10.0 | 40.0 | 4.00× |",
		"| median of the 5 repetitions' p99 ms at 200 updates/s (event→series in a scrape on both sides) | 20.0 | 40.0 | 2.00× |",
	} {
		if !strings.Contains(side, want) {
			t.Errorf("the side-by-side table lacks %q:\n%s", want, side)
		}
	}
}
