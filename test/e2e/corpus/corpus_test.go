package corpus

// What the real components did in these runs (kubectl, kube-apiserver and
// kube-controller-manager v1.37.2, helm v3.22.0, ESO v0.20.4); the test logs
// the same facts (key names, labels and managers, never values) on every run
// as "fact:" lines:
//
//   - ServiceAccount token Secret applied with kubectl apply (no data): the
//     token controller fills ca.crt, namespace and token in the same second as
//     managedFields manager "kube-controller-manager" (Update; it also owns the
//     kubernetes.io/service-account.uid annotation); "kubectl-client-side-apply"
//     (Update) owns the last-applied annotation, the service-account.name
//     annotation and type. The last-applied annotation holds no data: the
//     three keys exist only in live and survive every apply.
//   - kubectl patch (strategic merge, adding a data key): manager
//     "kubectl-patch", Update, owning only the new key; the last-applied
//     annotation is left unchanged. A later kubectl apply of the unchanged
//     manifest keeps the patched key (it was never in last-applied) and, being
//     a no-op, writes no managedFields entry: the apply manager's time stays
//     the first apply's, older than the patch.
//   - kubectl edit without --save-config (kubectl v1.37.2 editoptions.go only
//     touches the annotation when --save-config is set): manager
//     "kubectl-edit", Update, owning only the added key; the last-applied
//     annotation, although present, is left unchanged.
//   - kubectl label / annotate: managers "kubectl-label" / "kubectl-annotate",
//     Update, owning only metadata.labels / metadata.annotations entries.
//   - kubectl delete + apply: a new uid; one "kubectl-client-side-apply"
//     entry.
//   - helm install / upgrade (chart objects): manager "helm" (lower case),
//     Update, owning labels, the meta.helm.sh annotations and type; the webhook
//     Secret the chart creates has no data. The release Secrets
//     sh.helm.release.v1.<name>.vN (type helm.sh/release.v1, key release) are
//     written by manager "Helm" (capital H), labels name, owner=helm, status
//     (deployed; superseded after an upgrade), version, modifiedAt.
//   - ESO's cert-controller fills the webhook Secret with ca.crt, ca.key,
//     tls.crt, tls.key as manager "external-secrets" (the binary's name),
//     Update, about a second after helm install. A labels-only helm upgrade
//     patches the labels (helm's entry moves to the upgrade's time) and keeps
//     the cert-controller's data.
//   - ESO writes an Owner target as manager
//     "externalsecrets.external-secrets.io/<name>" (Update) and copies the
//     ExternalSecret's last-applied annotation onto it; with creationPolicy
//     None it reports Ready=True and writes nothing (the target stays absent).
//   - argocd-secret from install.yaml has no data (last-applied holds none);
//     argocd-server cannot run here (no kubelet): its InitializeSettings
//     writes are reproduced from its source (two Updates as "argocd-server"
//     adding admin.password, admin.passwordMtime, server.secretkey, tls.crt,
//     tls.key). A second kubectl apply of install.yaml keeps those keys.

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/pages"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

const (
	argoNS = "argocd"
	esoNS  = "external-secrets"
	// esoRelease is the Helm release name: the chart's objects are named
	// after it (external-secrets-webhook ...), as in the chart's README.
	esoRelease    = "external-secrets"
	webhookSecret = "external-secrets-webhook"

	// soakFor is the minimum length of the benign churn after readiness.
	soakFor = 2*time.Minute + 10*time.Second
	// scrapeEvery is the monitor's scrape interval.
	scrapeEvery = 2 * time.Second
	// Generous: two shared cores, several stacks at once.
	waitFinding = 3 * time.Minute
	waitPage    = 3 * time.Minute
)

// The real faults and the page each must raise.
var argoRedisPage = pages.Page{Alert: "DriftwatchSecretAbsentConsumed", Object: argoNS + "/argocd-redis"}

