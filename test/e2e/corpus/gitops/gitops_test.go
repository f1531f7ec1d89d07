package gitops

// What the real components did in these runs (Argo CD v3.2.9, ESO v0.20.4,
// kube-apiserver and kube-controller-manager v1.37.2) is logged on every run
// as "fact:" lines (key names, reasons, managers; never values); see
// docs/design.md "Precision" for the summary.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
	"github.com/driftwatch/driftwatch/test/e2e/pages"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

const (
	esoNS  = "external-secrets"
	esoApp = "external-secrets" // the Application, so the Helm release name: objects are named after it
	// webhookSecret is the chart's webhook Secret (rendered without data;
	// ESO's cert-controller fills it).
	webhookSecret = "external-secrets-webhook"
	store         = "gitops-corpus"

	// pendingFor: the manual-sync Application stays one commit behind at
	// least this long while the monitor scrapes.
	pendingFor = 70 * time.Second
	// scrapeEvery is the monitor's scrape interval.
	scrapeEvery = 2 * time.Second
	// Generous: two shared cores, several stacks at once.
	waitArgo    = 3 * time.Minute
	waitFinding = 3 * time.Minute
	waitPage    = 3 * time.Minute
)

// clusterStore is the platform team's ClusterSecretStore (fake provider);
// values are test strings.
const clusterStore = `apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: ` + store + `}
spec:
  provider:
    fake:
      data:
      - {key: db-user, value: shop}
      - {key: db-pass, value: gitops-corpus-db-pass}
      - {key: billing-user, value: billing}
      - {key: billing-token, value: gitops-corpus-billing-token}
`

// esoApplication installs ESO's chart from the repository the way ESO's
// documentation and issues tell Argo CD users to:
//
//   - syncOptions ServerSideApply=true: ESO's CRDs exceed the 256 KiB
//     last-applied annotation since v0.19 (v0.20.4 docs/introduction/
//     getting-started.md: "You have to use server-side-apply in all locations";
//     the v0.19.0 release notes give Argo CD users this very syncOption;
//     external-secrets#5098);
//   - the webhooks' caBundle in ignoreDifferences: ESO's cert-controller
//     injects it into the ValidatingWebhookConfigurations the chart renders
//     without one (external-secrets#1026; Argo CD's diffing documentation
//     gives the same jq path for webhooks);
//   - webhook.failurePolicy Ignore, a documented chart value: no pod runs here
//     (no kubelet), so the webhook has no server, and with the default Fail
//     the apiserver would refuse every write of an ExternalSecret. The chart
//     sets no failurePolicy on the secretstore-validate webhooks (Fail), so the
//     store is created before the chart. The cert-controller runs as a
//     process, as the chart's Deployment would run it.
func esoApplication(repoURL string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  source:
    repoURL: %q
    path: charts/external-secrets
    targetRevision: main
    helm:
      valuesObject:
        webhook: {failurePolicy: Ignore}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  ignoreDifferences:
  - group: admissionregistration.k8s.io
    kind: ValidatingWebhookConfiguration
    jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle']
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true, ServerSideApply=true]
`, esoApp, repoURL, esoNS)
}

// shopFiles is an automated Application's folder: a Secret, a ConfigMap of
// templates, three ExternalSecrets (plain; templateFrom literal + a
// KeysAndValues item, so ESO writes the template's keys only; deletionPolicy
// Delete over a dataFrom.find that matches nothing) and a Deployment reading
// them. round changes a label only (benign commits).
func shopFiles(round int) map[string]string {
	return map[string]string{
		"shop/config.yaml": fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: shop-config
  labels: {corpus-round: "%d"}
stringData: {MODE: production, REGION: eu-west-1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-templates}
data:
  extra.yaml: |
    CACHE_URL: "redis://cache:6379/0"
`, round),
		"shop/externalsecrets.yaml": `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: shop-db}
spec:
  refreshInterval: 15s
  secretStoreRef: {name: ` + store + `, kind: ClusterSecretStore}
  target: {name: shop-db, creationPolicy: Owner}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db-user}}
  - {secretKey: DB_PASS, remoteRef: {key: db-pass}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: shop-dsn}
spec:
  refreshInterval: 15s
  secretStoreRef: {name: ` + store + `, kind: ClusterSecretStore}
  target:
    name: shop-dsn
    creationPolicy: Owner
    template:
      engineVersion: v2
      templateFrom:
      - literal: |
          DSN: "postgres://{{ .DB_USER }}:{{ .DB_PASS }}@db:5432/shop"
      - configMap:
          name: shop-templates
          items:
          - {key: extra.yaml, templateAs: KeysAndValues}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db-user}}
  - {secretKey: DB_PASS, remoteRef: {key: db-pass}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: shop-flags}
spec:
  refreshInterval: 15s
  secretStoreRef: {name: ` + store + `, kind: ClusterSecretStore}
  target: {name: shop-flags, creationPolicy: Owner, deletionPolicy: Delete}
  dataFrom:
  - find: {name: {regexp: "^feature-flag-"}}
`,
		"shop/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: shop-api}
