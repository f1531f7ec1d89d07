package flux

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/desired"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// artifactHost is a third-party artifact server of the test (as
// source-watcher would be): per path, the bytes it serves; it counts the
// agent's requests (User-Agent desired.UserAgent) apart from
// kustomize-controller's.
type artifactHost struct {
	*httptest.Server
	mu     sync.Mutex
	files  map[string][]byte
	status map[string]int // per path, for the agent only: 0 serves
	// redirect: per path, a URL the agent is sent to.
	redirect map[string]string
	agent    map[string]*atomic.Int64
}

func newArtifactHost(t *testing.T) *artifactHost {
	h := &artifactHost{files: map[string][]byte{}, status: map[string]int{}, redirect: map[string]string{}, agent: map[string]*atomic.Int64{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		body, status, to := h.files[r.URL.Path], h.status[r.URL.Path], h.redirect[r.URL.Path]
		fromAgent := r.Header.Get("User-Agent") == desired.UserAgent
		if fromAgent {
			if h.agent[r.URL.Path] == nil {
				h.agent[r.URL.Path] = &atomic.Int64{}
			}
			h.agent[r.URL.Path].Add(1)
		}
		h.mu.Unlock()
		switch {
		case to != "":
			http.Redirect(w, r, to, http.StatusFound)
		case fromAgent && status != 0:
			w.WriteHeader(status)
		case body == nil:
			http.NotFound(w, r)
		default:
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *artifactHost) set(path string, body []byte, agentStatus int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[path], h.status[path] = body, agentStatus
}

func (h *artifactHost) agentRequests(path string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.agent[path]; c != nil {
		return c.Load()
	}
	return 0
}

func (h *artifactHost) hostPort() string { return strings.TrimPrefix(h.URL, "http://") }

func artifactOf(url string, body []byte, rev string) map[string]any {
	sum := sha256.Sum256(body)
	return map[string]any{"url": url, "revision": rev, "digest": "sha256:" + hex.EncodeToString(sum[:]),
		"path": strings.TrimPrefix(url, "http://"), "size": int64(len(body)), "lastUpdateTime": time.Now().UTC().Format(time.RFC3339)}
}

// bomb is a gzipped tarball of one file of n zero bytes (~1000:1).
func bomb(t *testing.T, n int64) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "app/zeros.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: n}); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zero)) {
		if left < int64(len(zero)) {
			zero = zero[:left]
		}
		if _, err := tw.Write(zero); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func counterValue(all []scrape.Series, name string, labels map[string]string) float64 {
	for _, s := range all {
		if s.Name != name {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && s.Labels[k] == v
		}
		if match {
			return s.Value
		}
	}
	return 0
}

// rssKiB is a process's peak resident set (VmHWM).
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return n
		}
	}
	return -1
}

