package proc

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
	p := &Process{Name: "sh", Path: "/bin/sh", Args: []string{"-c", sleep + " 300; : " + dir}, LogPath: filepath.Join(dir, "log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second) })
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = Leftovers("", p.AllPIDs())
		if len(left) >= 2 {
			break
		}
	}
	if len(left) < 2 || !strings.Contains(strings.Join(left, "\n"), "process group") {
		t.Fatalf("want the shell and its sleep (by process group), got %q", left)
	}
	if got := Leftovers(dir, nil); len(got) == 0 {
		t.Errorf("marker %s not found in any command line", dir)
	}
	p.Stop(5 * time.Second)
	if got := Leftovers(dir, p.AllPIDs()); len(got) != 0 {
		t.Errorf("after stop: %q", got)
	}
}
