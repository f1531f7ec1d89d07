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
