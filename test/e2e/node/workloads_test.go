package node

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/node"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// deployment renders a one-replica Deployment of the workload image; spec is
// the container's fields after image (indented for the container), volumes the
// pod's volumes (indented for the pod spec, or "").
func deployment(name, container, volumes string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: 2
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532}
      containers:
      - name: app
        image: %[2]s
        imagePullPolicy: IfNotPresent
%[3]s
%[4]s`, name, workloadImage, container, volumes)
}

// secretYAML renders a Secret with data (base64): a server-side apply
// without a key removes it (stringData is write-only: its fields are not the
// applier's to remove).
func secretYAML(name string, data map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: %s}\ndata:\n", name)
	ks := make([]string, 0, len(data))
	for k := range data {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		fmt.Fprintf(&b, "  %s: %s\n", k, base64.StdEncoding.EncodeToString([]byte(data[k])))
	}
	return b.String()
}

func alertIs(name, ns string, extra map[string]string) func(promstack.Message, promstack.Alert) bool {
	return func(_ promstack.Message, a promstack.Alert) bool {
		if a.Labels["alertname"] != name || a.Labels["namespace"] != ns {
			return false
		}
		for k, v := range extra {
			if a.Labels[k] != v {
				return false
			}
		}
		return true
	}
}

// testFaultAfterStart: a Deployment really runs with a Secret's key in its
// environment; the key is removed after the agent started: the running pod
// keeps the variable (read at start), driftwatch reports the missing key and
// Prometheus → Alertmanager pages. The fault stays for testAgentKilled.
func testFaultAfterStart(t *testing.T, s *stack) {
	c := s.c
	ns := c.NewNamespace(s.parent)
	c.Apply(t, ns, secretYAML("web-creds", map[string]string{"user": "app", "token": "node-e2e-token-value-1"}))
	c.Apply(t, ns, deployment("web", `        env:
        - {name: USER_NAME, valueFrom: {secretKeyRef: {name: web-creds, key: user}}}
        - {name: API_TOKEN, valueFrom: {secretKeyRef: {name: web-creds, key: token}}}`, ""))
	pod := runningPod(t, c, ns, "app=web", 2*time.Minute)
	r := waitReport(t, c, pod, "app", time.Minute, "web's report", func(r report) bool { return len(r.Env) > 0 })
	if !slices.Contains(r.Env, "API_TOKEN") || !slices.Contains(r.Env, "USER_NAME") {
		t.Fatalf("web runs without its variables: %v", r.Env)
	}
	s.waitSeries(t, "driftwatch_secret_last_data_change_timestamp_seconds", map[string]string{"namespace": ns, "secret": "web-creds"}, time.Minute)
	series, err := s.scrape()
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range findingSet(series) {
		if f.Labels["namespace"] == ns {
			t.Errorf("a healthy Deployment raised %s", k)
		}
	}

	from := s.hook.Count()
	c.Apply(t, ns, secretYAML("web-creds", map[string]string{"user": "app"})) // server-side apply: token removed
	s.waitSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "web-creds", "key": "token", "optional": "false"}, time.Minute)
	_, a := s.ps.WaitHook(t, s.hook, from, alertTimout, "the page for web-creds", alertIs("DriftwatchSecretMissingKeyConsumed", ns, map[string]string{"secret": "web-creds"}))
	if a.Status != "firing" || !strings.Contains(a.Annotations["description"], "token") {
		t.Errorf("the page: %s %q", a.Status, a.Annotations["description"])
	}
	t.Logf("fact: page %s %s: %s", a.Labels["alertname"], a.Status, a.Annotations["description"])
	r, err = lastReport(c, pod, "app")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fact: the running pod still has API_TOKEN in its environment (read at start): %v", slices.Contains(r.Env, "API_TOKEN"))
	s.faults = append(s.faults, ns)
}

// testOptionalKey: an optional secretKeyRef to a key the Secret lacks: the
// kubelet really starts the container without the variable (seen in the
// workload's output), and driftwatch reports the key. Where only the optional
// reference names the key it warns (a feature switched off: Argo CD's stock
// argocd-server reads its webhook.* keys so); where something else declares
// the key (here the Secret's driftwatch.io/expected-keys; an ExternalSecret,
// the Helm release or a GitOps revision alike) the same silent start pages,
// naming the key and the running reader.
func testOptionalKey(t *testing.T, s *stack) {
	c := s.c
	ns := c.NewNamespace(t)
	c.Apply(t, ns, secretYAML("app-config", map[string]string{"endpoint": "https://api.internal"}))
	c.Apply(t, ns, deployment("opt", `        env:
        - {name: ENDPOINT, valueFrom: {secretKeyRef: {name: app-config, key: endpoint}}}
        - {name: API_TOKEN, valueFrom: {secretKeyRef: {name: app-config, key: api-token, optional: true}}}`, ""))
	pod := runningPod(t, c, ns, "app=opt", 2*time.Minute)
	r := waitReport(t, c, pod, "app", time.Minute, "opt's report", func(r report) bool { return len(r.Env) > 0 })
	if !slices.Contains(r.Env, "ENDPOINT") {
		t.Fatalf("opt runs without ENDPOINT: %v", r.Env)
	}
	if slices.Contains(r.Env, "API_TOKEN") {
		t.Fatalf("opt has API_TOKEN although the Secret lacks api-token: %v", r.Env)
	}
	t.Logf("fact: the kubelet started %s/%s (%s) without API_TOKEN: its environment has %v", ns, pod.Name, podState(pod), r.Env)

	from := s.hook.Count()
	s.waitSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "app-config", "key": "api-token", "optional": "true"}, time.Minute)
	_, a := s.ps.WaitHook(t, s.hook, from, alertTimout, "the alert for app-config", alertIs("DriftwatchSecretOptionalKeyMissing", ns, map[string]string{"secret": "app-config"}))
	if !strings.Contains(a.Annotations["description"], "api-token") {
		t.Errorf("the alert does not name the key: %q", a.Annotations["description"])
	}
	t.Logf("fact: alert %s (%s) %s: %s", a.Labels["alertname"], a.Labels["severity"], a.Status, a.Annotations["description"])

	// The same optional reference to a key the Secret declares it has.
	c.Apply(t, ns, `apiVersion: v1
