package fullchain

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// crashKeep is the finding alerts' keep_firing_for in this test (15m
// shipped). The restart alert fires about 4 minutes into a real
// CrashLoopBackOff (3 restarts seen; the kubelet's backoff starts at 10 s),
// here with every `for` at promstack.ShortFor and a backoff from 1 s, about
// 15 s in: the same proportion. Long enough that an ordinary restart does not
// resolve the page, short enough that the loop outlives it and the page is
// seen to resolve: the restart alert must come first.
const crashKeep = 45 * time.Second

// The agent alerts that page.
var agentPages = map[string]bool{"DriftwatchCrashLooping": true, "DriftwatchDown": true, "DriftwatchNotEvaluating": true}

// TestCrashLoopPagesBeforePagesResolve (issue 31): a page fires; an ordinary
// restart pages nothing; then the agent crash-loops (SIGKILLed, restarted
// after a backoff doubling from 1 s, each life unable to reach the apiserver
// so that, like an OOM kill on the initial list, it answers scrapes but never
// syncs and serves no finding). DriftwatchCrashLooping reaches the real
// Alertmanager within its `for` of the third restart Prometheus saw, while the
// finding page is still firing; the page resolves only later, once
// keep_firing_for has run out (what the restart alert is there for).
func TestCrashLoopPagesBeforePagesResolve(t *testing.T) {
	t0 := time.Now()
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	step := func(format string, args ...any) {
		t.Logf("[%s] %s", time.Since(t0).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	}
	// The page: a pod requires key TOKEN, Secret app lacks it.
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {USER: crashloop-e2e-user}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: USER, valueFrom: {secretKeyRef: {name: app, key: USER}}}
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: app, key: TOKEN}}}
`)
	agent := c.StartAgent(t, "--namespaces", ns)
	agent.WaitReady(t, waitFinding)
	agent.WaitForSeries(t, "driftwatch_secret_missing_keys", map[string]string{"namespace": ns, "secret": "app", "source": "pod"}, waitFinding)
	hook := promstack.NewWebhook(t)
	ps := promstack.StartWith(t, c, []promstack.Target{{Addr: agent.Addr}}, hook, promstack.Options{KeepFiringFor: crashKeep.String()})
	step("agent, Prometheus %s and Alertmanager %s ready", ps.PromURL, ps.AMURL)

	shortFor, err := time.ParseDuration(promstack.ShortFor)
	if err != nil {
		t.Fatal(err)
	}
	isPage := func(a promstack.Alert) bool {
		return a.Labels["alertname"] == pageAlert && a.Labels["namespace"] == ns && a.Labels["secret"] == "app"
	}
	ps.WaitHook(t, hook, 0, waitPage, "the firing page", func(m promstack.Message, a promstack.Alert) bool {
		return isPage(a) && a.Status == "firing"
	})
	step("the page fires")

	// ---- an ordinary restart pages nothing ---------------------------------
	restarts := func() float64 {
		t.Helper()
		res, err := ps.Query(`max(changes(process_start_time_seconds{job="driftwatch"}[30m]))`)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 {
			t.Fatalf("Prometheus has no process_start_time_seconds of the agent: %v", res)
		}
		v, err := strconv.ParseFloat(fmt.Sprint(res[0].Value[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if n := restarts(); n != 0 {
		t.Fatalf("%v restarts before any", n)
	}
	from := hook.Count()
	if err := agent.Stop(); err != nil {
		t.Errorf("the agent's exit on SIGTERM: %v", err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agent.WaitReady(t, waitFinding)
	agent.WaitForSeries(t, "driftwatch_secret_missing_keys", map[string]string{"namespace": ns, "secret": "app", "source": "pod"}, waitFinding)
	waitFor(t, time.Minute, "Prometheus to see the restart", func() bool { return restarts() == 1 })
	// Every `for` is promstack.ShortFor: three of them, and more.
	time.Sleep(3*shortFor + 2*time.Second)
	msgs, _ := hook.Messages(from)
	for _, m := range msgs {
		for _, a := range m.Alerts {
			if agentPages[a.Labels["alertname"]] && a.Status == "firing" {
				t.Errorf("a single restart paged: %v", a.Labels)
			}
			if isPage(a) && a.Status == "resolved" {
				t.Errorf("a single restart resolved the page: %v", a.Labels)
			}
		}
	}
	step("a single restart: no agent page, the page still firing")

	// ---- the crash loop ------------------------------------------------------
	// Each life's kubeconfig points at a closed port: the process listens,
	// answers scrapes (a new process_start_time_seconds, up=1), never syncs.
	kc, err := os.ReadFile(c.AgentKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	server := regexp.MustCompile(`(?m)^(\s*server:\s*)\S+$`)
	if !server.Match(kc) {
		t.Fatalf("no server: line in %s", c.AgentKubeconfig)
	}
	dead := filepath.Join(t.TempDir(), "dead.kubeconfig")
	if err := os.WriteFile(dead, server.ReplaceAll(kc, []byte(fmt.Sprintf("${1}https://127.0.0.1:%d", ports[0]))), 0o600); err != nil {
		t.Fatal(err)
	}
	crash := func(a *cluster.Agent) {
		t.Helper()
		if pid := a.PID(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = a.Stop() // reaps it
	}
	from = hook.Count()
	crashed := time.Now()
	crash(agent)
	step("crash loop: the agent SIGKILLed")
	isRestartAlert := func(a promstack.Alert) bool {
		return a.Labels["alertname"] == "DriftwatchCrashLooping" && a.Status == "firing"
	}
	var seen3, alerted, resolved time.Time
	backoff, lives := time.Second, 0
	for deadline := time.Now().Add(crashKeep + 3*time.Minute); resolved.IsZero(); {
		if time.Now().After(deadline) {
			t.Fatalf("after %d lives: restart alert at %v, page resolved at %v; notifications:\n%s", lives, alerted, resolved, hook.Dump())
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 8*time.Second)
		before := restarts()
		life := c.StartAgent(t, "--namespaces", ns, "--listen", agent.Addr, "--kubeconfig", dead)
		lives++
		// The kubelet does not wait for a scrape; this test does, so that
		// every life is seen and the count is known.
		waitFor(t, time.Minute, "Prometheus to scrape the new life", func() bool { return restarts() > before })
		if seen3.IsZero() && restarts() >= 3 {
			seen3 = time.Now()
			step("Prometheus has seen 3 restarts (life %d)", lives)
		}
		// life.URL is the port StartAgent chose; the life listens on agent's.
		if code, _, err := agent.Get("/readyz"); err != nil || code == 200 {
			t.Fatalf("a life that cannot reach the apiserver is ready (%d, %v): the loop would serve findings", code, err)
		}
		crash(life)
		msgs, ats := hook.Messages(from)
		for i, m := range msgs {
			for _, a := range m.Alerts {
				if alerted.IsZero() && isRestartAlert(a) {
					alerted = ats[i]
					step("DriftwatchCrashLooping delivered: %v", a.Labels)
				}
				if resolved.IsZero() && isPage(a) && a.Status == "resolved" {
					resolved = ats[i]
					step("the page resolved")
				}
			}
		}
	}
	ps.Alive(t)
	switch {
	case alerted.IsZero():
		t.Errorf("the page resolved %s after the crash and DriftwatchCrashLooping never came; notifications:\n%s",
			resolved.Sub(crashed).Round(time.Second), hook.Dump())
	case !alerted.Before(resolved):
		t.Errorf("DriftwatchCrashLooping came %s after the crash, the page resolved before it (%s): a silent all-clear",
			alerted.Sub(crashed).Round(time.Second), resolved.Sub(crashed).Round(time.Second))
	case seen3.IsZero():
		t.Errorf("DriftwatchCrashLooping fired before Prometheus saw 3 restarts")
	default:
		// Within its `for` of the third restart seen (plus an evaluation, a
		// scrape and Alertmanager's group_wait, 1 s each, and room for a
		// loaded machine).
		if d := alerted.Sub(seen3); d > shortFor+20*time.Second {
			t.Errorf("DriftwatchCrashLooping came %s after the third restart was seen; its for is %s", d.Round(time.Second), promstack.ShortFor)
		}
	}
	if r := resolved.Sub(crashed); r < crashKeep {
		t.Errorf("the page resolved %s after the crash, before keep_firing_for %s", r.Round(time.Second), crashKeep)
	}
	t.Logf("fact: %d lives; restart alert %s after the crash (%s after the third restart seen), page resolved %s after it (keep_firing_for %s)",
		lives, alerted.Sub(crashed).Round(100*time.Millisecond), alerted.Sub(seen3).Round(100*time.Millisecond),
		resolved.Sub(crashed).Round(100*time.Millisecond), crashKeep)
	msgs, _ = hook.Messages(from)
	for _, m := range msgs {
		for _, a := range m.Alerts {
			if agentPages[a.Labels["alertname"]] && !isRestartAlert(a) {
				t.Logf("fact: during the loop: %s %s", a.Labels["alertname"], a.Status)
			}
		}
	}
	step("done")
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