spec:
  replicas: 1
  selector: {matchLabels: {app: shop-api}}
  template:
    metadata: {labels: {app: shop-api}}
    spec:
      containers:
      - name: api
        image: example/shop:1
        env:
        - {name: MODE, valueFrom: {secretKeyRef: {name: shop-config, key: MODE}}}
        - {name: DB_PASS, valueFrom: {secretKeyRef: {name: shop-db, key: DB_PASS}}}
        - {name: DSN, valueFrom: {secretKeyRef: {name: shop-dsn, key: DSN}}}
        - {name: CACHE_URL, valueFrom: {secretKeyRef: {name: shop-dsn, key: CACHE_URL}}}
        envFrom:
        - secretRef: {name: shop-flags, optional: true}
`,
	}
}

// billingFiles is a manual-sync Application's folder; with more, the commit
// that adds a Secret key and an ExternalSecret entry (for a reader to come).
func billingFiles(more bool) map[string]string {
	extraKey, extraEntry := "", ""
	if more {
		extraKey = ", RATE_LIMIT: \"100\""
		extraEntry = "\n  - {secretKey: BILLING_TOKEN, remoteRef: {key: billing-token}}"
	}
	return map[string]string{
		"billing/app.yaml": `apiVersion: v1
kind: Secret
metadata: {name: billing-config}
stringData: {PLAN: team` + extraKey + `}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: billing-db}
spec:
  refreshInterval: 15s
  secretStoreRef: {name: ` + store + `, kind: ClusterSecretStore}
  target: {name: billing-db, creationPolicy: Owner}
  data:
  - {secretKey: BILLING_USER, remoteRef: {key: billing-user}}` + extraEntry + `
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: billing-worker}
spec:
  replicas: 1
  selector: {matchLabels: {app: billing-worker}}
  template:
    metadata: {labels: {app: billing-worker}}
    spec:
      containers:
      - name: worker
        image: example/billing:1
        env:
        - {name: PLAN, valueFrom: {secretKeyRef: {name: billing-config, key: PLAN}}}
        - {name: BILLING_USER, valueFrom: {secretKeyRef: {name: billing-db, key: BILLING_USER}}}
`,
	}
}

// application renders an Application in argocd syncing path into dest.
func application(name, repoURL, path, dest, annotations, spec string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations: {%s}
spec:
  project: default
  source: {repoURL: %q, path: %s, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
%s`, name, annotations, repoURL, path, dest, spec)
}

