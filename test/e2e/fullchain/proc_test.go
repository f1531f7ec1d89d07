package fullchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a child process of this test (Prometheus, Alertmanager): its own
// process group (signals reach any grandchildren), SIGKILL if the test binary
// dies, stdout+stderr to a log file, stopped when the test ends and its log
// printed if the test failed.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// startProc starts path with args; the log goes to dir/name.log.
func startProc(t *testing.T, dir, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "==== %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		fmt.Fprintf(logf, "==== %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), p.err)
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t, 15*time.Second)
		if t.Failed() {
			t.Logf("----- %s log (%s), last 80 lines -----\n%s", name, p.logPath, tail(p.logPath, 80))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, SIGKILL after grace, waits until
// the process is reaped and checks that nothing of its group is left.
func (p *proc) stop(t *testing.T, grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	// Signal 0 to the group: ESRCH once every member is gone.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: process group %d still has members after stop (kill -0: %v)", p.name, pgid, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHTTP polls url until it answers 200, failing early if the process exits.
func (p *proc) waitHTTP(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if p.exited() {
			t.Fatalf("%s exited (%v); log:\n%s", p.name, p.err, tail(p.logPath, 60))
		}
		code, body, err := httpGet(url)
		if err == nil && code == http.StatusOK {
			return
		}
		last = fmt.Sprintf("%d %s %v", code, strings.TrimSpace(body), err)
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not 200 within %s (last: %s); log:\n%s", p.name, url, timeout, last, tail(p.logPath, 60))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

func httpGet(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// freePorts asks the kernel for n distinct free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
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
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
