package promstack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// StartPrometheus starts the real Prometheus alone with the given
// scrape_configs entries (YAML, each item starting with "- job_name:",
// indented by two spaces), evaluating every second. Tests that scrape in a
// way Start does not (TLS, basic auth) use it. Files the scrape config names
// (CA, password files) belong in Dir.
func StartPrometheus(t testing.TB, c *cluster.Cluster, dir, scrapeConfigs string) *Stack {
	t.Helper()
	promBin, err := tools.Tool("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{PromURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	if err := os.MkdirAll(filepath.Join(dir, "prom-data"), 0o755); err != nil {
		t.Fatal(err)
	}
	promCfg := filepath.Join(dir, "prometheus.yml")
	write(t, promCfg, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"+scrapeConfigs)
	s.started = time.Now()
	s.prom = c.StartProcess(t, "prometheus-scrape", promBin, nil,
		"--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]),
		"--log.level=debug",
	)
	s.prom.WaitHTTP(t, s.PromURL+"/-/ready", 2*time.Minute)
	return s
}

// Tail returns the last n lines of Prometheus's log.
func (s *Stack) Tail(n int) string { return s.prom.Tail(n) }
