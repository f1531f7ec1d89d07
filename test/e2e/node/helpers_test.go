package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/node"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// Images this package builds (buildah, offline) and imports into the node.
const (
	// workloadImage runs test/e2e/images/envnames as user 65532.
	workloadImage = "localhost/driftwatch-e2e/envnames:1"
	// agentRepo:agentTag is driftwatch's image, built from the repository's
	// Dockerfile.
	agentRepo = "localhost/driftwatch-e2e/driftwatch"
	agentTag  = "e2e"
)

var (
	imagesOnce sync.Once
	imagesErr  error
)

// imagesTimeout bounds building the images: about a minute warm, a few
// minutes with an empty Go build cache on an idle 2-core machine.
const imagesTimeout = 20 * time.Minute

// buildImages builds the workload image and driftwatch's own image (once per
// test binary) and logs what each cost.
func buildImages(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	imagesOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), imagesTimeout)
		defer cancel()
		n := c.Node()
		t0 := time.Now()
		bin, err := n.GoBinary(ctx, "./test/e2e/images/envnames")
		if err == nil {
			err = n.ScratchImage(ctx, workloadImage, "", []node.ImageFile{{Src: bin, Dst: "/envnames"}},
				[]string{"/envnames"}, "65532:65532", nil)
		}
		if err == nil {
			err = n.ImportImage(ctx, workloadImage)
		}
		if err != nil {
			imagesErr = fmt.Errorf("workload image: %w", err)
			return
		}
		t1 := time.Now()
		if err := n.BaseImages(ctx); err != nil {
			imagesErr = fmt.Errorf("base images: %w", err)
			return
		}
		t2 := time.Now()
		build, err := n.BuildDockerfile(ctx, agentRepo+":"+agentTag, nil)
		if err != nil {
			if ctx.Err() != nil {
				// The build compiles what the Go build cache lacks:
				// under test/run.sh (CGO_ENABLED=0 -trimpath, as the
				// Dockerfile builds) the suite has compiled it all and the
				// build links; a plain `go test` with cgo on shares
				// nothing, and with an empty cache on a saturated machine
				// that took over 18 minutes here.
				err = fmt.Errorf("not within %s of starting the images (%w): %w", imagesTimeout, ctx.Err(), err)
			}
			imagesErr = fmt.Errorf("driftwatch image from the Dockerfile: %w", err)
			return
		}
		t.Logf("fact: images built offline: workload %s, local base images %s, driftwatch from the Dockerfile %s (buildah bud %s), imported into containerd",
			t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), time.Since(t2).Round(time.Millisecond), build.Round(time.Millisecond))
	})
	if imagesErr != nil {
		t.Fatal(imagesErr)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// poll calls f every interval until it returns true; it fails the test with
// what and f's last note after timeout.
func poll(t *testing.T, timeout, interval time.Duration, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var note string
	for {
		var ok bool
		ok, note = f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last: %s)", what, timeout, note)
		}
		time.Sleep(interval)
	}
}

// runningPod waits until exactly one pod matching selector in ns is Running
// with every container running and not being deleted, and returns it.
func runningPod(t *testing.T, c *cluster.Cluster, ns, selector string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	poll(t, timeout, 500*time.Millisecond, "a running pod "+selector+" in "+ns, func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		var live []*corev1.Pod
		var states []string
		for i := range pods.Items {
			p := &pods.Items[i]
			states = append(states, podState(p))
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		if len(live) != 1 || live[0].Status.Phase != corev1.PodRunning || !allRunning(live[0]) {
			return false, strings.Join(states, "; ")
		}
		got = live[0]
		return true, ""
	})
	return got
}

func allRunning(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running == nil {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// podState is a one-line summary of a pod: phase, readiness, each container's
// state and restarts (reasons and messages from the kubelet, no values).
func podState(p *corev1.Pod) string {
	ready, _ := podReady(p)
	parts := []string{fmt.Sprintf("%s %s ready=%v", p.Name, p.Status.Phase, ready)}
	for _, s := range p.Status.ContainerStatuses {
		st := "?"
		switch {
		case s.State.Running != nil:
			st = "running"
		case s.State.Waiting != nil:
			st = "waiting " + s.State.Waiting.Reason + ": " + s.State.Waiting.Message
		case s.State.Terminated != nil:
			st = fmt.Sprintf("terminated %s (exit %d)", s.State.Terminated.Reason, s.State.Terminated.ExitCode)
		}
		parts = append(parts, fmt.Sprintf("%s: %s, restarts %d", s.Name, st, s.RestartCount))
	}
	return strings.Join(parts, ", ")
}

// report is one line printed by the workload (test/e2e/images/envnames):
// names only.
type report struct {
	Env    []string            `json:"env"`
	Dirs   map[string][]string `json:"dirs"`
	Errors map[string]string   `json:"errors"`
}

// visible drops the kubelet's atomic-writer entries (..data, ..TIMESTAMP).
func visible(names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, "..") {
			out = append(out, n)
		}
	}
	return out
}

