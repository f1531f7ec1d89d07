// Package faults holds the fault-injection end-to-end test of issue 10: a
// scenario with real findings and healthy objects on the real stack, a
// sampler scraping the agent throughout, and one fault after another
// (apiserver and etcd restarts, a forced relist, an agent restart, the ESO
// CRDs deleted and re-created, RBAC revoked and restored, the agent paused).
// No sample may show a false finding; real findings may be missing only
// inside a fault's window; after every recovery the findings are exactly
// those from before.
//
// Notes on two faults:
//
//   - Forced relist: kube-apiserver's flags are fixed by the stack, so no tiny
//     --watch-cache-sizes. Instead the agent is frozen, etcd's revision moves on
//     and its history is compacted through etcd's v3 JSON API, and the apiserver
//     is restarted (new watch cache, every watch closed); on thawing, every
//     reflector resumes from a compacted resourceVersion, gets 410 Gone ("too
//     old resource version", in the agent's debug log) and relists. The pod
//     informer's update events prove the relist.
//   - Pause: client-go's reflector asks for server-side watch timeouts of 5–10
//     minutes, too long for this test to wait. The agent is paused for 30 s
//     (past client-go's HTTP/2 health-check interval) while watched objects
//     churn; whether the apiserver cut its watches meanwhile depends on
//     buffering, and the test only records it (the pod informer's list+watch
//     restarts after the pause). What a watch timeout leads to — the watch
//     closed, resumed from the last resourceVersion, 410 and a relist when that
//     is gone — is exercised by the restart and forced-relist faults.
package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true}))
}

const (
	wait        = 3 * time.Minute // generous: the machine is shared and slow
	sampleEvery = 200 * time.Millisecond
	quiet       = 3 * time.Second // sampled quiet time between faults
)

const fakeStore = `
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: store}
spec:
  provider:
    fake:
      data:
      - {key: db-user, value: "admin"}
`

// The ESO part: "short" (deletionPolicy Delete, a key the store lacks:
// Ready=True over a Secret short by TOKEN) and "healthy". Both set
// creationPolicy explicitly (an implicit one is rightly reported as unsafe).
const esObjects = `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: healthy}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: healthy, creationPolicy: Owner}
  data:
  - {secretKey: HEALTHY_USER, remoteRef: {key: db-user}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: short}
spec:
  # 1h, not seconds: with a short interval, ESO's own lag while the
  # apiserver is down is (rightly) reported as sync_overdue.
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: short, creationPolicy: Owner, deletionPolicy: Delete}
  data:
  - {secretKey: USER, remoteRef: {key: db-user}}
  - {secretKey: TOKEN, remoteRef: {key: api-token}}
`

// The core part: pod "api" reads an optional key Secret "app" lacks; pod
// "healthy" reads Secret "healthy-env", which has every key.
const coreObjects = `
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {DB_USER: admin}
---
apiVersion: v1
kind: Secret
metadata: {name: healthy-env}
stringData: {A: one, B: two}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: DB_USER, valueFrom: {secretKeyRef: {name: app, key: DB_USER}}}
    - {name: STRIPE_KEY, valueFrom: {secretKeyRef: {name: app, key: STRIPE_KEY, optional: true}}}
---
apiVersion: v1
kind: Pod
metadata: {name: healthy}
spec:
  containers:
  - name: app
    image: example/app:1
    envFrom: [{secretRef: {name: healthy-env}}]
    env: [{name: B, valueFrom: {secretKeyRef: {name: healthy-env, key: B}}}]
`

func series(name, labels string, v float64) string {
	return fmt.Sprintf("%s{%s} %g", name, labels, v)
}

// sample is one observation of the agent.
type sample struct {
	at        time.Time
	phase     string // the fault in progress, "" between faults
	scrapeErr error
	readyCode int // 0: /readyz did not answer
	findings  []string
	degraded  map[string]float64 // driftwatch_resource_degraded by resource
	enabled   map[string]float64 // driftwatch_detector_enabled by detector
}

type window struct {
	name       string
	start, end time.Time
}

// sampler scrapes /metrics and /readyz every sampleEvery until stopped.
type sampler struct {
	a  *cluster.Agent
	ns string

	mu      sync.Mutex
	phase   string
	samples []sample
	windows []window

	stop chan struct{}
	done chan struct{}
}

