package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The bench re-executes itself as `bench baseline ...` for the baseline rows;
// under go test the executable is the test binary, so route that mode here.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "baseline" {
		os.Exit(runBaseline(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the bench at its tiny --smoke size on the real stack, so the
// benchmark program cannot rot unnoticed. It checks that every row and the
// latency and scrape figures are produced, never the numbers themselves (the
// full size is `make bench-e2e`, outside CI).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver")
	}
	var out bytes.Buffer
	if code := run([]string{"--smoke"}, &out); code != 0 {
		t.Fatalf("bench --smoke exited %d\n%s", code, out.String())
	}
	report := out.String()
	for _, row := range []string{"| baseline |", "| baseline+transform |", "| baseline JSON |", "| driftwatch |",
		"| driftwatch shard 0/3 |", "| driftwatch WatchListClient=false |", "Ratios driftwatch / baseline",
		"## Latency as a ratio (issue 35)", "| 20 |", "| 50 |", "## Side by side: bare informers / driftwatch",
		"| p99 latency ms at 50 updates/s", "### Through a scrape on both sides",
		"| p99 latency ms at 50 updates/s, event→series in a scrape"} {
		if !strings.Contains(report, row) {
			t.Errorf("the report lacks %q:\n%s", row, report)
		}
	}
	for _, line := range strings.Split(report, "\n") {
		if strings.HasPrefix(line, "| driftwatch |") && strings.Count(line, "–") > 0 {
			t.Errorf("the driftwatch row lacks a figure (latency, scrape or load):\n%s", line)
		}
		if strings.HasPrefix(line, "| p99 latency ms") && strings.Contains(line, "–") {
			t.Errorf("the side-by-side table lacks a latency figure:\n%s", line)
		}
	}
}