// argoRedisReaders are the workloads of install.yaml that read argocd-redis's
// key auth through a non-optional secretKeyRef (REDIS_PASSWORD).
var argoRedisReaders = []struct{ kind, name string }{
	{"Deployment", "argocd-server"},
	{"Deployment", "argocd-repo-server"},
	{"StatefulSet", "argocd-application-controller"},
	{"Deployment", "argocd-redis"},
}

var esGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// appObjects are the plain application objects (kubectl apply, client-side).
// billing is also the second real fault: its db-pass key is removed and
// restored later. Values are test strings.
func appObjects(billingKeys ...string) string {
	billing := ""
	for _, k := range billingKeys {
		billing += fmt.Sprintf("  %s: %s\n", k, b64("corpus-"+k))
	}
	return `apiVersion: v1
kind: ServiceAccount
metadata: {name: app-sa}
---
# a long-lived token: the token controller fills token, ca.crt, namespace
apiVersion: v1
kind: Secret
metadata:
  name: app-sa-token
  annotations: {kubernetes.io/service-account.name: app-sa}
type: kubernetes.io/service-account-token
---
# gets keys with kubectl patch; api reads username
apiVersion: v1
kind: Secret
metadata: {name: patched}
data:
  username: ` + b64("corpus-user") + `
  password: ` + b64("corpus-password") + `
---
# gets keys with kubectl edit; worker reads a
apiVersion: v1
kind: Secret
metadata: {name: edited}
stringData: {a: corpus-a}
---
# relabelled and annotated with kubectl; labeler reads LABELED_KEY
apiVersion: v1
kind: Secret
metadata: {name: labeled}
stringData: {LABELED_KEY: corpus-labeled}
---
# deleted and re-created with the same data; recycler reads token
apiVersion: v1
kind: Secret
metadata: {name: recreated}
stringData: {token: corpus-recreated-token}
---
apiVersion: v1
kind: Secret
metadata: {name: billing}
data:
` + billing +
		deployment("api", "patched", "username") +
		deployment("worker", "edited", "a") +
		deployment("labeler", "labeled", "LABELED_KEY") +
		deployment("recycler", "recreated", "token") +
		deployment("db-client", "db-creds", "password") +
		deployment("billing", "billing", "db-pass")
}

// recreatedManifest is the recreated Secret alone (the same data each time).
const recreatedManifest = `apiVersion: v1
kind: Secret
metadata: {name: recreated}
stringData: {token: corpus-recreated-token}
`

// deployment is a one-replica Deployment whose container reads one key of a
// Secret through a non-optional secretKeyRef.
func deployment(name, secret, key string) string {
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: app
        image: example/app:1
        env:
        - {name: VALUE, valueFrom: {secretKeyRef: {name: %[2]s, key: %[3]s}}}
`, name, secret, key)
}

// esoObjects: a fake-provider store, an ordinary ExternalSecret (Owner) whose
// Secret db-client reads, and one with creationPolicy None whose target
// nobody creates (ESO writes nothing and reports Ready).
const esoObjects = `apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: fake-store}
spec:
  provider:
    fake:
      data:
      - {key: db-password, value: corpus-db-password}
      - {key: shared-token, value: corpus-shared-token}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db-creds}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: fake-store, kind: SecretStore}
  target: {name: db-creds}
  data:
  - {secretKey: password, remoteRef: {key: db-password}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: none-policy}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: fake-store, kind: SecretStore}
  target: {name: none-target, creationPolicy: None}
  data:
  - {secretKey: token, remoteRef: {key: shared-token}}
