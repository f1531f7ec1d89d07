package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// child is one measured process.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func startChild(name, bin string, args, env []string, logPath string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
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

var clkTck = 100.0 // USER_HZ on Linux

// cpuSeconds is user+sys CPU of the child so far, from /proc/PID/stat.
func (c *child) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	// fields after ")": state(3) ... utime is field 14, stime 15 (1-based over the whole line)
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clkTck
}

// statusKB reads a "VmHWM:"-style line of /proc/PID/status in KiB.
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

var httpc = &http.Client{Timeout: 30 * time.Second}

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

// metricValue finds an unlabelled sample in a text exposition.
func metricValue(body []byte, name string) (float64, bool) {
	for _, line := range bytes.Split(body, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(name+" ")); ok {
			v, err := strconv.ParseFloat(string(bytes.TrimSpace(rest)), 64)
			return v, err == nil
		}
	}
	return 0, false
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

// loader patches one key of the ordinary Secrets round-robin at a fixed rate.
type loader struct {
	cs      kubernetes.Interface
	secrets [][2]string
	rate    int
	workers int
	next    atomic.Int64
	sent    atomic.Int64
	failed  atomic.Int64
}

// run patches at l.rate per second until ctx ends and returns the writes done.
func (l *loader) run(ctx context.Context) {
	jobs := make(chan [2]string, l.rate)
	var wg sync.WaitGroup
	for w := 0; w < l.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for s := range jobs {
				v := base64.StdEncoding.EncodeToString(randBytes(r, 24))
				patch := []byte(`{"data":{"KEY_00":"` + v + `"}}`)
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := l.cs.CoreV1().Secrets(s[0]).Patch(cctx, s[1], types.MergePatchType, patch, metav1.PatchOptions{})
				cancel()
				if err != nil {
					l.failed.Add(1)
				} else {
					l.sent.Add(1)
				}
			}
		}()
	}
	// Dispatch in 10 ms slices to keep the rate steady.
	t := time.NewTicker(10 * time.Millisecond)
	start := time.Now()
	dispatched := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
			want := int(time.Since(start).Seconds() * float64(l.rate))
			for ; dispatched < want; dispatched++ {
				i := l.next.Add(1) - 1
				select {
				case jobs <- l.secrets[int(i)%len(l.secrets)]:
				default: // the apiserver is not keeping up: drop, the achieved rate says so
				}
			}
		}
	}
	t.Stop()
	close(jobs)
	wg.Wait()
}

// probeResult is what the latency phase measured.
type probeResult struct {
	latencies []time.Duration
	scrapes   []time.Duration
	writes    []time.Duration // round trip of each probe write (Update)
	timeouts  int
	// firstScrape is the scraper's first scrape, after a time without one
	// (the warm-up): it evaluates every namespace written to meanwhile. It is
	// reported apart, not among scrapes, and no probe is timed across it.
	firstScrape time.Duration
}

// probeLatency toggles PROBE on the probe Secret n times and measures, for each
// write, the time from the write's start (before its request is sent) to the
// end of the first /metrics scrape
// showing the consequence (the missing_key series appearing or disappearing).
// A scraper scrapes back to back meanwhile; its durations are the scrape times.
// The probes start after its first two scrapes: the first one follows a time
// without scrapes (the load's warm-up, the settle after the sync) and
// evaluates every namespace written to since, which at the size took
// about 0.4 s and made the first probe of every rate the p99 at 50 updates/s
// (stop 45) — a cold scrape, not the back-to-back scrapes the figure is
// defined with. Its duration is reported on its own (firstScrape).
func probeLatency(ctx context.Context, cs kubernetes.Interface, w *world, metricsURL string, n int, gap time.Duration) (probeResult, error) {
	var res probeResult
	var mu sync.Mutex
	type obs struct {
		at      time.Time
		present bool
	}
	latest := make(chan obs, 1)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The probe's series: driftwatch_secret_missing_key with these labels
	// (among others: optional, source), in whatever order the exposition has.
	present := func(body []byte) bool {
		for _, line := range bytes.Split(body, []byte("\n")) {
			if bytes.HasPrefix(line, []byte("driftwatch_secret_missing_key{")) && bytes.Contains(line, []byte(`key="PROBE"`)) &&
				bytes.Contains(line, []byte(`namespace="`+w.probeNS+`"`)) && bytes.Contains(line, []byte(`secret="`+w.probeName+`"`)) {
				return true
			}
		}
		return false
	}
	var wg sync.WaitGroup
	wg.Add(1)
	warm := make(chan struct{})
	go func() {
		defer wg.Done()
		for scraped := 0; sctx.Err() == nil; {
			code, body, d, err := get(metricsURL)
			if err != nil || code != 200 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			switch scraped++; scraped {
			case 1:
				res.firstScrape = d
			case 2:
				close(warm) // this scrape is a back-to-back one: timed, and the probes start
				fallthrough
			default:
				mu.Lock()
				res.scrapes = append(res.scrapes, d)
				mu.Unlock()
			}
			o := obs{at: time.Now(), present: present(body)}
			select {
			case <-latest:
			default:
			}
			latest <- o
		}
	}()
	select {
	case <-warm:
	case <-time.After(2 * time.Minute):
		cancel()
		wg.Wait()
		return res, fmt.Errorf("the scraper got no two scrapes in 2 min")
	case <-ctx.Done():
		cancel()
		wg.Wait()
		return res, ctx.Err()
	}
	secrets := cs.CoreV1().Secrets(w.probeNS)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		s, err := secrets.Get(ctx, w.probeName, metav1.GetOptions{})
		if err != nil {
			cancel()
			wg.Wait() // the scraper appends to res
			return res, err
		}
		_, had := s.Data["PROBE"]
		if had {
			delete(s.Data, "PROBE")
		} else {
			s.Data["PROBE"] = []byte("x")
		}
		t0 := time.Now()
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			cancel()
			wg.Wait()
			return res, err
		}
		wrote := time.Now()
		res.writes = append(res.writes, wrote.Sub(t0))
		wantPresent := had // key removed → series appears
		deadline := time.After(15 * time.Second)
	wait:
		for {
			select {
			case o := <-latest:
				if o.at.After(t0) && o.present == wantPresent {
					res.latencies = append(res.latencies, o.at.Sub(t0))
					break wait
				}
			case <-deadline:
				res.timeouts++
				break wait
			case <-ctx.Done():
				break wait
			}
		}
		time.Sleep(gap)
	}
	cancel()
	wg.Wait()
	// Leave the probe Secret healthy.
	if s, err := secrets.Get(context.Background(), w.probeName, metav1.GetOptions{}); err == nil {
		if _, ok := s.Data["PROBE"]; !ok {
			s.Data["PROBE"] = []byte("x")
			_, _ = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		}
	}
	return res, nil
}

// fetchProfile saves a pprof endpoint's answer to dir/name.
func fetchProfile(base, path, dir, name string) error {
	c := &http.Client{Timeout: 5 * time.Minute}
	resp, err := c.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