// lastReport returns the last line the workload's container printed, read
// from the log the kubelet keeps for it (CRI format: "TIME STREAM TAG LINE").
func lastReport(c *cluster.Cluster, p *corev1.Pod, container string) (report, error) {
	log, err := c.Node().PodLog(p.Namespace, p.Name, string(p.UID), container)
	if err != nil {
		return report{}, err
	}
	var last string
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) == 4 && f[1] == "stdout" && strings.HasPrefix(f[3], "{") {
			last = f[3]
		}
	}
	if last == "" {
		return report{}, fmt.Errorf("no report in %s/%s's log yet", p.Namespace, p.Name)
	}
	var r report
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return report{}, fmt.Errorf("undecodable report %q: %w", last, err)
	}
	return r, nil
}

// waitReport waits until the workload's last report satisfies ok.
func waitReport(t *testing.T, c *cluster.Cluster, p *corev1.Pod, container string, timeout time.Duration, what string, ok func(report) bool) report {
	t.Helper()
	var r report
	poll(t, timeout, 500*time.Millisecond, what, func() (bool, string) {
		var err error
		r, err = lastReport(c, p, container)
		if err != nil {
			return false, err.Error()
		}
		b, _ := json.Marshal(r)
		return ok(r), string(b)
	})
	return r
}

// httpURL resolves an HTTP probe of a container into a URL on the pod's IP
// (a named port through the container's ports).
func httpURL(p *corev1.Pod, container string, probe *corev1.Probe) (string, error) {
	if probe == nil || probe.HTTPGet == nil {
		return "", fmt.Errorf("not an HTTP probe: %+v", probe)
	}
	port, err := containerPort(p, container, probe.HTTPGet.Port)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	return fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), probe.HTTPGet.Path), nil
}

func containerPort(p *corev1.Pod, container string, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, ct := range p.Spec.Containers {
		if ct.Name != container {
			continue
		}
		for _, cp := range ct.Ports {
			if cp.Name == port.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("container %s of %s has no port named %q", container, p.Name, port.StrVal)
}

// get fetches url from inside the node's network namespace.
func get(n *node.Node, url string) (int, string, error) {
	resp, err := n.HTTPClient().Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// scrapeIn scrapes a /metrics URL from inside the node's namespace.
func scrapeIn(n *node.Node, url string) ([]scrape.Series, error) {
	code, body, err := get(n, url)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d", url, code)
	}
	return scrape.Parse(strings.NewReader(body))
}

// findingSet is the set of finding series (scrape.IsFinding) of a scrape,
// keyed by findingID.
func findingSet(series []scrape.Series) map[string]scrape.Series {
	out := map[string]scrape.Series{}
	for _, s := range series {
		if scrape.IsFinding(s) {
			out[findingID(s)] = s
		}
	}
	return out
}

// findingID names a finding by its metric and labels, without its value and
// without change_source: whether this process observed a change or inferred
// it from managedFields at start-up necessarily differs across a restart.
func findingID(s scrape.Series) string {
	k := scrape.Series{Name: s.Name, Labels: map[string]string{}}
	for l, v := range s.Labels {
		if l != "change_source" {
			k.Labels[l] = v
		}
	}
	return k.String()
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// processStatus reads the fields of /proc/PID/status a test asserts on.
func processStatus(pid int) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out, nil
}

// rootMountOptions returns the mount options of a process's root
// filesystem ("/" in its mount namespace).
func rootMountOptions(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		return "", err
	}
	opts := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts = f[5] // the last mount on / is the one seen
		}
	}
	if opts == "" {
		return "", fmt.Errorf("no root mount in /proc/%d/mountinfo", pid)
	}
	return opts, nil
}