kind: Secret
metadata:
  name: billing-config
  annotations: {driftwatch.io/expected-keys: "endpoint,api-token"}
stringData: {endpoint: "https://billing.internal"}
`)
	c.Apply(t, ns, deployment("billing", `        env:
        - {name: ENDPOINT, valueFrom: {secretKeyRef: {name: billing-config, key: endpoint}}}
        - {name: API_TOKEN, valueFrom: {secretKeyRef: {name: billing-config, key: api-token, optional: true}}}`, ""))
	bpod := runningPod(t, c, ns, "app=billing", 2*time.Minute)
	br := waitReport(t, c, bpod, "app", time.Minute, "billing's report", func(r report) bool { return len(r.Env) > 0 })
	if !slices.Contains(br.Env, "ENDPOINT") || slices.Contains(br.Env, "API_TOKEN") {
		t.Fatalf("billing's environment: %v (want ENDPOINT and no API_TOKEN)", br.Env)
	}
	_, p := s.ps.WaitHook(t, s.hook, from, alertTimout, "the page for billing-config", func(m promstack.Message, a promstack.Alert) bool {
		return alertIs("DriftwatchSecretMissingKeyConsumed", ns, map[string]string{"secret": "billing-config"})(m, a) && a.Status == "firing"
	})
	for _, want := range []string{"api-token", "Deployment/billing"} {
		if !strings.Contains(p.Annotations["description"], want) {
			t.Errorf("the page does not name %s: %q", want, p.Annotations["description"])
		}
	}
	t.Logf("fact: page %s (%s) for a declared key the optional reader starts without: %s", p.Labels["alertname"], p.Labels["severity"], p.Annotations["description"])
	if _, a, ok := s.hook.Find(from, alertIs("DriftwatchSecretMissingKeyConsumed", ns, map[string]string{"secret": "app-config"})); ok {
		t.Errorf("a page for app-config, whose key only an optional reference names: %s %v", a.Status, a.Labels)
	}
}

// testStale: three Deployments read the same Secret, through a plain secret
// volume, a subPath mount of its key, and envFrom. The Secret changes (a
// value, and a key added): the kubelet refreshes the volume (the new key's
// file appears), not the subPath mount (it still holds the old, now deleted
// copy) nor the environment (no new variable); driftwatch reports the last two
// stale and not the first; `kubectl rollout restart` makes them current.
func testStale(t *testing.T, s *stack) {
	c, n := s.c, s.n
	ctx := ctxT(t, 10*time.Minute)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, secretYAML("rotating", map[string]string{"token": "node-e2e-rotating-v1"}))
	vol := `      volumes:
      - name: creds
        secret: {secretName: rotating}`
	c.Apply(t, ns, deployment("vol", `        args: [/etc/creds]
        volumeMounts: [{name: creds, mountPath: /etc/creds, readOnly: true}]`, vol))
	c.Apply(t, ns, deployment("sub", `        args: [/etc/sub]
        volumeMounts: [{name: creds, mountPath: /etc/sub/token, subPath: token, readOnly: true}]`, vol))
	c.Apply(t, ns, deployment("env", `        envFrom: [{secretRef: {name: rotating}}]`, ""))
	pods := map[string]*corev1.Pod{}
	for _, d := range []string{"vol", "sub", "env"} {
		pods[d] = runningPod(t, c, ns, "app="+d, 2*time.Minute)
		waitReport(t, c, pods[d], "app", time.Minute, d+"'s report", func(r report) bool { return len(r.Env) > 0 })
	}
	s.waitSeries(t, "driftwatch_secret_last_data_change_timestamp_seconds", map[string]string{"namespace": ns, "secret": "rotating"}, time.Minute)
	s.waitNoSeries(t, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns}, 5*time.Second)
	subMount, err := subPathMount(n, pods["sub"])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fact: the kubelet bind-mounted sub's subPath from %s", subMount)

	from := s.hook.Count()
	changed := time.Now()
	c.Apply(t, ns, secretYAML("rotating", map[string]string{"token": "node-e2e-rotating-v2", "rotated_at": "2026"}))

	// The kubelet refreshes the plain volume...
	waitReport(t, c, pods["vol"], "app", 3*time.Minute, "the kubelet refreshing vol's secret volume", func(r report) bool {
		return slices.Equal(visible(r.Dirs["/etc/creds"]), []string{"rotated_at", "token"})
	})
	t.Logf("fact: the kubelet refreshed vol's secret volume within %s of the change (rotated_at appeared)", time.Since(changed).Round(time.Second))
	// ...not the environment...
	r, err := lastReport(c, pods["env"], "app")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Env, "token") || slices.Contains(r.Env, "rotated_at") {
		t.Errorf("env's environment after the change: %v (want token, and no rotated_at: read at start)", r.Env)
	}
	// ...nor the subPath mount: still the copy from before the change, once
	// the kubelet has refreshed sub's own volume (each pod's on its own sync).
	var current string
	poll(t, 3*time.Minute, 500*time.Millisecond, "the kubelet refreshing sub's secret volume", func() (bool, string) {
		l, err := os.Readlink(filepath.Join(volumeDir(n, pods["sub"], "creds"), "..data"))
		if err != nil {
			return false, err.Error()
		}
		current = l
		return !strings.HasPrefix(subMount, "/"+l+"/"), l
	})
	after, err := subPathMount(n, pods["sub"])
	if err != nil {
		t.Fatal(err)
	}
	// The kernel marks a bind mount whose source was unlinked "//deleted":
	// the kubelet's atomic writer removed the old copy, the mount kept it.
	if strings.TrimSuffix(after, "//deleted") != subMount || strings.Contains(after, current) {
		t.Errorf("sub's subPath mount is %s after the change (before %s, the volume now at %s)", after, subMount, current)
	}
	t.Logf("fact: after the change the volume's ..data points to %s; sub's subPath mount still shows %s", current, after)

	// driftwatch: stale through subPath and envFrom, not through the volume.
	s.waitSeries(t, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns, "pod": pods["sub"].Name, "via": "volume_subpath", "change_source": "observed"}, time.Minute)
	s.waitSeries(t, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns, "pod": pods["env"].Name, "via": "envFrom", "change_source": "observed"}, time.Minute)
	series, err := s.scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range scrape.Find(series, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns}) {
		if x.Labels["pod"] == pods["vol"].Name {
			t.Errorf("the refreshed volume is reported stale: %s", x)
		}
	}
	for _, w := range []string{"sub", "env"} {
		_, a := s.ps.WaitHook(t, s.hook, from, alertTimout, "the stale-pods alert for "+w, alertIs("DriftwatchWorkloadStalePods", ns, map[string]string{"workload": w}))
		t.Logf("fact: alert %s %s: %s", a.Labels["alertname"], a.Status, a.Annotations["description"])
	}

	// kubectl rollout restart: new pods, started after the change.
	from = s.hook.Count()
	if out, err := c.Kubectl(ctx, "", "-n", ns, "rollout", "restart", "deployment/sub", "deployment/env"); err != nil {
		t.Fatalf("kubectl rollout restart: %v\n%s", err, out)
	}
	for _, d := range []string{"sub", "env"} {
		if out, err := c.Kubectl(ctx, "", "-n", ns, "rollout", "status", "deployment/"+d, "--timeout=3m"); err != nil {
			t.Fatalf("kubectl rollout status %s: %v\n%s", d, err, out)
		}
	}
	s.waitNoSeries(t, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns}, time.Minute)
	s.waitNoSeries(t, "driftwatch_workload_stale_pods", map[string]string{"namespace": ns}, time.Minute)
	newEnv := runningPod(t, c, ns, "app=env", 2*time.Minute)
	r = waitReport(t, c, newEnv, "app", time.Minute, "the restarted env's report", func(r report) bool { return len(r.Env) > 0 })
	if newEnv.Name == pods["env"].Name || !slices.Contains(r.Env, "rotated_at") {
		t.Errorf("after rollout restart env is %s with %v", newEnv.Name, r.Env)
	}
	for _, w := range []string{"sub", "env"} {
		s.ps.WaitHook(t, s.hook, from, alertTimout, "the stale-pods alert for "+w+" resolved", func(m promstack.Message, a promstack.Alert) bool {
			return alertIs("DriftwatchWorkloadStalePods", ns, map[string]string{"workload": w})(m, a) && a.Status == "resolved"
		})
	}
	t.Logf("fact: after kubectl rollout restart, %s has %v; the stale findings and alerts are gone", newEnv.Name, r.Env)
}

// volumeDir is the host folder of a pod's secret volume (kubelet root-dir).
func volumeDir(n *node.Node, p *corev1.Pod, volume string) string {
	return filepath.Join(n.Dir, "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~secret", volume)
}

// subPathMount returns the source (root within the volume's tmpfs) of the
// pod's one subPath bind mount, as the host's mountinfo shows it: the kubelet
// runs in the host's mount namespace.
func subPathMount(n *node.Node, p *corev1.Pod) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	prefix := filepath.Join(n.Dir, "kubelet", "pods", string(p.UID), "volume-subpaths") + "/"
	var found []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], prefix) {
			found = append(found, f[3])
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%d subPath mounts under %s: %v", len(found), prefix, found)
	}
	return found[0], nil
}

// agentAlerts are the alert names of the rules' driftwatch.agent group: about
// the agent itself (down, not synced), not about the cluster.
func agentAlerts(t *testing.T) map[string]bool {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "alerts", "driftwatch.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, g := range rules.Groups {
		if g.Name != "driftwatch.agent" {
			continue
		}
		for _, r := range g.Rules {
			out[r.Alert] = true
		}
	}
	if len(out) == 0 {
		t.Fatal("no driftwatch.agent group in alerts/driftwatch.rules.yaml")
	}
	return out
}

// testAgentKilled: the agent's process is SIGKILLed; the kubelet restarts the
// container; until it has synced again it serves no finding, and afterwards
// the findings of before: every one that does not depend on what the killed
// process had observed (no change_source label) comes back, nothing new is
// reported but what a fresh process infers from managedFields
// (change_source="managed_fields", info, never alerted), nothing pages that
// was not firing before. Then the fault of testFaultAfterStart is repaired
// and its page resolves.
func testAgentKilled(t *testing.T, s *stack) {
	c, n := s.c, s.n
	ctx := ctxT(t, 10*time.Minute)
	if len(s.faults) == 0 {
		t.Fatal("no fault in place (fault_after_start did not run)")
	}
	before, err := s.scrape()
	if err != nil {
		t.Fatal(err)
	}
	known := findingSet(before)
	for _, k := range keys(known) {
		t.Logf("finding before the kill: %s", known[k])
	}
	faultFound := false
	for _, f := range known {
		if slices.Contains(s.faults, f.Labels["namespace"]) {
			faultFound = true
		}
	}
	if !faultFound {
		t.Fatalf("the fault of %v is not reported before the kill: %v", s.faults, keys(known))
	}
	firing := map[string]bool{}
	res, err := s.ps.Query(`ALERTS{alertstate="firing"}`)
	if err != nil {
		t.Fatal(err)
	}
	alertKey := func(l map[string]string) string {
		return l["alertname"] + "/" + l["namespace"] + "/" + l["secret"] + "/" + l["workload"]
	}
	for _, r := range res {
		firing[alertKey(r.Metric)] = true
	}
	agentOnly := agentAlerts(t)

	pod := s.agentPod(t)
	restarts := pod.Status.ContainerStatuses[0].RestartCount
	pid, err := n.ContainerPID(ctx, pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	metricsPort, err := containerPort(pod, agentCtr, intstr.FromString("metrics"))
	if err != nil {
		t.Fatal(err)
	}
	readyURL, err := httpURL(pod, agentCtr, pod.Spec.Containers[0].ReadinessProbe)
	if err != nil {
		t.Fatal(err)
	}
	podMetrics := fmt.Sprintf("http://%s:%d/metrics", pod.Status.PodIP, metricsPort)
	from := s.hook.Count()
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the agent (host pid %d): %v", pid, err)
	}
	t.Logf("fact: SIGKILL to the agent (host pid %d, restarts %d)", pid, restarts)

	// Watch the pod directly until it is back, Ready, with every finding.
	var scrapes, unready, served int
	reportedNew := map[string]bool{}
	var missing []string
	var back, readyAgain time.Time
	poll(t, 3*time.Minute, 500*time.Millisecond, "the restarted agent Ready with its findings back", func() (bool, string) {
		// Scrape first, then ask /readyz: a 503 after the scrape means the
		// agent was not ready when it answered the scrape either (once synced
		// it stays ready). In the other order the agent may sync between the
		// two requests, and a scrape served after the sync would be counted
		// as served while unready (seen once here: synced 451 ms after start).
		series, serr := scrapeIn(n, podMetrics)
		code, _, rerr := get(n, readyURL)
		if serr == nil {
			scrapes++
			f := findingSet(series)
			if rerr != nil || code != 200 {
				unready++
				if len(f) > 0 {
					t.Errorf("findings served while /readyz answers %d (%v): %v", code, rerr, keys(f))
				}
			} else if len(f) > 0 {
				served++
			}
			for k, x := range f {
				if _, ok := known[k]; ok || reportedNew[k] {
					continue
				}
				reportedNew[k] = true
				if x.Labels["change_source"] == "managed_fields" {
					// Inferred at start-up from managedFields (info, never
					// alerted): what a restarted agent can know.
					t.Logf("fact: after the restart, inferred: %s", x)
				} else {
					t.Errorf("a finding not reported before the kill: %s", x)
				}
			}
			missing = missing[:0]
			for k, x := range known {
				if _, ok := f[k]; !ok && x.Labels["change_source"] == "" {
					missing = append(missing, k)
				}
			}
			if back.IsZero() && len(missing) == 0 {
				back = time.Now()
			}
		}
		p, err := c.Client.CoreV1().Pods(releaseNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, _ := podReady(p)
		if ready && readyAgain.IsZero() && p.Status.ContainerStatuses[0].RestartCount > restarts {
			readyAgain = time.Now()
		}
		return !readyAgain.IsZero() && !back.IsZero(), fmt.Sprintf("%s; scrape error %v; not back: %v", podState(p), serr, missing)
	})
	p, err := c.Client.CoreV1().Pods(releaseNS).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after, err := scrapeIn(n, podMetrics); err == nil {
		now := findingSet(after)
		for k, x := range known {
			if y, ok := now[k]; ok && x.Labels["change_source"] != y.Labels["change_source"] {
				t.Logf("fact: after the restart %s is change_source=%q (before: %q)", k, y.Labels["change_source"], x.Labels["change_source"])
			} else if !ok {
				t.Logf("fact: after the restart %s is gone (change_source %q before: what this process had observed)", k, x.Labels["change_source"])
			}
		}
	}
	t.Logf("fact: the kubelet restarted the agent (%s); Ready again %s and the findings back %s after the kill; %d scrapes of the pod meanwhile (%d while unready, none with a finding; %d ready with findings)",
		podState(p), readyAgain.Sub(killed).Round(100*time.Millisecond), back.Sub(killed).Round(100*time.Millisecond), scrapes, unready, served)

	// Give any false alert the time to fire (every `for` is 5s here), then
	// read every notification since the kill. The window ends well inside
	// keep_firing_for after the kill: an alert firing before is never sent
	// resolved in it, not even one whose finding the new process cannot know.
	time.Sleep(15 * time.Second)
	if w := time.Since(killed); w >= keepFiringFor {
		t.Fatalf("the restart took %s, beyond keep_firing_for %s: the window proves nothing", w.Round(time.Second), keepFiringFor)
	}
	msgs, _ := s.hook.Messages(from)
	for _, m := range msgs {
		for _, a := range m.Alerts {
			switch {
			case agentOnly[a.Labels["alertname"]]:
				t.Logf("fact: agent alert during the restart: %s %s (its shipped `for` is minutes; here 5s)", a.Labels["alertname"], a.Status)
			case a.Status == "firing" && !firing[alertKey(a.Labels)]:
				t.Errorf("false page after the restart: %s %v", a.Status, a.Labels)
			case a.Status == "resolved" && firing[alertKey(a.Labels)]:
				t.Errorf("an alert firing before the kill was sent resolved across the restart (keep_firing_for %s): %v", keepFiringFor, a.Labels)
			default:
				t.Logf("fact: notification after the restart for an alert firing before: %s %s", a.Labels["alertname"], a.Status)
			}
		}
	}

	// Repair the fault: its page resolves.
	ns := s.faults[0]
	from = s.hook.Count()
	c.Apply(t, ns, secretYAML("web-creds", map[string]string{"user": "app", "token": "node-e2e-token-value-1"}))
	s.waitNoSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns}, time.Minute)
	s.ps.WaitHook(t, s.hook, from, alertTimout, "the page for web-creds resolved", func(m promstack.Message, a promstack.Alert) bool {
		return alertIs("DriftwatchSecretMissingKeyConsumed", ns, nil)(m, a) && a.Status == "resolved"
	})
}

// testNetworkStaysInside reads the network rule's evidence from the kernel
// while the node runs pods: the node's namespace has no link but loopback, the
// bridge and veths whose peers are elsewhere, no link of the host's namespace
// has its peer in the node's (so the veths lead to pods), and it has no
// default route (IPv4 or IPv6); a pod routes its own subnet and the Service
// range, nothing else.
func testNetworkStaysInside(t *testing.T, s *stack) {
	n := s.n
	ctx := ctxT(t, 2*time.Minute)
	links, err := n.RunIP(ctx, "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if name != "lo" && name != "cni0" && !strings.HasPrefix(name, "veth") {
			t.Errorf("a link in the node's namespace that is not loopback, the bridge or a pod's veth: %s", line)
		}
		if strings.HasPrefix(name, "veth") && !strings.Contains(line, "link-netnsid") {
			t.Errorf("a veth whose peer is in the node's namespace itself: %s", line)
		}
	}
	// No link of the host's namespace has its peer in the node's.
	ipBin, err := tools.Tool("ip")
	if err != nil {
		t.Fatal(err)
	}
	hostLinks, err := exec.CommandContext(ctx, ipBin, "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(hostLinks), "\n") {
		if strings.Contains(line, "link-netns "+n.Netns) {
			t.Errorf("a link of the host's namespace reaches into the node's: %s", line)
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		routes, err := n.RunIP(ctx, fam, "route", "show", "table", "all")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(routes), "\n") {
			if strings.HasPrefix(line, "default") {
				t.Errorf("the node's namespace has a default route: %s", line)
			}
		}
		t.Logf("fact: node namespace %s routes:\n%s", fam, routes)
	}
	p := s.agentPod(t)
	path, err := n.PodNetns(ctx, p.Namespace, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := n.RunIPIn(ctx, path, "-4", "route", "show", "table", "main")
	if err != nil {
		t.Fatal(err)
	}
	var dsts []string
	for _, line := range strings.Split(strings.TrimSpace(routes), "\n") {
		dsts = append(dsts, strings.Fields(line)[0])
	}
	slices.Sort(dsts)
	if want := []string{node.ServiceCIDR, node.PodCIDR}; !slices.Equal(dsts, want) {
		t.Errorf("the agent pod routes %v, want only %v:\n%s", dsts, want, routes)
	}
	t.Logf("fact: links of the node's namespace:\n%s\nthe agent pod's routes:\n%s", links, routes)
}