func newSampler(a *cluster.Agent, ns string) *sampler {
	s := &sampler{a: a, ns: ns, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		s.mu.Lock()
		phase := s.phase
		s.mu.Unlock()
		sm := sample{at: time.Now(), phase: phase}
		all, err := s.a.Scrape()
		sm.scrapeErr = err
		if err == nil {
			sm.findings = findingsOf(all, s.ns)
			sm.degraded, sm.enabled = map[string]float64{}, map[string]float64{}
			for _, x := range all {
				switch x.Name {
				case "driftwatch_resource_degraded":
					sm.degraded[x.Labels["resource"]] = x.Value
				case "driftwatch_detector_enabled":
					sm.enabled[x.Labels["detector"]] = x.Value
				}
			}
		}
		if code, _, err := s.a.Get("/readyz"); err == nil {
			sm.readyCode = code
		}
		s.mu.Lock()
		// A sample that began in a fault's window belongs to it even if
		// the window closed meanwhile.
		if s.phase != "" && sm.phase == "" {
			sm.phase = s.phase
		}
		s.samples = append(s.samples, sm)
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-time.After(sampleEvery):
		}
	}
}

func (s *sampler) begin(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase = name
	s.windows = append(s.windows, window{name: name, start: time.Now()})
}

func (s *sampler) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windows[len(s.windows)-1].end = time.Now()
	s.phase = ""
}

func (s *sampler) finish() []sample {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

func (s *sampler) since(t time.Time) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for _, x := range s.samples {
		if !x.at.Before(t) {
			out = append(out, x)
		}
	}
	return out
}

func findingsOf(all []scrape.Series, ns string) []string {
	var out []string
	for _, s := range all {
		if !scrape.IsFinding(s) || s.Labels["namespace"] != ns {
			continue
		}
		out = append(out, s.String())
	}
	sort.Strings(out)
	return out
}

// healthy reports whether a finding names one of the healthy objects.
func healthy(f string) bool {
	for _, n := range []string{`"healthy"`, `"healthy-env"`} {
		if strings.Contains(f, n) {
			return true
		}
	}
	return false
}

func scrapeFindings(a *cluster.Agent, ns string) ([]string, []scrape.Series, error) {
	all, err := a.Scrape()
	if err != nil {
		return nil, nil, err
	}
	return findingsOf(all, ns), all, nil
}