`

// run carries the test's shared state.
type run struct {
	t     *testing.T
	c     *cluster.Cluster
	ctx   context.Context
	ns    string
	t0    time.Time
	mon   *pages.Monitor
	argo  struct{ crds, rest string }
	chart string
}

func (r *run) step(format string, args ...any) {
	r.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if r.mon != nil {
		r.mon.SetPhase(msg)
	}
	r.t.Logf("[%s] %s", time.Since(r.t0).Round(100*time.Millisecond), msg)
}

func (r *run) fact(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("fact: "+format, args...)
}

func (r *run) kubectl(stdin string, args ...string) string {
	r.t.Helper()
	out, err := r.c.Kubectl(r.ctx, stdin, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *run) helm(args ...string) string {
	r.t.Helper()
	out, err := r.c.Helm(r.ctx, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *run) secret(ns, name string) *corev1.Secret {
	r.t.Helper()
	s, err := r.c.Client.CoreV1().Secrets(ns).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatalf("get Secret %s/%s: %v", ns, name, err)
	}
	return s
}

// waitFor polls cond every 250 ms until it holds or timeout passes.
func (r *run) waitFor(what string, timeout time.Duration, cond func() (bool, error)) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("waiting for %s: not within %s (last error: %v)", what, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestCorpus(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r := &run{t: t, c: c, ctx: ctx, t0: time.Now()}
	r.ns = c.NewNamespace(t)

	// ---- the upstream objects ------------------------------------------------------
	r.installArgoCD()
	r.installESOObjects()
	r.installESOChart()
	r.step("applying the app objects to %s", r.ns)
	r.kubectl(appObjects("db-user", "db-pass"), "apply", "-n", r.ns, "-f", "-")
	r.waitFor("the token controller to fill app-sa-token", time.Minute, func() (bool, error) {
		s, err := c.Client.CoreV1().Secrets(r.ns).Get(ctx, "app-sa-token", metav1.GetOptions{})
		return err == nil && len(s.Data["token"]) > 0, err
	})
	r.fact("the token Secret after the token controller: %s", secretFacts(ctx, c, r.ns, "app-sa-token"))
	// The app pods start now, after their Secrets exist (as a kubelet would).
	for _, d := range []string{"api", "worker", "labeler", "recycler", "db-client", "billing"} {
		r.markRunning(r.ns, "app="+d, 1)
	}
	r.markRunning(esoNS, "app.kubernetes.io/name=external-secrets-webhook", 1)
	r.fact("%s", secretFacts(ctx, c, esoNS, "sh.helm.release.v1."+esoRelease+".v1"))
	r.fact("%s", secretFacts(ctx, c, esoNS, webhookSecret))
	r.fact("%s", secretFacts(ctx, c, argoNS, "argocd-secret"))
	r.fact("%s", secretFacts(ctx, c, argoNS, "argocd-notifications-secret"))
	r.fact("%s", secretFacts(ctx, c, r.ns, "db-creds"))
	r.fact("%s", secretFacts(ctx, c, r.ns, "none-target"))

	// ---- the agent, the monitor, Prometheus and Alertmanager ------------------------------
	agent := c.StartAgent(t)
	mon := pages.NewMonitor(agent, scrapeEvery)
	// The fault is there from the start: its page is allowed until the
	// agent has cleared it.
	closeRedis := mon.AllowFault(argoRedisPage)
	agent.WaitReady(t, waitFinding)
	mon.Start()
	r.mon = mon
	r.step("agent ready (all namespaces)")
	hook := promstack.NewWebhook(t)
	isRedisPage := func(a promstack.Alert) bool {
		return a.Labels["alertname"] == argoRedisPage.Alert && a.Labels["namespace"] == argoNS && a.Labels["secret"] == "argocd-redis"
	}
	billingPage := pages.Page{Alert: "DriftwatchSecretMissingKeyConsumed", Object: r.ns + "/billing"}
	isBillingPage := func(a promstack.Alert) bool {
		return a.Labels["alertname"] == billingPage.Alert && a.Labels["namespace"] == r.ns && a.Labels["secret"] == "billing"
	}
	var soakMark, soakEnd = -1, -1
	var ps *promstack.Stack
	// The verdicts run even when a step stops the test, so every run
	// reports what the agent served.
	defer func() {
		mon.Finish()
		r.mon = nil
		t.Logf("every finding series the agent served after readiness [phase first seen .. phase last seen]:\n%s", mon.Report())
		if pre := mon.PreReadyFindings(); len(pre) > 0 {
			t.Errorf("findings served while the agent was not ready (nothing may be reported before the caches sync):\n  %s", strings.Join(pre, "\n  "))
		}
		if unexpected := mon.UnexpectedPages(); len(unexpected) > 0 {
			t.Errorf("%d page-grade finding(s) on the healthy corpus (outside the two real faults' windows):\n  %s", len(unexpected), strings.Join(unexpected, "\n  "))
		}
		// The chain: no page but the two real faults', and none of theirs
		// during the soak.
		msgs, ats := hook.Messages(0)
		var stray, strayNames []string
		seenStray := map[string]bool{}
		for i, m := range msgs {
			inSoak := soakMark >= 0 && i >= soakMark && (soakEnd < 0 || i < soakEnd)
			for _, a := range m.Alerts {
				if a.Status != "firing" || a.Labels["severity"] != "critical" {
					continue
				}
				if (isRedisPage(a) || isBillingPage(a)) && !inSoak {
					continue
				}
				// A group (alertname, namespace, secret) re-lists its firing
				// alerts in each notification: name each alert once.
				key := fmt.Sprint(a.Labels, inSoak)
				if seenStray[key] {
					continue
				}
				seenStray[key] = true
				when := "outside the soak"
				if inSoak {
					when = "during the soak"
				}
				stray = append(stray, fmt.Sprintf("%s, first in notification #%d at +%s: %v", when, i, ats[i].Sub(r.t0).Round(time.Second), a.Labels))
				strayNames = append(strayNames, a.Labels["alertname"])
			}
		}
		if len(stray) > 0 {
			t.Errorf("Alertmanager delivered %d page(s) (severity critical, firing) other than the two real faults' outside the soak:\n  %s", len(stray), strings.Join(stray, "\n  "))
			// An agent alert (DriftwatchDown...): what Prometheus saw of
			// the agent's scrapes, with times after r.t0 as above.
			ps.LogScrapeHistory(t, "driftwatch", r.t0, strayNames...)
		}
		t.Logf("Alertmanager notifications:\n%s", hook.Dump())
	}()
	ps = promstack.Start(t, c, agent.Addr, hook)
	r.step("prometheus %s and alertmanager %s ready", ps.PromURL, ps.AMURL)

	// ---- real fault 1: Argo CD without argocd-redis ---------------------------------
	r.step("fault 1: argocd-redis absent (no kubelet runs the redis pod's secret-init)")
	r.expect(agent, true, "driftwatch_secret_absent", map[string]string{"namespace": argoNS, "secret": "argocd-redis", "source": "pod"})
	for _, w := range argoRedisReaders {
		r.expect(agent, true, "driftwatch_secret_missing_key_consumer_pods",
			map[string]string{"namespace": argoNS, "secret": "argocd-redis", "workload_kind": w.kind, "workload": w.name})
	}
	if a, ok := r.expectHook(ps, hook, 0, "the argocd-redis page", func(a promstack.Alert) bool {
		return isRedisPage(a) && a.Status == "firing"
	}); ok {
		if a.Labels["severity"] != "critical" {
			t.Errorf("argocd-redis alert severity %q, want critical", a.Labels["severity"])
		}
		r.step("fault 1 found and paged: %v", a.Labels)
	}
	mark := hook.Count()
	fixed := time.Now().Truncate(time.Second)
	// What `argocd admin redis-initial-password` (the init container) does:
	// a Create of argocd-redis with key auth, as the argocd binary.
	_, err := c.Client.CoreV1().Secrets(argoNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-redis"},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"auth": []byte("corpus-redis-auth-0123")},
	}, metav1.CreateOptions{FieldManager: "argocd"})
	if err != nil {
		t.Fatal(err)
	}
	r.expect(agent, false, "driftwatch_secret_absent", map[string]string{"namespace": argoNS, "secret": "argocd-redis"})
	r.expect(agent, false, "driftwatch_secret_missing_key_consumer_pods", map[string]string{"namespace": argoNS, "secret": "argocd-redis"})
	closeRedis()
	r.expectHook(ps, hook, mark, "the argocd-redis page's resolution", func(a promstack.Alert) bool {
		return isRedisPage(a) && a.Status == "resolved" && !a.EndsAt.Before(fixed)
	})
	r.step("fault 1 fixed (argocd-redis created as the init container does)")

	// With argocd-redis there, Argo CD's pods start; argocd-server then
	// initialises its settings (util/settings InitializeSettings).
	r.startArgoCD()

	// ---- the soak: benign churn, no page ------------------------------------------------
	soakStart := time.Now()
	soakMark = hook.Count()
	r.soak(agent, soakStart)
	r.step("soak: settling (alerts have for: %s)", promstack.ShortFor)
	time.Sleep(15 * time.Second)
	soakEnd = hook.Count()
	r.step("soak done: %s of churn and settling", time.Since(soakStart).Round(time.Second))

	// ---- real fault 2: a key removed from a consumed Secret -----------------------------------
	closeBilling := mon.AllowFault(billingPage)
	r.step("fault 2: db-pass removed from billing (kubectl apply without it), the billing pod reads it")
	r.kubectl(appObjects("db-user"), "apply", "-n", r.ns, "-f", "-")
	if _, ok := r.secret(r.ns, "billing").Data["db-pass"]; ok {
		t.Fatal("kubectl apply did not remove db-pass from billing")
	}
	r.expect(agent, true, "driftwatch_secret_missing_key", map[string]string{"namespace": r.ns, "secret": "billing", "key": "db-pass", "source": "pod"})
	r.expect(agent, true, "driftwatch_secret_missing_key_consumer_pods", map[string]string{"namespace": r.ns, "secret": "billing", "workload_kind": "Deployment", "workload": "billing"})
	if a, ok := r.expectHook(ps, hook, soakEnd, "the billing page", func(a promstack.Alert) bool {
		return isBillingPage(a) && a.Status == "firing"
	}); ok {
		if a.Labels["severity"] != "critical" {
			t.Errorf("billing alert severity %q, want critical", a.Labels["severity"])
		}
		r.step("fault 2 found and paged: %v", a.Labels)
	}
	mark = hook.Count()
	fixed = time.Now().Truncate(time.Second)
	r.kubectl(appObjects("db-user", "db-pass"), "apply", "-n", r.ns, "-f", "-")
	r.expect(agent, false, "driftwatch_secret_missing_key", map[string]string{"namespace": r.ns, "secret": "billing"})
	r.expect(agent, false, "driftwatch_secret_missing_key_consumer_pods", map[string]string{"namespace": r.ns, "secret": "billing"})
	closeBilling()
	r.expectHook(ps, hook, mark, "the billing page's resolution", func(a promstack.Alert) bool {
		return isBillingPage(a) && a.Status == "resolved" && !a.EndsAt.Before(fixed)
	})
	r.step("fault 2 fixed (db-pass restored)")
	time.Sleep(2 * scrapeEvery)
}

// expect waits until a scrape of the agent has (present) or lacks (!present)
// a series named name carrying labels. A miss is an error, not fatal: the
// run goes on and reports the rest.
func (r *run) expect(a *cluster.Agent, present bool, name string, labels map[string]string) bool {
	r.t.Helper()
	_, ok := pages.ExpectSeries(r.t, a, waitFinding, present, name, labels)
	return ok
}

// expectHook waits for a notification received at index from or later with
// an alert that matches; a miss is an error, not fatal.
func (r *run) expectHook(ps *promstack.Stack, hook *promstack.Webhook, from int, what string, match func(promstack.Alert) bool) (promstack.Alert, bool) {
	r.t.Helper()
	return pages.ExpectHook(r.t, ps, hook, from, waitPage, what, match)
}
