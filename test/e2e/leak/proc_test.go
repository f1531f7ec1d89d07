package leak

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// proc is an agent process this package runs itself (not through
// cluster.StartAgent, which writes the agent's log into the test log when a
// test fails: a leak test must not print what it found).
type proc struct {
	URL            string
	stdout, stderr string // file paths
	cmd            *exec.Cmd
	done           chan error
	exitErr        error
	stopped        bool
}

func startProc(t *testing.T, bin, listen string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	p := &proc{URL: "http://" + listen, stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr"), done: make(chan error, 1)}
	so, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	se, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = so, se
	// Own process group; SIGKILL if the test binary dies first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		so.Close()
		se.Close()
		p.done <- err
	}()
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// stop sends SIGTERM, waits up to 30 s, then SIGKILLs the group; it returns
// the exit error.
func (p *proc) stop() error {
	if p.stopped {
		return p.exitErr
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case p.exitErr = <-p.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		err := <-p.done
		p.exitErr = fmt.Errorf("did not stop within 30 s of SIGTERM (killed: %v)", err)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	return p.exitErr
}

func (p *proc) exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// poll calls f every 200 ms until it holds; it fails the test (without
// printing any output of the process) on timeout or exit.
func (p *proc) poll(t *testing.T, what string, timeout time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if p.exited() {
			t.Fatalf("%s: the process exited", what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *proc) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	p.poll(t, "/readyz 200", timeout, func() bool {
		code, _, err := httpGet(p.URL + "/readyz")
		return err == nil && code == 200
	})
}

func (p *proc) waitSeries(t *testing.T, name string, labels map[string]string, timeout time.Duration) {
	t.Helper()
	p.poll(t, fmt.Sprintf("series %s%v", name, labels), timeout, func() bool {
		all, err := scrape.URL(p.URL + "/metrics")
		return err == nil && len(scrape.Find(all, name, labels)) > 0
	})
}

func (p *proc) output(t *testing.T) (stdout, stderr []byte) {
	t.Helper()
	so, err := os.ReadFile(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	se, err := os.ReadFile(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	return so, se
}
