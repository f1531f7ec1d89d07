package cluster

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The teardown check finds a live child by PID, by process group and by a
// marker in its command line, and finds nothing once the child is stopped.
func TestLeftoverProcessesSeesAndForgetsAChild(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	// sh runs sleep as a grandchild in the same process group.
	p := &process{name: "sh", path: "/bin/sh", args: []string{"-c", sleep + " 300; : " + dir}, logPath: filepath.Join(dir, "log")}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(time.Second) })
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = leftoverProcesses("", p.allPIDs())
		if len(left) >= 2 {
			break
		}
	}
	if len(left) < 2 || !strings.Contains(strings.Join(left, "\n"), "process group") {
		t.Fatalf("want the shell and its sleep (by process group), got %q", left)
	}
	if got := leftoverProcesses(dir, nil); len(got) == 0 {
		t.Errorf("marker %s not found in any command line", dir)
	}
	p.stop(5 * time.Second)
	if got := leftoverProcesses(dir, p.allPIDs()); len(got) != 0 {
		t.Errorf("after stop: %q", got)
	}
}

func TestParseMetricsFlattensFamilies(t *testing.T) {
	in := `# TYPE a_total counter
a_total{x="1"} 3
# TYPE g gauge
g 1.5
# TYPE h histogram
h_bucket{le="1"} 2
h_bucket{le="+Inf"} 3
h_sum 4
h_count 3
`
	s, err := ParseMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := Find(s, "a_total", map[string]string{"x": "1"}); len(got) != 1 || got[0].Value != 3 {
		t.Errorf("a_total: %v", got)
	}
	if got := Find(s, "g", nil); len(got) != 1 || got[0].Value != 1.5 {
		t.Errorf("g: %v", got)
	}
	if got := Find(s, "h_bucket", map[string]string{"le": "+Inf"}); len(got) != 1 || got[0].Value != 3 {
		t.Errorf("h_bucket: %v", got)
	}
	if got := Find(s, "h_count", nil); len(got) != 1 || got[0].Value != 3 {
		t.Errorf("h_count: %v", got)
	}
	if got := Find(s, "a_total", map[string]string{"x": "2"}); len(got) != 0 {
		t.Errorf("label filter: %v", got)
	}
}