// run carries the test's shared state.
type run struct {
	t   *testing.T
	c   *cluster.Cluster
	ctx context.Context
	t0  time.Time
	mon *pages.Monitor
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

func (r *run) kubectl(args ...string) string {
	r.t.Helper()
	out, err := r.c.Kubectl(r.ctx, "", args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
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
			r.t.Fatalf("waiting for %s: not within %s (last: %v)", what, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// expect waits until a scrape of the agent has (present) or lacks (!present)
// a series named name carrying labels, and returns the matching series. A miss
// is an error, not fatal: the run goes on and reports the rest.
func (r *run) expect(a *cluster.Agent, present bool, name string, labels map[string]string) []scrape.Series {
	r.t.Helper()
	got, _ := pages.ExpectSeries(r.t, a, waitFinding, present, name, labels)
	return got
}

// expectHook waits for a notification received at index from or later with
// an alert that matches; a miss is an error, not fatal.
func (r *run) expectHook(ps *promstack.Stack, hook *promstack.Webhook, from int, what string, match func(promstack.Alert) bool) (promstack.Alert, bool) {
	r.t.Helper()
	return pages.ExpectHook(r.t, ps, hook, from, waitPage, what, match)
}

// startCertController runs ESO's cert-controller as the chart's
// cert-controller Deployment would (templates/cert-controller-deployment.yaml,
// default values; addresses on loopback, no leader election): its pod cannot
// run here (no kubelet). It fills the webhook Secret and injects the CA into
// the chart's ValidatingWebhookConfigurations.
func (r *run) startCertController() {
	r.t.Helper()
	bin, err := tools.Tool(tools.ESOControllerBin)
	if err != nil {
		r.t.Fatal(err)
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		r.t.Fatal(err)
	}
	p := r.c.StartProcess(r.t, "eso-cert-controller", bin, []string{"KUBECONFIG=" + r.c.AdminKubeconfig},
		"certcontroller",
		"--crd-requeue-interval=5m",
		"--service-name="+webhookSecret,
		"--service-namespace="+esoNS,
		"--secret-name="+webhookSecret,
		"--secret-namespace="+esoNS,
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--healthz-addr=127.0.0.1:%d", ports[1]),
		"--loglevel=info",
		"--zap-time-encoding=epoch",
	)
	r.waitFor("the cert-controller to fill Secret "+esoNS+"/"+webhookSecret+" and inject the CA into both webhooks", 2*time.Minute, func() (bool, error) {
		if gone, err := p.Exited(); gone {
			r.t.Fatalf("the cert-controller exited (%v):\n%s", err, p.Tail(40))
		}
		s, err := r.c.Client.CoreV1().Secrets(esoNS).Get(r.ctx, webhookSecret, metav1.GetOptions{})
		if err != nil || len(s.Data["ca.crt"]) == 0 {
			return false, err
		}
		for _, v := range []string{"secretstore-validate", "externalsecret-validate"} {
			if !strings.Contains(r.vwcFacts(v), "caBundle=true") {
				return false, fmt.Errorf("%s", r.vwcFacts(v))
			}
		}
		return true, nil
	})
}

func TestGitOpsCorpus(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r := &run{t: t, c: c, ctx: ctx, t0: time.Now()}
	shopNS, billingNS := c.NewNamespace(t), c.NewNamespace(t)

	// ---- the platform: the store, ESO's chart through Argo CD -------------------------
	// The store goes in first: the chart's secretstore-validate webhooks keep
	// the default failurePolicy Fail and have no server here (esoApplication).
	r.step("ClusterSecretStore %s (fake provider)", store)
	c.Apply(t, "", clusterStore)
	repo := c.NewGitRepo(t, "platform")
	chartDir := filepath.Join(repo.Dir, "charts", "external-secrets")
	crds := writeESOChart(t, chartDir)
	files := map[string]string{}
	for k, v := range shopFiles(0) {
		files[k] = v
	}
	for k, v := range billingFiles(false) {
		files[k] = v
	}
	rev1 := repo.Commit(t, "ESO chart, shop, billing", files)
	r.step("commit %.8s: ESO v0.20.4's chart (%d CRD templates generated as ESO's release does), shop/, billing/", rev1, crds)

	r.createApp(esoApplication(repo.URL))
	s := r.waitApp(esoApp, "Synced at "+rev1, func(s appState) bool { return syncedAt(rev1)(s) && s.Sync == "Synced" })
	r.step("Application %s Synced at %.8s (ServerSideApply=true, CreateNamespace=true)", esoApp, rev1)
	r.fact("Application %s after its first sync: %s; resources: %s", esoApp, s, s.resources())
	r.fact("%s", r.crdFacts())
	r.fact("%s", r.secretFacts(esoNS, webhookSecret))
	r.startCertController()
	r.step("ESO's cert-controller filled the webhook Secret and injected the CA")
	r.fact("%s", r.secretFacts(esoNS, webhookSecret))
	r.fact("%s", r.vwcFacts("secretstore-validate"))
	r.fact("%s", r.vwcFacts("externalsecret-validate"))
	for _, name := range []string{"external-secrets", "external-secrets-webhook", "external-secrets-cert-controller"} {
		c.MarkPodsRunning(t, esoNS, "app.kubernetes.io/name="+name, 1)
	}

	// ---- the applications ------------------------------------------------------------
	r.createApp(application("shop", repo.URL, "shop", shopNS, `argocd.argoproj.io/compare-options: ServerSideDiff=true`,
		"  syncPolicy:\n    automated: {prune: true}\n    syncOptions: [ServerSideApply=true]\n"))
	r.createApp(application("billing", repo.URL, "billing", billingNS, "", ""))
	r.waitApp("billing", "compared at "+rev1, func(s appState) bool { return s.Revision == rev1 && s.Sync == "OutOfSync" })
	c.ArgoCD().Sync(t, gitops.ArgoCDNamespace, "billing", "") // someone syncs it the first time (argocd app sync billing)
	for _, app := range []string{"shop", "billing"} {
		s := r.waitApp(app, "Synced at "+rev1, func(s appState) bool { return syncedAt(rev1)(s) && s.Sync == "Synced" })
		r.fact("Application %s after its first sync: %s; resources: %s", app, s, s.resources())
	}
	r.waitESReady(shopNS, "shop-db", "SecretSynced")
	r.waitESReady(shopNS, "shop-dsn", "SecretSynced")
	r.waitESReady(shopNS, "shop-flags", "SecretDeleted")
	r.waitESReady(billingNS, "billing-db", "SecretSynced")
	r.waitSecretKeys(shopNS, "shop-dsn", "DSN", "CACHE_URL")
	for _, es := range []string{"shop-db", "shop-dsn", "shop-flags"} {
		r.fact("%s", r.esFacts(shopNS, es))
		r.fact("%s", r.secretFacts(shopNS, es))
	}
	r.fact("%s", r.esFacts(billingNS, "billing-db"))
	if keys := r.secretKeys(shopNS, "shop-flags"); keys != nil {
		t.Errorf("fact changed: ESO with deletionPolicy Delete and nothing at the provider wrote shop-flags with keys %v", keys)
	}
	c.MarkPodsRunning(t, shopNS, "app=shop-api", 1)
	c.MarkPodsRunning(t, billingNS, "app=billing-worker", 1)

	// The manual-sync Application falls one commit behind.
	rev2 := repo.Commit(t, "billing: RATE_LIMIT and BILLING_TOKEN", billingFiles(true))
	head := rev2
	for _, app := range []string{"billing", "shop", esoApp} {
		c.ArgoCD().Refresh(t, gitops.ArgoCDNamespace, app)
	}
	s = r.waitApp("billing", "OutOfSync behind "+rev2, func(s appState) bool {
		return s.Revision == rev2 && s.Sync == "OutOfSync" && s.SyncedRev == rev1 && s.Phase == "Succeeded" && !s.Operation
	})
	r.step("commit %.8s adds RATE_LIMIT to billing-config and BILLING_TOKEN to billing-db: billing waits for a manual sync", rev2)
	r.fact("Application billing one commit behind: %s; resources: %s", s, s.resources())

	// ---- the agent, the monitor, Prometheus and Alertmanager -------------------------------
	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte(c.ArgoCD().Token(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := c.StartAgent(t, "--argocd-server", c.ArgoCD().ServerURL(), "--argocd-insecure", "--argocd-token-file", tokenFile,
		"--argocd-poll-interval", "2s", "--argocd-not-converging-threshold", "30s")
	mon := pages.NewMonitor(agent, scrapeEvery)
	agent.WaitReady(t, waitFinding)
	mon.Start()
	r.mon = mon
	r.step("agent ready (all namespaces, desired state from argocd-server)")
	faultPage := pages.Page{Alert: "DriftwatchSecretMissingKeyConsumed", Object: shopNS + "/shop-config"}
	isFaultPage := func(a promstack.Alert) bool {
		return a.Labels["alertname"] == faultPage.Alert && a.Labels["namespace"] == shopNS && a.Labels["secret"] == "shop-config"
	}
	hook := promstack.NewWebhook(t)
	var faultFrom = -1
	var ps *promstack.Stack
	defer func() {
		mon.Finish()
		r.mon = nil
		t.Logf("every finding series the agent served after readiness [phase first seen .. phase last seen]:\n%s", mon.Report())
		if pre := mon.PreReadyFindings(); len(pre) > 0 {
			t.Errorf("findings served while the agent was not ready:\n  %s", strings.Join(pre, "\n  "))
		}
		if unexpected := mon.UnexpectedPages(); len(unexpected) > 0 {
			t.Errorf("%d page-grade finding(s) on the healthy GitOps corpus (outside the real fault's window):\n  %s", len(unexpected), strings.Join(unexpected, "\n  "))
		}
		if unexpected := mon.UnexpectedFindings(); len(unexpected) > 0 {
			t.Errorf("%d warning- or critical-grade finding series on the healthy GitOps corpus (outside the real fault's window):\n  %s", len(unexpected), strings.Join(unexpected, "\n  "))
		}
		msgs, ats := hook.Messages(0)
		var stray, strayNames []string
		seen := map[string]bool{}
		for i, m := range msgs {
			for _, a := range m.Alerts {
				if a.Status != "firing" || a.Labels["severity"] != "critical" || (isFaultPage(a) && faultFrom >= 0 && i >= faultFrom) {
					continue
				}
				if k := fmt.Sprint(a.Labels); !seen[k] {
					seen[k] = true
					stray = append(stray, fmt.Sprintf("notification #%d at +%s: %v", i, ats[i].Sub(r.t0).Round(time.Second), a.Labels))
					strayNames = append(strayNames, a.Labels["alertname"])
				}
			}
		}
		if len(stray) > 0 {
			t.Errorf("Alertmanager delivered %d page(s) other than the real fault's:\n  %s", len(stray), strings.Join(stray, "\n  "))
			// An agent alert (DriftwatchDown...): what Prometheus saw of
			// the agent's scrapes, with times after r.t0 as above.
			ps.LogScrapeHistory(t, "driftwatch", r.t0, strayNames...)
		}
		t.Logf("Alertmanager notifications:\n%s", hook.Dump())
	}()
	ps = promstack.Start(t, c, agent.Addr, hook)
	r.step("prometheus %s and alertmanager %s ready", ps.PromURL, ps.AMURL)

	// ---- the pending sync: info only, for at least pendingFor -----------------------------
	pendingSince := time.Now()
	for _, k := range []struct{ secret, key string }{{"billing-config", "RATE_LIMIT"}, {"billing-db", "BILLING_TOKEN"}} {
		for _, p := range r.expect(agent, true, "driftwatch_secret_key_pending_sync", map[string]string{"namespace": billingNS, "secret": k.secret,
			"key": k.key, "source": "argocd", "sync_kind": "Application", "sync_namespace": gitops.ArgoCDNamespace, "sync_name": "billing"}) {
			if sev := pages.Severity(p); sev != "info" {
				t.Errorf("%s: severity %q, want info", p, sev)
			}
			r.step("pending sync reported: %s", p)
		}
	}
	// Everyday churn while it waits: a benign commit (a label) the automated
	// Applications sync, ESO's own refreshes (15 s) and a force-sync
	// annotation, a label on the chart's values (a chart upgrade through
	// Argo CD), hard refreshes.
	round := 0
	for time.Since(pendingSince) < pendingFor {
		round++
		switch round % 3 {
		case 1:
			head = repo.Commit(t, fmt.Sprintf("shop: round %d", round), shopFiles(round))
			for _, app := range []string{"billing", "shop", esoApp} {
				c.ArgoCD().Refresh(t, gitops.ArgoCDNamespace, app)
			}
			r.step("soak %d: commit %.8s relabels shop-config; automated Applications sync it", round, head)
			r.waitApp("shop", "Synced at "+head, func(s appState) bool { return syncedAt(head)(s) && s.Sync == "Synced" })
		case 2:
			r.step("soak %d: kubectl annotate the ExternalSecrets force-sync (ESO refreshes now)", round)
			for _, es := range []string{"shop-db", "shop-dsn", "shop-flags"} {
				began := time.Now()
				r.kubectl("annotate", "externalsecret", es, "-n", shopNS, fmt.Sprintf("force-sync=%d", time.Now().UnixNano()), "--overwrite")
				if round == 2 {
					// Each write calls the chart's externalsecret-validate
					// webhook, which has no server (failurePolicy Ignore).
					r.fact("kubectl annotate externalsecret %s (through the serverless webhook, failurePolicy Ignore) took %s", es, time.Since(began).Round(time.Millisecond))
				}
			}
		case 0:
			r.step("soak %d: kubectl label the webhook Secret and billing-config (someone tags them)", round)
			r.kubectl("label", "secret", webhookSecret, "-n", esoNS, fmt.Sprintf("corpus-round=%d", round), "--overwrite")
			r.kubectl("label", "secret", "billing-config", "-n", billingNS, fmt.Sprintf("corpus-round=%d", round), "--overwrite")
		}
		time.Sleep(8 * time.Second)
	}
	s = r.app("billing")
	if s.Sync != "OutOfSync" || s.SyncedRev != rev1 {
		t.Fatalf("billing moved on while it waited for a manual sync: %s", s)
	}
	r.fact("after %s behind: Application billing %s; %s", time.Since(pendingSince).Round(time.Second), s, r.app("shop"))
	r.fact("Application %s: %s; resources: %s", esoApp, r.app(esoApp), r.app(esoApp).resources())

	// ---- someone syncs billing: the keys ship, nothing fires ---------------------------------
	r.step("argocd app sync billing (main, at %.8s)", head)
	c.ArgoCD().Sync(t, gitops.ArgoCDNamespace, "billing", "")
	s = r.waitApp("billing", "Synced at "+head, func(s appState) bool { return syncedAt(head)(s) && s.Sync == "Synced" })
	r.fact("Application billing after the sync: %s; resources: %s", s, s.resources())
	r.waitSecretKeys(billingNS, "billing-config", "PLAN", "RATE_LIMIT")
	r.waitSecretKeys(billingNS, "billing-db", "BILLING_USER", "BILLING_TOKEN")
	r.fact("%s", r.esFacts(billingNS, "billing-db"))
	r.expect(agent, false, "driftwatch_secret_key_pending_sync", map[string]string{"namespace": billingNS})
	r.step("billing synced: the keys shipped, the pending series cleared")
	time.Sleep(10 * time.Second)

	// ---- the real fault: a key removed from an Argo CD-delivered Secret a pod reads ----------
	closePage := mon.AllowFault(faultPage)
	closeSeries := mon.AllowSeries(func(s scrape.Series) bool {
		return (s.Labels["namespace"] == shopNS && (s.Labels["secret"] == "shop-config" || s.Labels["name"] == "shop-config")) ||
			s.Labels["application"] == "shop"
	})
	faultFrom = hook.Count()
	r.step("fault: kubectl patch removes MODE from shop-config (Argo CD-delivered, no selfHeal); shop-api reads it")
	r.kubectl("patch", "secret", "shop-config", "-n", shopNS, "--type=json", `-p=[{"op":"remove","path":"/data/MODE"}]`)
	r.expect(agent, true, "driftwatch_secret_missing_key", map[string]string{"namespace": shopNS, "secret": "shop-config", "key": "MODE", "source": "pod"})
	r.expect(agent, true, "driftwatch_secret_missing_key", map[string]string{"namespace": shopNS, "secret": "shop-config", "key": "MODE", "source": "argocd"})
	r.expect(agent, true, "driftwatch_gitops_synced_entries_missing", map[string]string{"namespace": shopNS, "kind": "Secret", "name": "shop-config",
		"source": "argocd", "sync_name": "shop"})
	if a, ok := r.expectHook(ps, hook, faultFrom, "the shop-config page", func(a promstack.Alert) bool { return isFaultPage(a) && a.Status == "firing" }); ok {
		r.step("fault found and paged: %v", a.Labels)
	}
	r.fact("Application shop after the patch: %s; resources: %s", r.app("shop"), r.app("shop").resources())
	mark := hook.Count()
	fixed := time.Now().Truncate(time.Second)
	r.step("fix: argocd app sync shop (main, at %.8s)", head)
	c.ArgoCD().Sync(t, gitops.ArgoCDNamespace, "shop", "")
	r.waitApp("shop", "Synced at "+head, func(s appState) bool { return syncedAt(head)(s) && s.Sync == "Synced" })
	r.waitSecretKeys(shopNS, "shop-config", "MODE", "REGION")
	r.fact("%s", r.secretFacts(shopNS, "shop-config"))
	r.expect(agent, false, "driftwatch_secret_missing_key", map[string]string{"namespace": shopNS, "secret": "shop-config"})
	r.expect(agent, false, "driftwatch_gitops_synced_entries_missing", map[string]string{"namespace": shopNS})
	r.expect(agent, false, "driftwatch_secret_missing_key_consumer_pods", map[string]string{"namespace": shopNS, "secret": "shop-config"})
	closePage()
	closeSeries()
	r.expectHook(ps, hook, mark, "the shop-config page's resolution", func(a promstack.Alert) bool {
		return isFaultPage(a) && a.Status == "resolved" && !a.EndsAt.Before(fixed)
	})
	r.step("fault fixed: Argo CD's sync put MODE back")
	time.Sleep(2 * scrapeEvery)
}
