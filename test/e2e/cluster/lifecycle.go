package cluster

// One stack per test package: Main and Get, the teardown and its check.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Stop tears the stack down: agents, the ESO controller, the
// controller-manager, kube-apiserver and etcd are stopped (SIGTERM to their
// process groups, SIGKILL after a grace period) and Dir is removed. If
// DRIFTWATCH_E2E_LOGS names a folder, the process logs are copied there
// first. Stop is idempotent.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	agents := append(append([]*proc.Process(nil), c.agents...), c.extra...)
	c.mu.Unlock()
	for _, a := range agents {
		a.Stop(5 * time.Second)
	}
	if c.node != nil {
		c.node.Stop()
	}
	for _, p := range append(c.flux.Processes(), c.argo.Processes()...) {
		if p != nil {
			p.Stop(15 * time.Second)
		}
	}
	c.flux.StopGitServer()
	for _, p := range []*proc.Process{c.eso, c.kcm, c.apiserver, c.etcd} {
		if p != nil {
			p.Stop(15 * time.Second)
		}
	}
	if keep := os.Getenv("DRIFTWATCH_E2E_LOGS"); keep != "" {
		dst := filepath.Join(keep, filepath.Base(c.Dir))
		if err := copyDir(c.LogDir, dst); err != nil {
			c.logf("copying logs to %s: %v", dst, err)
		} else {
			c.logf("process logs copied to %s", dst)
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		c.logf("removing %s: %v", c.Dir, err)
	}
}

// CheckTornDown verifies, after Stop, that Dir is gone and that no process
// of the stack remains: none of the PIDs it started, nothing in their process
// groups, and nothing whose command line mentions Dir (as `pgrep -f Dir`).
func (c *Cluster) CheckTornDown() error {
	var problems []string
	if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, fmt.Sprintf("temp dir %s still exists (stat: %v)", c.Dir, err))
	}
	if left := proc.Leftovers(c.Dir, c.allPIDs()); len(left) > 0 {
		problems = append(problems, "processes left behind:\n  "+strings.Join(left, "\n  "))
	}
	if c.node != nil {
		if left := c.node.Leftovers(); len(left) > 0 {
			problems = append(problems, "node left behind:\n  "+strings.Join(left, "\n  "))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("e2e teardown: %s", strings.Join(problems, "; "))
	}
	return nil
}

func (c *Cluster) allPIDs() []int {
	c.mu.Lock()
	procs := append(append([]*proc.Process{c.etcd, c.apiserver, c.kcm, c.eso}, c.agents...), c.extra...)
	procs = append(procs, c.parts()...)
	c.mu.Unlock()
	var pids []int
	for _, p := range procs {
		if p != nil {
			pids = append(pids, p.AllPIDs()...)
		}
	}
	return pids
}

// parts lists the processes of Argo CD, Flux and the node (those the stack
// runs).
func (c *Cluster) parts() []*proc.Process {
	return append(append(c.argo.Processes(), c.flux.Processes()...), c.node.Processes()...)
}

// PIDs returns the PIDs of the running stack processes by name (etcd,
// kube-apiserver, kube-controller-manager, external-secrets, Argo CD's, Flux's and the node's).
func (c *Cluster) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range append([]*proc.Process{c.etcd, c.apiserver, c.kcm, c.eso}, c.parts()...) {
		if p != nil {
			if pid := p.PID(); pid != 0 {
				out[p.Name] = pid
			}
		}
	}
	return out
}

// LogTails returns the last n lines of every stack process's log.
func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	for _, p := range append([]*proc.Process{c.etcd, c.apiserver, c.kcm, c.eso}, c.parts()...) {
		if p == nil {
			continue
		}
		if _, err := os.Stat(p.LogPath); err != nil {
			continue
		}
		fmt.Fprintf(&b, "----- last %d lines of %s -----\n%s\n", n, p.Name, proc.TailFile(p.LogPath, n))
	}
	return b.String()
}

// DumpLogs writes the last lines of every stack process's log to w.
func (c *Cluster) DumpLogs(w io.Writer) { fmt.Fprint(w, c.logTails(60)) }

var (
	current    *Cluster
	currentErr error
)

// Main starts one stack for the test package, runs its tests, tears the
// stack down, and checks that no process or temp dir of it remains (a
// leftover fails the run). Call it from TestMain: os.Exit(cluster.Main(m, opts)).
//
// With DRIFTWATCH_E2E=0 no stack starts and every test calling Get skips.
// If the tools are missing or the stack fails to start, every test calling
// Get fails with the reason.
func Main(m *testing.M, opts Options) int {
	if tools.E2EDisabled() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	c, err := Start(ctx, opts)
	cancel()
	if err != nil {
		currentErr = err
		fmt.Fprintf(os.Stderr, "e2e: the test stack did not start: %v\n", err)
		code := m.Run()
		if code == 0 {
			code = 1
		}
		return code
	}
	current = c

	// Tear down on SIGINT/SIGTERM too (children also get SIGKILL when this
	// process dies, through Pdeathsig).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if s, ok := <-sigs; ok {
			fmt.Fprintf(os.Stderr, "e2e: %v: tearing the test stack down\n", s)
			c.Stop()
			os.Exit(2)
		}
	}()

	code := m.Run()
	signal.Stop(sigs)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: tests failed; stack logs (set DRIFTWATCH_E2E_LOGS=DIR to keep them whole):\n")
		c.DumpLogs(os.Stderr)
	}
	c.Stop()
	if err := c.CheckTornDown(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// Get returns the package's stack started by Main. It skips the test when
// DRIFTWATCH_E2E=0 and fails it when the stack could not start.
func Get(t testing.TB) *Cluster {
	t.Helper()
	if tools.E2EDisabled() {
		t.Skip("DRIFTWATCH_E2E=0: skipping the e2e test (it needs the real kube-apiserver/etcd stack)")
	}
	if currentErr != nil {
		t.Fatalf("the e2e test stack did not start: %v", currentErr)
	}
	if current == nil {
		t.Fatal("cluster.Get: no stack; call cluster.Main from TestMain")
	}
	return current
}

func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