// waitRecovered waits until /readyz answers 200, no resource is degraded,
// every detector in enabled is on and the findings are exactly want.
func waitRecovered(t *testing.T, a *cluster.Agent, ns string, want []string, enabled ...string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var got []string
	var why string
	for time.Now().Before(deadline) {
		code, _, err := a.Get("/readyz")
		if err != nil || code != http.StatusOK {
			why = fmt.Sprintf("/readyz %d %v", code, err)
			time.Sleep(250 * time.Millisecond)
			continue
		}
		f, all, err := scrapeFindings(a, ns)
		if err != nil {
			why = err.Error()
			time.Sleep(250 * time.Millisecond)
			continue
		}
		got = f
		ok := slices.Equal(f, want)
		for _, s := range all {
			if s.Name == "driftwatch_resource_degraded" && s.Value != 0 {
				ok, why = false, "degraded: "+s.String()
			}
			if s.Name == "driftwatch_detector_enabled" && slices.Contains(enabled, s.Labels["detector"]) && s.Value != 1 {
				ok, why = false, "disabled: "+s.String()
			}
		}
		if ok {
			return
		}
		if why == "" {
			why = "findings differ"
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("not recovered within %s (%s); findings:\n got:\n  %s\nwant:\n  %s", wait, why,
		strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

func counter(all []scrape.Series, name string, labels map[string]string) float64 {
	var v float64
	for _, s := range scrape.Find(all, name, labels) {
		v += s.Value
	}
	return v
}

// etcdPost calls etcd's v3 JSON gateway.
func etcdPost(c *cluster.Cluster, path string, body any, out any) error {
	b, _ := json.Marshal(body)
	resp, err := http.Post(c.EtcdURL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, rb)
	}
	if out != nil {
		return json.Unmarshal(rb, out)
	}
	return nil
}

// compactEtcd compacts etcd's history up to its current revision: every
// older resourceVersion is gone, so a watch resumed from one gets 410 Gone.
func compactEtcd(t *testing.T, c *cluster.Cluster) int64 {
	t.Helper()
	var rr struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	key := base64.StdEncoding.EncodeToString([]byte("/"))
	if err := etcdPost(c, "/v3/kv/range", map[string]any{"key": key, "count_only": true}, &rr); err != nil {
		t.Fatal(err)
	}
	rev, err := strconv.ParseInt(rr.Header.Revision, 10, 64)
	if err != nil || rev == 0 {
		t.Fatalf("etcd revision %q: %v", rr.Header.Revision, err)
	}
	if err := etcdPost(c, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		t.Fatal(err)
	}
	return rev
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func TestNoFalsePagesUnderFaults(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()

	c.Apply(t, ns, fakeStore)
	c.Apply(t, ns, esObjects)
	c.Apply(t, ns, coreObjects)

	a := c.StartAgent(t, "--namespaces", ns, "--discovery-interval", "2s")
	defer func() {
		if pid := a.PID(); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	a.WaitReady(t, wait)

	baseline := []string{
		series("driftwatch_secret_missing_key", `key="STRIPE_KEY",namespace="`+ns+`",optional="true",secret="app",source="pod"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="true",secret="app",source="pod"`, 1),
		series("driftwatch_secret_missing_key_consumer_pods", `namespace="`+ns+`",secret="app",workload="api",workload_kind="Pod"`, 1),
		series("driftwatch_secret_short_consumer_pods", `namespace="`+ns+`",secret="app",workload="api",workload_kind="Pod"`, 1),
		series("driftwatch_secret_missing_key", `key="TOKEN",namespace="`+ns+`",optional="false",secret="short",source="externalsecret"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="short",source="externalsecret"`, 1),
		series("driftwatch_externalsecret_ready_but_short", `externalsecret="short",namespace="`+ns+`",reason="missing_keys",secret="short"`, 1),
	}
	sort.Strings(baseline)
	esDetectors := []string{"ready_but_short", "sync_health"}
	waitRecovered(t, a, ns, baseline, esDetectors...)
	// The healthy ExternalSecret really synced (so "healthy" is healthy, not
	// merely unknown).
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "healthy", metav1.GetOptions{}); err != nil {
		t.Fatalf("ESO did not write Secret healthy: %v", err)
	}

	s := newSampler(a, ns)
	time.Sleep(quiet)

	type evidence struct{ name, text string }
	var notes []evidence
	note := func(name, format string, args ...any) {
		notes = append(notes, evidence{name, fmt.Sprintf(format, args...)})
	}
	podUpdates := func() float64 {
		_, all, err := scrapeFindings(a, ns)
		if err != nil {
			t.Fatal(err)
		}
		return counter(all, "driftwatch_informer_events_total", map[string]string{"resource": "pods", "type": "update"})
	}
	// churn writes objects the agent does not judge: pods without Secret
	// references (events on a watched resource) and ConfigMaps (revisions).
	churn := func(prefix string, n int) {
		for i := range n {
			name := fmt.Sprintf("%s-%d", prefix, i)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example/none:1"}}}}
			if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("churn: %v", err)
			}
			if err := c.Client.CoreV1().Pods(ns).Delete(ctx, name, *metav1.NewDeleteOptions(0)); err != nil {
				t.Fatalf("churn: %v", err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}
			if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatalf("churn: %v", err)
			}
		}
	}
	signal := func(sig syscall.Signal) {
		pid := a.PID()
		if pid == 0 {
			t.Fatal("the agent is not running")
		}
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
	}

	faults := []struct {
		name    string
		inject  func()
		enabled []string // detectors that must be back on at recovery
		// keeps: the agent's caches survive this fault, so no real finding
		// may be missing at any sample of its window.
		keeps bool
	}{
		{"apiserver restart", func() {
			c.StopAPIServer()
			time.Sleep(2 * time.Second)
			if err := c.StartAPIServer(); err != nil {
				t.Fatal(err)
			}
		}, esDetectors, true},
		{"etcd restart", func() {
			c.StopEtcd()
			time.Sleep(2 * time.Second)
			if err := c.StartEtcd(); err != nil {
				t.Fatal(err)
			}
		}, esDetectors, true},
		{"forced relist (410 Gone)", func() {
			// Freeze the agent, move etcd on and compact its history, restart
			// the apiserver (new watch cache, every watch closed) and thaw:
			// each reflector resumes from a resourceVersion etcd no longer
			// has and must relist.
			before := podUpdates()
			signal(syscall.SIGSTOP)
			churn("relist", 10)
			rev := compactEtcd(t, c)
			c.StopAPIServer()
			if err := c.StartAPIServer(); err != nil {
				t.Fatal(err)
			}
			signal(syscall.SIGCONT)
			// Evidence of the relist: the informer replays the namespace's
			// two unchanged pods as updates.
			deadline := time.Now().Add(wait)
			for podUpdates() < before+2 {
				if time.Now().After(deadline) {
					t.Fatalf("no relist seen after compacting etcd at revision %d (pod updates %g → %g)", rev, before, podUpdates())
				}
				time.Sleep(500 * time.Millisecond)
			}
			log := a.Logs()
			note("forced relist (410 Gone)", "etcd compacted at revision %d; pod update events %g → %g; agent log mentions 410/expired: %v",
				rev, before, podUpdates(), strings.Contains(log, "too old resource version"))
		}, esDetectors, true},
		{"agent restart", func() {
			if err := a.Stop(); err != nil {
				t.Errorf("agent exit on SIGTERM: %v", err)
			}
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
		}, esDetectors, false},
		{"ESO CRDs deleted and re-created", func() {
			list, err := c.Dynamic.Resource(crdGVR).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, crd := range list.Items {
				if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g == "external-secrets.io" || strings.HasSuffix(g, ".external-secrets.io") {
					names = append(names, crd.GetName())
				}
			}
			if len(names) == 0 {
				t.Fatal("no ESO CRDs installed")
			}
			for _, n := range names {
				if err := c.Dynamic.Resource(crdGVR).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
			}
			deleted := time.Now()
			deadline := deleted.Add(wait)
			nudged := deleted
			for _, n := range names {
				for {
					crd, err := c.Dynamic.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						break
					}
					var state string
					if crd != nil {
						conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
						state = fmt.Sprintf("deletionTimestamp %v, finalizers %v, conditions %v",
							crd.GetDeletionTimestamp(), crd.GetFinalizers(), conds)
					}
					if time.Now().After(deadline) {
						t.Fatalf("CRD %s not gone %s after its deletion: %v; %s", n, wait, err, state)
					}
					// After the etcd restart above, the apiserver's finalizer
					// can fail to list a CRD's instances ("storage is
					// (re)initializing", condition Terminating reason
					// InstanceDeletionFailed) and retries on its workqueue's
					// exponential backoff, which outgrew the wait in two warm
					// make test runs of stop 49. Any change to the CRD but its
					// Terminating condition requeues it at once
					// (apiextensions-apiserver's crd_finalizer.go,
					// updateCustomResourceDefinition): an annotation, every
					// 10 s from 15 s after the deletion.
					if crd != nil && strings.Contains(state, "InstanceDeletionFailed") &&
						time.Since(deleted) > 15*time.Second && time.Since(nudged) > 10*time.Second {
						nudged = time.Now()
						t.Logf("CRD %s still terminating: %s; annotating it to requeue the apiserver's finalizer", n, state)
						patch := fmt.Sprintf(`{"metadata":{"annotations":{"driftwatch.test/requeue-finalizer":%q}}}`, nudged.Format(time.RFC3339Nano))
						if _, err := c.Dynamic.Resource(crdGVR).Patch(ctx, n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
							t.Logf("annotating CRD %s: %v", n, err)
						}
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
			// The agent notices at its next discovery: ESO detectors off, the
			// ESO-sourced findings cleared (their objects are gone).
			var off sample
			deadline = time.Now().Add(wait)
			for {
				f, all, err := scrapeFindings(a, ns)
				if err == nil && counter(all, "driftwatch_detector_enabled", map[string]string{"detector": "ready_but_short"}) == 0 {
					off = sample{findings: f}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the ESO detectors stayed enabled after the CRDs were deleted")
				}
				time.Sleep(250 * time.Millisecond)
			}
			for _, f := range off.findings {
				if strings.Contains(f, `source="externalsecret"`) || strings.Contains(f, "externalsecret_") {
					t.Errorf("ESO finding kept after its CRD was deleted: %s", f)
				}
			}
			note("ESO CRDs deleted and re-created", "%d CRDs deleted; with the ESO detectors off the findings were %d series, none ESO-sourced", len(names), len(off.findings))
			bundle, err := os.ReadFile(filepath.Join(tools.CRDDir(), tools.ESOCRDFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.InstallCRDs(ctx, bundle); err != nil {
				t.Fatal(err)
			}
			// The ESO controller's caches lost their kinds: restart it.
			c.StopESOController()
			if err := c.StartESOController(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ApplyYAML(ctx, ns, []byte(fakeStore), ""); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ApplyYAML(ctx, ns, []byte(esObjects), ""); err != nil {
				t.Fatal(err)
			}
		}, esDetectors, false},
		{"RBAC on pods revoked and restored", func() {
			roles := c.Client.RbacV1().ClusterRoles()
			role, err := roles.Get(ctx, "driftwatch", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			orig := role.DeepCopy()
			revoked := role.DeepCopy()
			for i, r := range revoked.Rules {
				revoked.Rules[i].Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(x string) bool { return x == "pods" })
			}
			if _, err := roles.Update(ctx, revoked, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			restored := false
			restore := func() {
				if restored {
					return
				}
				restored = true
				cur, err := roles.Get(context.Background(), "driftwatch", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cur.Rules = orig.Rules
				if _, err := roles.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			defer restore()
			// An open watch outlives a permission change (authorisation is
			// checked when a request starts): restart the apiserver so every
			// watch is re-established under the new RBAC.
			c.StopAPIServer()
			if err := c.StartAPIServer(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(wait)
			var deg sample
			for {
				f, all, err := scrapeFindings(a, ns)
				if err == nil && counter(all, "driftwatch_resource_degraded", map[string]string{"resource": "pods"}) == 1 {
					deg = sample{findings: f}
					code, _, _ := a.Get("/readyz")
					deg.readyCode = code
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("driftwatch_resource_degraded{resource=\"pods\"} never became 1 with pods revoked")
				}
				time.Sleep(250 * time.Millisecond)
			}
			for _, f := range deg.findings {
				if strings.Contains(f, `source="pod"`) || strings.Contains(f, "consumer_pods") {
					t.Errorf("a pod-sourced finding while pods are forbidden (detectors must pause): %s", f)
				}
			}
			if deg.readyCode != http.StatusOK {
				t.Errorf("/readyz %d while only pods are degraded: readiness must not wait for a forbidden resource", deg.readyCode)
			}
			// A real revocation, not the restarting apiserver's transient
			// denials: pods stay degraded over several rechecks while every
			// other resource is fine.
			var others []string
			for i := 0; i < 3; i++ {
				time.Sleep(2500 * time.Millisecond)
				_, all, err := scrapeFindings(a, ns)
				if err != nil {
					t.Fatal(err)
				}
				if counter(all, "driftwatch_resource_degraded", map[string]string{"resource": "pods"}) != 1 {
					t.Fatal("pods stopped being degraded while still revoked")
				}
				others = others[:0]
				for _, x := range scrape.Find(all, "driftwatch_resource_degraded", nil) {
					if x.Value != 0 && x.Labels["resource"] != "pods" {
						others = append(others, x.Labels["resource"])
					}
				}
			}
			if len(others) > 0 {
				t.Errorf("resources other than pods degraded with only pods revoked: %v", others)
			}
			note("RBAC on pods revoked and restored", "pods degraded (others not); findings while degraded: %d series (no pod-sourced one); /readyz %d", len(deg.findings), deg.readyCode)
			restore()
		}, esDetectors, false},
		{"agent paused (SIGSTOP) under churn", func() {
			// See the package notes.
			podWatches := func() int {
				return strings.Count(a.Logs(), `"msg":"Listing and watching","component":"client-go","type":"*v1.Pod"`)
			}
			w0 := podWatches()
			defer func() {
				waitRecovered(t, a, ns, baseline, esDetectors...)
				note("agent paused (SIGSTOP) under churn", "pod informer (re)started list+watch %d time(s) after the pause", podWatches()-w0)
			}()
			signal(syscall.SIGSTOP)
			t0 := time.Now()
			churn("paused", 40)
			if d := 30*time.Second - time.Since(t0); d > 0 {
				time.Sleep(d)
			}
			signal(syscall.SIGCONT)
		}, esDetectors, true},
	}

	for _, f := range faults {
		t.Logf("fault: %s", f.name)
		s.begin(f.name)
		f.inject()
		if t.Failed() {
			break
		}
		waitRecovered(t, a, ns, baseline, f.enabled...)
		s.end()
		t0 := time.Now()
		time.Sleep(quiet)
		// The quiet samples after the recovery: exactly the baseline.
		if len(s.since(t0)) == 0 {
			t.Errorf("after %s: no sample in %s of quiet time (the sampler is stuck?)", f.name, quiet)
		}
	}
	samples := s.finish()
	keeps := map[string]bool{}
	for _, f := range faults {
		keeps[f.name] = f.keeps
	}

	// Every sample, every rule.
	var ok, failedScrapes, notReady, inWindow, dropped int
	perWindow := map[string][4]int{}          // samples, failed scrapes, with a real finding missing, /readyz not 200
	missingIn := map[string]map[string]bool{} // window → real findings seen missing
	for i, x := range samples {
		w := perWindow[x.phase]
		w[0]++
		if x.phase != "" {
			inWindow++
		}
		if x.scrapeErr != nil {
			failedScrapes++
			w[1]++
			perWindow[x.phase] = w
			if x.phase == "" {
				t.Errorf("sample %d (%s) between faults: scrape failed: %v", i, x.at.Format(time.RFC3339Nano), x.scrapeErr)
			}
			continue
		}
		ok++
		if x.readyCode != http.StatusOK {
			notReady++
			if x.phase == "" {
				t.Errorf("sample %d (%s) between faults: /readyz %d", i, x.at.Format(time.RFC3339Nano), x.readyCode)
			}
		}
		for _, f := range x.findings {
			if healthy(f) {
				t.Errorf("sample %d (%s, phase %q): FALSE PAGE for a healthy object: %s", i, x.at.Format(time.RFC3339Nano), x.phase, f)
			} else if !slices.Contains(baseline, f) {
				t.Errorf("sample %d (%s, phase %q): finding not in the scenario: %s", i, x.at.Format(time.RFC3339Nano), x.phase, f)
			}
		}
		if x.readyCode != http.StatusOK {
			w[3]++
		}
		var missing []string
		for _, f := range baseline {
			if !slices.Contains(x.findings, f) {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			if keeps[x.phase] {
				t.Errorf("sample %d (%s) during %q, which the agent's caches survive: real findings missing:\n  %s",
					i, x.at.Format(time.RFC3339Nano), x.phase, strings.Join(missing, "\n  "))
			}
			if x.phase == "" {
				t.Errorf("sample %d (%s) between faults: real findings missing:\n  %s", i, x.at.Format(time.RFC3339Nano),
					strings.Join(missing, "\n  "))
			}
			dropped++
			w[2]++
			if missingIn[x.phase] == nil {
				missingIn[x.phase] = map[string]bool{}
			}
			for _, f := range missing {
				missingIn[x.phase][strings.ReplaceAll(f, `namespace="`+ns+`",`, "")] = true
			}
		}
		perWindow[x.phase] = w
	}
	s.mu.Lock()
	windows := slices.Clone(s.windows)
	s.mu.Unlock()
	t.Logf("%d faults, %d samples (%d in fault windows, %d between faults): %d scrapes answered, %d failed (agent stopped or paused), %d with /readyz not 200, %d with a real finding missing (all inside fault windows)",
		len(windows), len(samples), inWindow, len(samples)-inWindow, ok, failedScrapes, notReady, dropped)
	for _, w := range windows {
		pw := perWindow[w.name]
		t.Logf("  window %-36q %6.1fs: %3d samples, %3d failed scrapes, %3d /readyz not 200, %3d with a real finding missing %v",
			w.name, w.end.Sub(w.start).Seconds(), pw[0], pw[1], pw[3], pw[2], slices.Sorted(maps.Keys(missingIn[w.name])))
	}
	for _, n := range notes {
		t.Logf("  %s: %s", n.name, n.text)
	}
	if len(windows) != len(faults) && !t.Failed() {
		t.Errorf("%d of %d faults ran", len(windows), len(faults))
	}
}
