package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/internal/model"
)

type fakeSource model.SourceHealth

func (f fakeSource) SourceHealth() model.SourceHealth { return model.SourceHealth(f) }

// Every desired-state poller exports the same series under its source label;
// up and the last success appear only once known.
func TestDesiredSourcesOneContract(t *testing.T) {
	c := NewDesiredSources()
	var tr model.SourceTracker
	t0 := time.Unix(1_800_000_000, 0)
	tr.Read(false, t0)
	tr.Read(true, t0.Add(time.Second))
	tr.Read(false, t0.Add(2*time.Second))
	c.Add("flux", &tr)
	c.Add("argocd", fakeSource{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP driftwatch_desired_source_last_success_timestamp_seconds When a read of what a desired-state source declares last succeeded (Unix seconds); absent until one did.
# TYPE driftwatch_desired_source_last_success_timestamp_seconds gauge
driftwatch_desired_source_last_success_timestamp_seconds{source="flux"} 1.800000001e+09
# HELP driftwatch_desired_source_reads_total Reads of what a desired-state source declares, by result (ok, error).
# TYPE driftwatch_desired_source_reads_total counter
driftwatch_desired_source_reads_total{result="error",source="argocd"} 0
driftwatch_desired_source_reads_total{result="error",source="flux"} 2
driftwatch_desired_source_reads_total{result="ok",source="argocd"} 0
driftwatch_desired_source_reads_total{result="ok",source="flux"} 1
# HELP driftwatch_desired_source_up 1 when the last read of what a desired-state source declares succeeded (source argocd: a managed-resources request; flux: an artifact download), 0 otherwise; absent until a read was tried.
# TYPE driftwatch_desired_source_up gauge
driftwatch_desired_source_up{source="flux"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
