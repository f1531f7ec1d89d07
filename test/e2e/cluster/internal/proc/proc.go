// Package proc runs the processes of the e2e stack (the control plane, the
// node's daemons, the GitOps controllers, the agents, a test's helpers): each
// in its own process group with its log file, stoppable and startable again;
// it also waits for them to answer, finds free ports, and checks that none is
// left behind.
package proc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child of the stack. It runs in its own process group so the
// whole group can be signalled, appends its stdout and stderr to a log file,
// and can be stopped and started again with the same arguments.
type Process struct {
	// Name names it in messages; Path, Args and Env (added to this
	// process's environment) are what it runs; LogPath receives its stdout
	// and stderr (appended). Set them before Start; they are read-only after.
	Name    string
	Path    string
	Args    []string
	Env     []string
	LogPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	pids    []int // every PID this process ever had, for the teardown check
}

// Start starts the process (again, after it exited).
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("%s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano), p.Path, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), p.Env...)
	// Own process group (so SIGTERM/SIGKILL reach any grandchildren), and
	// SIGKILL if the test binary dies without running its teardown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	p.pids = append(p.pids, cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "==== %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), err)
		logf.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Exited reports whether the process was started and has exited since.
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false, nil
	}
	if isClosed(p.done) {
		return true, p.waitErr
	}
	return false, nil
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group. It returns once the process has been reaped.
func (p *Process) Stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	if !isClosed(done) {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
	}
	// Anything left in the group (there should be nothing) goes too, and is
	// waited for: a killed grandchild lingers until init reaps it, and a
	// teardown check right after must not see it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupGone(pgid, 5*time.Second)
}

// waitGroupGone polls until no process is left in process group pgid (kill(-pgid,
// 0) answers ESRCH) or the timeout passes.
func waitGroupGone(pgid int, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
			return
		}
	}
}

// Kill SIGKILLs the process group at once (a crash) and waits until the
// process has been reaped.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	waitGroupGone(cmd.Process.Pid, 5*time.Second)
}

// PID is the running process's ID (0 when not running).
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return 0
	}
	return p.cmd.Process.Pid
}

// AllPIDs lists every PID the process ever had, for the teardown check.
func (p *Process) AllPIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.pids...)
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// FreePorts asks the kernel for n distinct free TCP ports on 127.0.0.1.
func FreePorts(n int) ([]int, error) {
	// Hold all listeners until every port is chosen, so they are distinct.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// TailFile returns the last n lines of a file (or an error note).
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	b = bytes.TrimRight(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = append([][]byte{[]byte(fmt.Sprintf("... (%d earlier lines omitted)", len(lines)-n))}, lines[len(lines)-n:]...)
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Leftovers scans /proc (as `pgrep -f` does) for processes whose
// command line mentions marker, whose PID is one of pids, or whose process
// group is one of pids (our children are all group leaders). It ignores the
// calling process.
func Leftovers(marker string, pids []int) []string {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue // exited meanwhile
		}
		args := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		stat, _ := os.ReadFile(filepath.Join(dir, "stat"))
		state, pgid := parseStat(stat)
		if state == "Z" {
			// A zombie is reaped by its parent; ours are reaped by cmd.Wait,
			// so a zombie of ours would still be a leak, but one of another
			// parent is not.
			if !want[pid] {
				continue
			}
		}
		switch {
		case marker != "" && strings.Contains(args, marker):
			found = append(found, fmt.Sprintf("pid %d (%s): %s", pid, "command line mentions "+marker, args))
		case want[pid]:
			found = append(found, fmt.Sprintf("pid %d (one of ours): %s", pid, args))
		case want[pgid]:
			found = append(found, fmt.Sprintf("pid %d (in our process group %d): %s", pid, pgid, args))
		}
	}
	return found
}

// parseStat returns the state and process group from /proc/PID/stat.
func parseStat(stat []byte) (state string, pgid int) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return "", 0
	}
	pgid, _ = strconv.Atoi(f[2])
	return f[0], pgid
}