// TestFluxFetchSafety: the agent fetches artifacts only from the allowed
// hosts, never follows a redirect, refuses a link-local address at dial
// time, survives a gzip bomb without fetching it twice, and retries a failed
// download without a new commit. The artifacts are ExternalArtifacts whose
// status the test writes, as a third-party producer (or a namespace editor)
// can: no controller of the stack writes them.
func TestFluxFetchSafety(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	host := newArtifactHost(t)
	stranger := newArtifactHost(t) // not allowed
	target := newArtifactHost(t)   // a redirect's target, allowed
	repo := c.NewGitRepo(t, "safety")
	inp := `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`
	rev := repo.Commit(t, "frozen", map[string]string{"app/s.yaml": secret("frozen", inp, "A", "B")})
	// The live Secret exists with A only: kustomize-controller skips it
	// (IfNotPresent), the finding is driftwatch_flux_never_updated.
	c.Apply(t, ns, secret("frozen", "", "A"))
	c.Apply(t, ns, gitRepository("safety", c.Flux().HTTPURL(repo)))
	waitFor(t, waitFlux, "source-controller serves the commit", func() (bool, string) {
		_, _, _, obj, err := c.Flux().Condition(ctxT(t), gitops.GitRepositoryGVR, ns, "safety", "Ready")
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision")
		return strings.HasSuffix(r, rev), r
	})
	_, _, _, gitObj, _ := c.Flux().Condition(ctxT(t), gitops.GitRepositoryGVR, ns, "safety", "Ready")
	gitURL, _, _ := unstructured.NestedString(gitObj.Object, "status", "artifact", "url")
	revision, _, _ := unstructured.NestedString(gitObj.Object, "status", "artifact", "revision")
	resp, err := http.Get(gitURL)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	host.set("/flaky.tar.gz", good, http.StatusServiceUnavailable) // the agent's downloads fail at first
	host.set("/bomb.tar.gz", bomb(t, 300<<20), 0)
	stranger.set("/x.tar.gz", good, 0)
	target.set("/x.tar.gz", good, 0)
	host.mu.Lock()
	host.redirect["/redirect.tar.gz"] = target.URL + "/x.tar.gz"
	host.mu.Unlock()
	sources := map[string]map[string]any{
		"flaky":      artifactOf(host.URL+"/flaky.tar.gz", good, revision),
		"bomb":       artifactOf(host.URL+"/bomb.tar.gz", host.files["/bomb.tar.gz"], "latest@sha256:bomb"),
		"stranger":   artifactOf(stranger.URL+"/x.tar.gz", good, revision),
		"redirect":   artifactOf(host.URL+"/redirect.tar.gz", good, revision),
		"metadata":   artifactOf("http://169.254.169.254/latest/meta-data/x.tar.gz", good, revision),
		"bad-digest": artifactOf(host.URL+"/flaky.tar.gz", good, revision),
	}
	// The CRD requires a digest of the form algo:hex; one whose algorithm
	// the agent cannot check is refused like none (no_digest).
	sources["bad-digest"]["digest"] = "md5:0123456789abcdef0123456789abcdef"
	var manifests []string
	for name, a := range sources {
		c.Flux().WriteExternalArtifact(t, ns, name, a)
		m := strings.Replace(kustomization(name, "x", "app", ns, ""), "sourceRef: {kind: GitRepository, name: x}", "sourceRef: {kind: ExternalArtifact, name: "+name+"}", 1)
		manifests = append(manifests, m)
	}
	c.Apply(t, ns, strings.Join(manifests, "---\n"))
	c.Flux().WaitKustomizationApplied(t, ns, "flaky", rev, waitFlux)
	t.Logf("fact: Kustomization flaky (ExternalArtifact served by a third party): %s", getKS(t, c, ns, "flaky"))

	allowed := strings.Join(append(c.Flux().AgentArgs()[1:2], host.hostPort(), target.hostPort(), "169.254.169.254"), ",")
	agent := c.StartAgent(t, "--namespaces", ns, "--flux-poll-interval", "2s", "--flux-allowed-hosts", allowed)
	agent.WaitReady(t, waitAgent)
	pid := agent.PID()

	reasons := func(all []scrape.Series) map[string]string {
		out := map[string]string{}
		for _, s := range all {
			if s.Name == "driftwatch_flux_kustomization_unjudged" && s.Labels["namespace"] == ns {
				out[s.Labels["kustomization"]] = s.Labels["reason"]
			}
		}
		return out
	}
	want := map[string]string{"flaky": flux.UnjudgedFetchFailed, "bomb": flux.UnjudgedLimit, "stranger": flux.UnjudgedFetchRefused,
		"redirect": flux.UnjudgedFetchRefused, "metadata": flux.UnjudgedFetchRefused, "bad-digest": flux.UnjudgedFetchRefused}
	var all []scrape.Series
	waitFor(t, waitAgent, "every refused or failing artifact is counted unjudged with its reason", func() (bool, string) {
		all, err = agent.Scrape()
		if err != nil {
			return false, err.Error()
		}
		got := reasons(all)
		for k, v := range want {
			if got[k] != v {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
	for _, s := range all {
		if strings.HasPrefix(s.Name, "driftwatch_flux_artifact") || strings.HasPrefix(s.Name, "driftwatch_flux_kustomization") {
			t.Logf("series: %s", s)
		}
	}
	for reason, n := range map[string]float64{flux.RefuseHostNotAllowed: 1, flux.RefuseRedirect: 1, flux.RefuseAddress: 1, flux.RefuseNoDigest: 1} {
		if got := counterValue(all, "driftwatch_flux_artifact_refusals_total", map[string]string{"reason": reason}); got < n {
			t.Errorf("driftwatch_flux_artifact_refusals_total{reason=%q} = %v, want ≥ %v", reason, got, n)
		}
	}
	// Nothing fetched from a host not allowed, nor through the redirect.
	if n := stranger.agentRequests("/x.tar.gz"); n != 0 {
		t.Errorf("the agent asked a host that is not allowed %d times", n)
	}
	if n := target.agentRequests("/x.tar.gz"); n != 0 {
		t.Errorf("the agent followed a redirect %d times", n)
	}
	if !strings.Contains(agent.Logs(), "nothing is expected from this Kustomization") {
		t.Error("no warning in the agent's log")
	}
	// The bomb: refused while inflating, once; the agent stays up and small.
	time.Sleep(6 * time.Second) // three more rounds
	if n := host.agentRequests("/bomb.tar.gz"); n != 1 {
		t.Errorf("the bomb was downloaded %d times, want once (remembered by digest)", n)
	}
	if agent.PID() != pid {
		t.Fatalf("the agent restarted (pid %d, then %d)", pid, agent.PID())
	}
	if exited, err := agent.Exited(); exited {
		t.Fatalf("the agent exited: %v", err)
	}
	hwm := rssKiB(pid)
	t.Logf("fact: agent peak RSS %d KiB after a 300 MiB gzip bomb (%d bytes compressed)", hwm, len(host.files["/bomb.tar.gz"]))
	if hwm > 400<<10 {
		t.Errorf("agent peak RSS %d KiB: the bomb was held", hwm)
	}
	// A failed download, then the artifact server recovers: the findings
	// return without a new commit.
	for _, s := range all {
		if s.Name == "driftwatch_flux_never_updated" && s.Labels["namespace"] == ns {
			t.Fatalf("a finding from a Kustomization whose artifact could not be read: %s", s)
		}
	}
	failedBefore := host.agentRequests("/flaky.tar.gz")
	host.set("/flaky.tar.gz", good, 0)
	s := agent.WaitForSeries(t, "driftwatch_flux_never_updated", map[string]string{"namespace": ns, "name": "frozen", "kustomization": "flaky"}, waitAgent)
	t.Logf("fact: after %d failed downloads (backoff), the retry succeeded without a new commit: %s", failedBefore, s)
}

// TestFluxGitOutage: the Git server goes away. source-controller reports
// the GitRepository not Ready and keeps serving its last artifact;
// kustomize-controller keeps that revision applied and stays Ready=True; the
// finding stays (a firing page does not resolve during a Git outage).
func TestFluxGitOutage(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "outage")
	inp := `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`
	rev := repo.Commit(t, "frozen", map[string]string{"app/s.yaml": secret("frozen", inp, "A", "B")})
	c.Apply(t, ns, secret("frozen", "", "A"))
	c.Apply(t, ns, gitRepository("outage", c.Flux().HTTPURL(repo))+"---\n"+kustomization("outage", "outage", "app", ns, ""))
	c.Flux().WaitKustomizationApplied(t, ns, "outage", rev, waitFlux)
	agent := c.StartAgent(t, "--namespaces", ns, "--flux-poll-interval", "2s")
	agent.WaitReady(t, waitAgent)
	finding := map[string]string{"namespace": ns, "name": "frozen", "kustomization": "outage", "reason": "ssa_if_not_present"}
	agent.WaitForSeries(t, "driftwatch_flux_never_updated", finding, waitAgent)

	// The outage: the repository's URL answers nothing any more.
	patchSource(t, c, ns, "outage", `{"spec":{"url":"`+c.Flux().GitServerURL()+`/gone"}}`)
	c.Flux().Reconcile(t, gitops.GitRepositoryGVR, ns, "outage")
	waitFor(t, waitFlux, "source-controller reports the outage", func() (bool, string) {
		st, reason, msg, _, err := c.Flux().Condition(ctxT(t), gitops.GitRepositoryGVR, ns, "outage", "Ready")
		return err == nil && st == "False", st + " " + reason + " " + msg
	})
	c.Flux().Reconcile(t, gitops.KustomizationGVR, ns, "outage")
	time.Sleep(5 * time.Second)
	st, reason, msg, obj, _ := c.Flux().Condition(ctxT(t), gitops.GitRepositoryGVR, ns, "outage", "Ready")
	artRev, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision")
	ks := getKS(t, c, ns, "outage")
	t.Logf("fact: during the outage: GitRepository Ready=%s %s %q, still serving %s; Kustomization %s", st, reason, msg, artRev, ks)
	if ks.Ready != "True" || !strings.HasSuffix(ks.LastApplied, rev) || !strings.HasSuffix(artRev, rev) {
		t.Fatalf("the premise does not hold: the Kustomization is not Ready at the last revision, or the artifact is gone: %s", ks)
	}
	time.Sleep(6 * time.Second) // three poll rounds
	agent.WaitForSeries(t, "driftwatch_flux_never_updated", finding, 10*time.Second)
	all, err := agent.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == "driftwatch_flux_kustomization_unjudged" && s.Labels["namespace"] == ns {
			t.Errorf("unjudged during a Git outage: %s", s)
		}
	}
}

func patchSource(t *testing.T, c *cluster.Cluster, ns, name, patch string) {
	t.Helper()
	if _, err := c.Dynamic.Resource(gitops.GitRepositoryGVR).Namespace(ns).Patch(ctxT(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch GitRepository %s: %v", name, err)
	}
}
