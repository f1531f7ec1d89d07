package fullchain

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// Generous: two shared cores, several stacks at once.
const (
	waitFinding = 3 * time.Minute
	waitPage    = 5 * time.Minute
	waitPanels  = 5 * time.Minute
)

// The page this test is about (alerts/driftwatch.rules.yaml): one alert per
// Secret (max by (namespace, secret)), so it names the namespace and the
// Secret; the key is named by the finding series driftwatch_secret_missing_key
// that the investigation dashboard shows, which the test checks too.
const (
	pageAlert  = "DriftwatchSecretMissingKeyConsumed"
	pageSecret = "app"
	pageKey    = "STRIPE_KEY"
)

// allowNoData lists the panel queries that cannot return data in this
// scenario, with the reason. "Data" means: the query returns at least one
// sample with every "or vector(0)" fallback removed (as written, every query
// must return data, no exception). Keep it small: maxAllowNoData bounds it.
var allowNoData = map[string]string{
	// Counts of a broken agent: with every informer synced (the agent is
	// ready) the count is empty; inducing it would need an API that never
	// finishes its initial list.
	"driftwatch-overview / Informers not synced / A": "every informer is synced in a healthy agent",
	// Every detector runs here (core, ESO and Argo CD APIs all served and
	// permitted); a disabled detector needs an API removed or RBAC revoked
	// from the shared stack's ClusterRole.
	"driftwatch-overview / Detectors disabled / A": "every detector is enabled on this stack",
}

const maxAllowNoData = 2

// scenarioSecrets are the Secrets of the scenario, the $secret selection.
var scenarioSecrets = []string{
	pageSecret, "feature-flags", "api-creds", "session-key", "short", "rotated",
	"orders-db", "orders-db-check", "legacy-api", "smtp", "payments-creds", "payments-creds-copy", "feature-config",
}

