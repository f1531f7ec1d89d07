package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The measured process and the readings of it: the same as test/bench's
// measure.go (package main there, so not importable from here).

type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startChild(bin string, args []string, logPath string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(c.done) }()
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL after grace.
func (c *child) stop(grace time.Duration) {
	if c.exited() {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

const clkTck = 100.0 // USER_HZ on Linux

// cpuSeconds is user+sys CPU of the child so far, from /proc/PID/stat.
func (c *child) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clkTck
}

// statusKB reads a "VmRSS:"-style line of /proc/PID/status in KiB.
func (c *child) statusKB(field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return n
		}
	}
	return 0
}

var httpc = &http.Client{Timeout: 15 * time.Minute} // a scrape after a GitOps change can take minutes at scale

func get(url string) (int, []byte, time.Duration, error) {
	t0 := time.Now()
	resp, err := httpc.Get(url)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, time.Since(t0), err
}

// metricValue finds a sample in a text exposition: name is the metric name
// with its labels as exposed ("m" or `m{l="v"}`).
func metricValue(body []byte, name string) (float64, bool) {
	for _, line := range bytes.Split(body, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(name+" ")); ok {
			v, err := strconv.ParseFloat(string(bytes.TrimSpace(rest)), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// series counts the samples of a family whose line contains every part.
func series(body []byte, family string, parts ...string) int {
	n := 0
	for _, line := range bytes.Split(body, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(family+"{")) && !bytes.HasPrefix(line, []byte(family+" ")) {
			continue
		}
		ok := true
		for _, p := range parts {
			if !bytes.Contains(line, []byte(p)) {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// familySeries counts the samples of every driftwatch_ family.
func familySeries(body []byte) map[string]int {
	out := map[string]int{}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("driftwatch_")) {
			continue
		}
		i := bytes.IndexAny(line, "{ ")
		if i > 0 {
			out[string(line[:i])]++
		}
	}
	return out
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