func TestFullChain(t *testing.T) {
	t0 := time.Now()
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	step := func(format string, args ...any) {
		t.Logf("[%s] %s", time.Since(t0).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	}

	// ---- objects ------------------------------------------------------------
	applyScenario(t, c, ns)
	stalePodStatus(t, ctx, c, ns)
	step("scenario objects applied in %s", ns)
	fluxScenario(t, c, ns)
	step("Flux applied the second commit")

	// A stand-in for the Argo CD API (the agent's desired-state source): it
	// answers managed-resources as Argo CD would for the scenario's
	// Applications (whose statuses applyScenario writes): keys-trap's
	// delivered ExternalSecret declares an entry (REGION) the live one lacks;
	// behind's Secret declares a key (ROTATION_HINT) of a revision not synced
	// yet; any other Application manages nothing. The poller's metrics
	// (driftwatch_argocd_api_up, _requests_total) exist.
	var argoRequests atomic.Int64
	managed := map[string]string{
		"keys-trap": `{"items":[{"group":"external-secrets.io","kind":"ExternalSecret","namespace":"` + ns + `","name":"short",` +
			`"targetState":"{\"apiVersion\":\"external-secrets.io/v1\",\"kind\":\"ExternalSecret\",\"metadata\":{\"name\":\"short\"},` +
			`\"spec\":{\"target\":{\"name\":\"short\",\"deletionPolicy\":\"Delete\"},\"data\":[{\"secretKey\":\"USER\"},{\"secretKey\":\"TOKEN\"},{\"secretKey\":\"REGION\"}]}}"}]}`,
		"behind": `{"items":[{"kind":"Secret","namespace":"` + ns + `","name":"api-creds",` +
			`"targetState":"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"api-creds\"},\"data\":{\"password\":null,\"ROTATION_HINT\":null}}"}]}`,
	}
	argo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := regexp.MustCompile(`^/api/v1/applications/([^/]+)/managed-resources$`).FindStringSubmatch(r.URL.Path)
		if r.Header.Get("Authorization") != "Bearer e2e-argocd-token" || m == nil {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		argoRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		body, ok := managed[m[1]]
		if !ok {
			body = `{"items":[]}`
		}
		_, _ = w.Write([]byte(body))
	}))
	defer argo.Close()
	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte("e2e-argocd-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// ---- agent, Prometheus, Alertmanager, webhook ---------------------------------
	agent := c.StartAgent(t, "--namespaces", ns, "--inventory", // the consumers map panel needs it
		"--argocd-server", argo.URL, "--argocd-insecure", "--argocd-token-file", tokenFile,
		"--argocd-poll-interval", "2s", "--flux-poll-interval", "2s")
	agent.WaitReady(t, waitFinding)
	step("agent ready")
	hook := promstack.NewWebhook(t)
	ps := promstack.Start(t, c, agent.Addr, hook)
	step("prometheus %s and alertmanager %s ready", ps.PromURL, ps.AMURL)

	// ---- changes the agent must observe -------------------------------------------
	// Flips: two field managers write the Secret alternately, A→B→A→B→A.
	secrets := c.Client.CoreV1().Secrets(ns)
	for i := range 5 {
		manager, value := "e2e-writer-a", "session-value-A"
		if i%2 == 1 {
			manager, value = "e2e-writer-b", "session-value-B"
		}
		s, err := secrets.Get(ctx, "session-key", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data = map[string][]byte{"SESSION_KEY": []byte(value)}
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	// A rotation the running worker pod (started an hour ago) did not see.
	s, err := secrets.Get(ctx, "api-creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"password": []byte("api-password-v2")}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: "e2e-rotator"}); err != nil {
		t.Fatal(err)
	}
	// A key removed from the store after a good sync: not Ready, then overdue.
	agent.WaitForSeries(t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": ns, "externalsecret": "rotated"}, waitFinding)
	c.Apply(t, ns, fakeStore("rot-store", "unrelated", "x"))
	step("flips, rotation and store change done")

	// ---- every finding class reaches the agent's /metrics ---------------------------
	for _, f := range []struct {
		name   string
		labels map[string]string
	}{
		{"driftwatch_secret_missing_key", map[string]string{"secret": pageSecret, "key": pageKey, "source": "pod"}},
		{"driftwatch_secret_absent", map[string]string{"secret": "feature-flags"}},
		{"driftwatch_externalsecret_ready_but_short", map[string]string{"externalsecret": "short"}},
		{"driftwatch_externalsecret_not_ready", map[string]string{"externalsecret": "rotated"}},
		{"driftwatch_externalsecret_sync_overdue", map[string]string{"externalsecret": "rotated"}},
		{"driftwatch_secretstore_not_ready", map[string]string{"store": "broken"}},
		{"driftwatch_secret_flapping", map[string]string{"secret": "session-key"}},
		{"driftwatch_workload_stale_pods", map[string]string{"secret": "api-creds", "workload": "worker"}},
		{"driftwatch_last_applied_truncated", map[string]string{"name": "smtp"}},
		{"driftwatch_argocd_ignore_list_trap", map[string]string{"application": "keys-trap"}},
		{"driftwatch_argocd_not_converging", map[string]string{"application": "stuck"}},
		{"driftwatch_gitops_synced_entries_missing", map[string]string{"kind": "ExternalSecret", "name": "short", "sync_name": "keys-trap"}},
		{"driftwatch_secret_key_pending_sync", map[string]string{"secret": "api-creds", "key": "ROTATION_HINT", "sync_name": "behind"}},
		{"driftwatch_externalsecret_unsafe", map[string]string{"externalsecret": "legacy-api"}},
		{"driftwatch_externalsecret_rotation_blocked", map[string]string{"externalsecret": "pinned", "reason": "created_once"}},
		{"driftwatch_serviceaccount_workload_identity_missing", map[string]string{"serviceaccount": "eso-reader"}},
		{"driftwatch_compare_mismatch", map[string]string{"secret": "orders-db"}},
		{"driftwatch_secret_duplicate_credentials", map[string]string{"secret": "payments-creds-copy"}},
		{"driftwatch_secret_last_applied_data", map[string]string{"secret": "smtp"}},
		{"driftwatch_flux_never_updated", map[string]string{"name": "frozen", "kustomization": "never"}},
		{"driftwatch_flux_ignore_trap", map[string]string{"kustomization": "trap", "biting": "true"}},
		{"driftwatch_flux_substitute_missing", map[string]string{"kustomization": "subst", "variable": "SMTP_HOST"}},
		{"driftwatch_secret_key_empty_read", map[string]string{"secret": "feature-config", "key": "FLAG"}},
	} {
		f.labels["namespace"] = ns
		agent.WaitForSeries(t, f.name, f.labels, waitFinding)
	}
	step("every finding class is on the agent's /metrics")
	if argoRequests.Load() == 0 {
		t.Fatal("the agent never called the Argo CD API stand-in")
	}

	// ---- the page arrives -----------------------------------------------------------------
	isPage := func(a promstack.Alert) bool {
		return a.Labels["alertname"] == pageAlert && a.Labels["namespace"] == ns && a.Labels["secret"] == pageSecret
	}
	msg, page := ps.WaitHook(t, hook, 0, waitPage, "the firing page", func(m promstack.Message, a promstack.Alert) bool {
		return isPage(a) && a.Status == "firing" && m.Status == "firing"
	})
	step("page received: %v", page.Labels)
	if page.Labels["severity"] != "critical" {
		t.Errorf("page severity = %q, want critical", page.Labels["severity"])
	}
	if msg.GroupLabels["secret"] != pageSecret || msg.GroupLabels["namespace"] != ns {
		t.Errorf("notification group labels %v do not name %s/%s", msg.GroupLabels, ns, pageSecret)
	}
	object := ns + "/" + pageSecret
	for _, ann := range []string{"summary", "description"} {
		if !strings.Contains(page.Annotations[ann], object) {
			t.Errorf("page %s %q does not name %s", ann, page.Annotations[ann], object)
		}
	}
	// The page says what is wrong: the key and who reads the Secret.
	for _, want := range []string{pageKey, "Pod/api"} {
		if !strings.Contains(page.Annotations["description"], want) {
			t.Errorf("page description %q does not name %s", page.Annotations["description"], want)
		}
	}
	if want := "docs/runbooks/" + pageAlert + ".md"; !strings.HasSuffix(page.Annotations["runbook_url"], want) {
		t.Errorf("page runbook_url %q does not end in %s", page.Annotations["runbook_url"], want)
	}
	// The key: the finding series the investigation dashboard lists.
	keyQ := fmt.Sprintf(`driftwatch_secret_missing_key{job="driftwatch",namespace=%q,secret=%q,key=%q,source="pod"} == 1`, ns, pageSecret, pageKey)
	if got, err := ps.Query(keyQ); err != nil || len(got) != 1 {
		t.Errorf("Prometheus %s: %v samples, err %v", keyQ, len(got), err)
	}

	// ---- every dashboard panel returns data, while the page fires ---------------------------
	checkPanels(t, ps, ns)
	step("dashboard panels checked")

	// ---- fix: add the key; the page resolves ------------------------------------------------
	mark := hook.Count()
	fixed := time.Now().Truncate(time.Second) // Prometheus stamps whole milliseconds; be lenient
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: `+pageSecret+`}
stringData: {DB_USER: app-db-user-e2e, STRIPE_KEY: sk-e2e-fixed}
`)
	agent.WaitForNoSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": pageSecret}, waitFinding)
	step("key added; the finding is gone from /metrics")
	_, resolved := ps.WaitHook(t, hook, mark, waitPage, "the resolved notification", func(m promstack.Message, a promstack.Alert) bool {
		// EndsAt of a resolved alert is when Prometheus saw it resolved: a
		// resolve from before the fix (a missed scrape) does not count.
		return isPage(a) && a.Status == "resolved" && m.Status == "resolved" && !a.EndsAt.Before(fixed)
	})
	step("resolved notification received: %v ends %s", resolved.Labels, resolved.EndsAt.Format(time.RFC3339))
	// Prometheus agrees: no missing-key series and no alert for the Secret.
	for _, q := range []string{
		fmt.Sprintf(`driftwatch_secret_missing_key{job="driftwatch",namespace=%q,secret=%q}`, ns, pageSecret),
		fmt.Sprintf(`ALERTS{alertname=%q,namespace=%q,secret=%q}`, pageAlert, ns, pageSecret),
	} {
		if got, err := ps.Query(q); err != nil || len(got) != 0 {
			t.Errorf("after the fix, %s: %v (err %v)", q, got, err)
		}
	}
	// The Argo CD API stand-in answered every call: no false API-down warning.
	if _, a, ok := hook.Find(0, func(m promstack.Message, a promstack.Alert) bool {
		return a.Labels["alertname"] == "DriftwatchArgoCDAPIDown"
	}); ok {
		t.Errorf("DriftwatchArgoCDAPIDown notified although the Argo CD API answers: %v", a.Labels)
	}
	// The other pages of the scenario still fire (they were not fixed).
	if _, _, ok := hook.Find(0, func(m promstack.Message, a promstack.Alert) bool {
		return a.Labels["alertname"] == "DriftwatchExternalSecretReadyButShort" && a.Labels["namespace"] == ns && a.Status == "firing"
	}); !ok {
		t.Errorf("no DriftwatchExternalSecretReadyButShort page for %s/short; notifications:\n%s", ns, hook.Dump())
	}
	step("done")
}

// checkPanels runs every dashboard panel query against Prometheus until each
// returns data (see allowNoData) or the deadline passes.
func checkPanels(t *testing.T, ps *promstack.Stack, ns string) {
	t.Helper()
	targets := promstack.DashboardTargets(t)
	if len(allowNoData) > maxAllowNoData {
		t.Errorf("the allow-list of panels without data has %d entries (max %d): extend the scenario instead", len(allowNoData), maxAllowNoData)
	}
	known := map[string]bool{}
	for _, tg := range targets {
		known[tg.ID()] = true
	}
	for id := range allowNoData {
		if !known[id] {
			t.Errorf("allow-list entry %q names no dashboard panel target", id)
		}
	}
	type result struct{ asWritten, strict int }
	var results map[string]result
	var problems []string
	deadline := time.Now().Add(waitPanels)
	for {
		ps.Alive(t)
		results = map[string]result{}
		problems = nil
		for _, tg := range targets {
			q := promstack.Substitute(tg.Expr, ns, scenarioSecrets)
			if strings.Contains(q, "$") {
				t.Fatalf("%s: a template variable is left after substitution: %s", tg.ID(), q)
			}
			got, err := ps.Query(q)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v\n    %s", tg.ID(), err, q))
				continue
			}
			r := result{asWritten: len(got), strict: len(got)}
			if sq := promstack.Strict(q); sq != q {
				sgot, err := ps.Query(sq)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s (without the vector(0) fallback): %v\n    %s", tg.ID(), err, sq))
					continue
				}
				r.strict = len(sgot)
			}
			results[tg.ID()] = r
			_, allowed := allowNoData[tg.ID()]
			switch {
			case r.asWritten == 0:
				problems = append(problems, fmt.Sprintf("%s: no data\n    %s", tg.ID(), q))
			case r.strict == 0 && !allowed:
				problems = append(problems, fmt.Sprintf("%s: only the vector(0) fallback\n    %s", tg.ID(), promstack.Strict(q)))
			case r.strict > 0 && allowed:
				problems = append(problems, fmt.Sprintf("%s: allow-listed as having no data (%s) but returns %d samples: drop it from the allow-list", tg.ID(), allowNoData[tg.ID()], r.strict))
			}
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	for _, tg := range targets {
		r := results[tg.ID()]
		note := ""
		if reason, ok := allowNoData[tg.ID()]; ok {
			note = " (allow-listed: " + reason + ")"
		}
		t.Logf("panel %-75s samples %3d, without fallback %3d%s", tg.ID(), r.asWritten, r.strict, note)
	}
	if len(problems) > 0 {
		t.Errorf("%d of %d dashboard panel queries fail for the scenario:\n  %s", len(problems), len(targets), strings.Join(problems, "\n  "))
	}
}

// fakeStore is a SecretStore of ESO's fake provider holding key/value pairs.
func fakeStore(name string, kv ...string) string {
	y := "apiVersion: external-secrets.io/v1\nkind: SecretStore\nmetadata: {name: " + name + "}\nspec:\n  provider:\n    fake:\n      data:\n"
	for i := 0; i+1 < len(kv); i += 2 {
		y += fmt.Sprintf("      - {key: %s, value: %q}\n", kv[i], kv[i+1])
	}
	return y
}

// applyScenario creates one real object (or pair) per finding class, all in
// namespace ns. The ESO objects are reconciled by the real ESO controller.
func applyScenario(t *testing.T, c *cluster.Cluster, ns string) {
	t.Helper()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	smtpApplied, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "smtp", "namespace": ns},
		"data":     map[string]any{"user": b64("smtp-user-e2e"), "password": b64("smtp-old-password"), "host": b64("smtp.example")}})
	finished := time.Now().Add(-20 * time.Minute).UTC()

	// The incident: the api pod reads STRIPE_KEY through an optional
	// secretKeyRef; Secret app lacks it. The pod would start without it. The
	// chart author declared the key (driftwatch.io/expected-keys): with a second
	// source expecting it, the optional reference pages (alone it would warn).
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: `+pageSecret+`, annotations: {driftwatch.io/expected-keys: "DB_USER,`+pageKey+`"}}
stringData: {DB_USER: app-db-user-e2e}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: DB_USER, valueFrom: {secretKeyRef: {name: `+pageSecret+`, key: DB_USER}}}
    - {name: `+pageKey+`, valueFrom: {secretKeyRef: {name: `+pageSecret+`, key: `+pageKey+`, optional: true}}}
---
# absent: envFrom of a Secret nobody created
apiVersion: v1
kind: Pod
metadata: {name: cart}
spec:
  containers:
  - name: app
    image: example/app:1
    envFrom: [{secretRef: {name: feature-flags}}]
---
# stale pods: worker reads api-creds through env; its status (set by the test,
# there is no kubelet) says it started an hour ago; the test rotates api-creds.
apiVersion: v1
kind: Secret
metadata: {name: api-creds}
stringData: {password: api-password-v1}
---
apiVersion: v1
kind: Pod
metadata: {name: worker}
spec:
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: api-creds, key: password}}}
    - {name: FLAG, valueFrom: {secretKeyRef: {name: feature-config, key: FLAG}}}
---
# empty key read: worker (running) reads FLAG, which holds nothing
apiVersion: v1
kind: Secret
metadata: {name: feature-config}
stringData: {FLAG: "", MODE: "on"}
---
# flips: two writers take turns (the test updates it after the agent starts)
apiVersion: v1
kind: Secret
metadata: {name: session-key}
stringData: {SESSION_KEY: session-value-A}
---
# compare: the live copy has a trailing newline the store's copy lacks
apiVersion: v1
kind: Secret
metadata:
  name: orders-db
  annotations: {driftwatch.io/compare-with: orders-db-check}
stringData: {username: orders, password: "Zq8-live-orders-pw\n"}
---
# adoption: an ExternalSecret merges into this Secret with deletionPolicy Delete
apiVersion: v1
kind: Secret
metadata: {name: legacy-api}
stringData: {API_TOKEN: lg-4f1c9e0b7a}
---
# last-applied holds the (old) data, and a host key live no longer has (its
# writer still holds the data: live_shorter)
apiVersion: v1
kind: Secret
metadata:
  name: smtp
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '`+string(smtpApplied)+`'
stringData: {user: smtp-user-e2e, password: smtp-rotated-password}
---
# duplicate credentials: a forgotten copy
apiVersion: v1
kind: Secret
metadata: {name: payments-creds}
stringData: {STRIPE_SECRET: sk_e2e_9f8e7d6c5b4a, WEBHOOK_SECRET: whsec_e2e_0a1b2c3d}
---
apiVersion: v1
kind: Secret
metadata: {name: payments-creds-copy}
stringData: {STRIPE_SECRET: sk_e2e_9f8e7d6c5b4a, WEBHOOK_SECRET: whsec_e2e_0a1b2c3d}
---
# workload identity: an IRSA store whose ServiceAccount lacks the role ARN
apiVersion: v1
kind: ServiceAccount
metadata: {name: eso-reader}
`)

	c.Apply(t, ns, fakeStore("store",
		"short-user", "short-user-e2e",
		"orders-user", "orders",
		"orders-pass", "Zq8-live-orders-pw",
		"legacy-token", "lg-4f1c9e0b7a",
	)+"---\n"+fakeStore("rot-store", "rot-pass", "rot-pw-e2e")+`---
# store not Ready: its token Secret does not exist
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: broken}
spec:
  provider:
    vault:
      server: "http://127.0.0.1:1"
      path: secret
      version: v2
      auth: {tokenSecretRef: {name: no-such-token, key: token}}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws-irsa-broken}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth: {jwt: {serviceAccountRef: {name: eso-reader}}}
---
# Ready but short: deletionPolicy Delete skips the key the store lacks
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: short}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: short, deletionPolicy: Delete}
  data:
  - {secretKey: USER, remoteRef: {key: short-user}}
  - {secretKey: TOKEN, remoteRef: {key: api-token}}
---
# not Ready and overdue once the test removes rot-pass from rot-store
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: rotated}
spec:
  refreshInterval: 2s
  secretStoreRef: {name: rot-store, kind: SecretStore}
  target: {name: rotated}
  data:
  - {secretKey: PASS, remoteRef: {key: rot-pass}}
---
# rotation blocked: CreatedOnce never brings a store-side rotation in
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: pinned}
spec:
  refreshPolicy: CreatedOnce
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: pinned, creationPolicy: Owner}
  data:
  - {secretKey: TOKEN, remoteRef: {key: api-token}}
---
# the store side of the compare pair
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: orders-db-check}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: orders-db-check, creationPolicy: Owner}
  data:
  - {secretKey: username, remoteRef: {key: orders-user}}
  - {secretKey: password, remoteRef: {key: orders-pass}}
---
# unsafe adoption: deletionPolicy Delete on a Merge target
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: legacy-api}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: legacy-api, creationPolicy: Merge, deletionPolicy: Delete}
  data:
  - {secretKey: API_TOKEN, remoteRef: {key: legacy-token}}
---
# the ignore-list trap: a JSON pointer into spec.data's elements, respected
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: keys-trap}
spec:
  project: default
  destination: {server: "https://kubernetes.default.svc", namespace: `+ns+`}
  source: {repoURL: "https://git.example/platform/apps.git", path: keys, targetRevision: main}
  ignoreDifferences:
  - {group: external-secrets.io, kind: ExternalSecret, jsonPointers: [/spec/data/0/remoteRef]}
  syncPolicy: {automated: {}, syncOptions: [RespectIgnoreDifferences=true]}
status:
  sync: {status: Synced, revision: 4f1c2a9}
  # an Application managing an ExternalSecret: the agent asks the Argo CD API
  # for its desired state
  resources:
  - {group: external-secrets.io, version: v1, kind: ExternalSecret, namespace: `+ns+`, name: short, status: Synced}
---
# one commit behind: a manual sync not run yet (the Argo CD API stand-in
# serves the new revision's target state, which adds a key to api-creds)
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: behind}
spec:
  project: default
  destination: {server: "https://kubernetes.default.svc", namespace: `+ns+`}
  source: {repoURL: "https://git.example/platform/apps.git", path: creds, targetRevision: main}
status:
  sync: {status: OutOfSync, revision: 9c3d7e1}
  resources:
  - {version: v1, kind: Secret, namespace: `+ns+`, name: api-creds, status: OutOfSync}
  operationState:
    operation: {sync: {revision: 4f1c2a9}}
    syncResult:
      revision: 4f1c2a9
      resources:
      - {group: "", version: v1, kind: Secret, namespace: `+ns+`, name: api-creds, status: Synced}
    phase: Succeeded
    startedAt: "`+finished.Add(-30*time.Second).Format(time.RFC3339)+`"
    finishedAt: "`+finished.Format(time.RFC3339)+`"
---
# never converges: OutOfSync 20 minutes after a successful sync (no Argo CD
# controller runs here: the status is as Argo CD would leave it)
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: stuck}
spec:
  project: default
  destination: {server: "https://kubernetes.default.svc", namespace: `+ns+`}
  source: {repoURL: "https://git.example/platform/apps.git", path: stuck, targetRevision: main}
status:
  sync: {status: OutOfSync, revision: 4f1c2a9}
  health: {status: Healthy}
  resources:
  - {group: external-secrets.io, version: v1, kind: ExternalSecret, namespace: `+ns+`, name: rotated, status: OutOfSync}
  operationState:
    operation: {sync: {revision: 4f1c2a9}}
    # the sync applied the revision status.sync still compares: not behind, stuck
    syncResult: {revision: 4f1c2a9}
    phase: Succeeded
    startedAt: "`+finished.Add(-30*time.Second).Format(time.RFC3339)+`"
    finishedAt: "`+finished.Format(time.RFC3339)+`"
`)

	// A Secret whose last-applied annotation is not JSON: the rest of it is kept,
	// and driftwatch_decode_errors_total counts it (agent-health panel).
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata:
  name: notes
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{not json"}
stringData: {NOTE: e2e-note}
`)
}

// stalePodStatus gives the worker pod the status a kubelet would: running
// since an hour ago (no kubelet runs on this stack).
func stalePodStatus(t *testing.T, ctx context.Context, c *cluster.Cluster, ns string) {
	t.Helper()
	pods := c.Client.CoreV1().Pods(ns)
	p, err := pods.Get(ctx, "worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &started
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "app", Image: "example/app:1", ImageID: "example/app@sha256:0", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
	}}
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set the worker pod's status: %v", err)
	}
}
