package storefaults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/pages"
)

// Families a store fault may raise while it lasts (warnings: the store or
// the sync, never a key).
var syncFamilies = []string{
	"driftwatch_externalsecret_not_ready",
	"driftwatch_externalsecret_sync_overdue",
	"driftwatch_secretstore_not_ready",
	"driftwatch_secretstore_read_failing",
}

// storeFailing asserts the store-level finding: the agent counts n
// ExternalSecrets of the store (a SecretStore of the namespace, or the
// ClusterSecretStore) that ESO cannot read, its evidence says what ESO says
// of the store, and the alert names the store.
func (f *fixture) storeFailing(start time.Time, from int, fault, store string, n int) {
	f.t.Helper()
	var s scrape.Series
	labels := map[string]string{"namespace": f.ns, "kind": "SecretStore", "store": store}
	if store == clusterStore {
		labels["namespace"], labels["kind"] = "", "ClusterSecretStore"
	}
	poll(f.t, wait, fault+": driftwatch_secretstore_read_failing for "+store, func() (bool, string) {
		series, err := f.agent.Scrape()
		if err != nil {
			return false, err.Error()
		}
		got := scrape.Find(series, "driftwatch_secretstore_read_failing", labels)
		if len(got) == 1 {
			s = got[0]
		}
		return len(got) == 1 && got[0].Value == float64(n), fmt.Sprint(got)
	})
	f.t.Logf("fact: %s: driftwatch: %s after %s", fault, s, time.Since(start).Round(100*time.Millisecond))
	// The evidence (page, API, agent check) says what ESO says of the store.
	poll(f.t, wait, fault+": the findings API's evidence for "+store, func() (bool, string) {
		_, body, err := f.agent.Get("/api/v1/findings")
		if err != nil {
			return false, err.Error()
		}
		st := f.storeState(store)
		return strings.Contains(body, "ExternalSecrets using it are not Ready") && strings.Contains(body, "reason "+st.Reason), "store " + st.String()
	})
	a := f.waitAlert(from, "firing", "DriftwatchSecretStoreReadFailing", map[string]string{"store": store})
	f.t.Logf("fact: %s: Alertmanager: %s %s (%s) after %s: %s", fault, a.Labels["alertname"], a.Status, a.Labels["severity"], time.Since(start).Round(100*time.Millisecond), a.Annotations["summary"])
}

// targetsKept asserts that the Secrets ESO wrote hold their keys: at the
// start, and while the store fails (ESO does not touch a target when it cannot
// read the store).
func (f *fixture) targetsKept(phase string) {
	f.t.Helper()
	for name, want := range map[string][]string{
		"db-props":   {"DB_PASSWORD", "DB_USER"},
		"api-creds":  {"API_KEY", "API_URL"},
		"features":   {"feature-alpha", "feature-beta"},
		"cert-db":    {"DB_USER"},
		"cluster-db": {"DB_USER"},
	} {
		if got := f.secretKeys(name); !slices.Equal(got, want) {
			f.t.Errorf("%s: Secret %s has keys %v, want %v", phase, name, got, want)
		}
	}
}

// notSyncing is what a store that cannot be read must look like, for the
// ExternalSecrets given: ESO says Ready=False, the agent reports them not
// Ready, then overdue, and both warnings go through Alertmanager; nothing
// pages; the targets keep their keys. It returns the time from start to the
// agent's first not_ready series.
func (f *fixture) notSyncing(start time.Time, from int, fault string, ess ...string) {
	f.t.Helper()
	for _, es := range ess {
		poll(f.t, wait, fault+": ESO marks "+es+" not Ready", func() (bool, string) {
			s := f.es(es)
			return s.Status == "False", s.String()
		})
		st := f.es(es)
		f.t.Logf("fact: %s: ESO: %s after %s: %s", fault, es, time.Since(start).Round(100*time.Millisecond), st)
		s := f.agent.WaitForSeries(f.t, "driftwatch_externalsecret_not_ready", map[string]string{"namespace": f.ns, "externalsecret": es}, wait)
		f.t.Logf("fact: %s: driftwatch: %s after %s", fault, s, time.Since(start).Round(100*time.Millisecond))
		if s.Labels["reason"] != st.Reason {
			f.t.Errorf("%s: driftwatch's reason %q is not ESO's %q", fault, s.Labels["reason"], st.Reason)
		}
	}
	es := ess[0]
	o := f.agent.WaitForSeries(f.t, "driftwatch_externalsecret_sync_overdue", map[string]string{"namespace": f.ns, "externalsecret": es}, wait)
	f.t.Logf("fact: %s: driftwatch: %s after %s", fault, o, time.Since(start).Round(100*time.Millisecond))
	age := f.agent.WaitForSeries(f.t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": f.ns, "externalsecret": es}, wait)
	if age.Value < 9 {
		f.t.Errorf("%s: sync age of overdue %s is %gs (refresh %s, factor 3)", fault, es, age.Value, refresh)
	}
	a := f.waitAlert(from, "firing", "DriftwatchExternalSecretNotReady", map[string]string{"externalsecret": es})
	f.t.Logf("fact: %s: Alertmanager: %s %s (%s) after %s: %s", fault, a.Labels["alertname"], a.Status, a.Labels["severity"], time.Since(start).Round(100*time.Millisecond), a.Annotations["description"])
	a = f.waitAlert(from, "firing", "DriftwatchExternalSecretSyncOverdue", map[string]string{"externalsecret": es})
	f.t.Logf("fact: %s: Alertmanager: %s %s (%s) after %s", fault, a.Labels["alertname"], a.Status, a.Labels["severity"], time.Since(start).Round(100*time.Millisecond))
	f.noPageNow(fault)
	f.targetsKept(fault)
}

// noPageNow asserts that a scrape now has no page-grade finding.
func (f *fixture) noPageNow(fault string) {
	f.t.Helper()
	series, err := f.agent.Scrape()
	if err != nil {
		f.t.Fatal(err)
	}
	for p := range pages.Grade(series) {
		f.t.Errorf("%s: a page while the store fails: %s", fault, p)
	}
}

// recovered waits until every ExternalSecret is Ready again after the fault
// was undone at start, and for Alertmanager's resolved notifications of the
// alerts named (from notification index from).
func (f *fixture) recovered(start time.Time, from int, fault string, alerts map[string]map[string]string) {
	f.t.Helper()
	f.allReady(fault + " undone")
	f.t.Logf("fact: %s undone: ESO: every ExternalSecret Ready again after %s", fault, time.Since(start).Round(100*time.Millisecond))
	for name, labels := range alerts {
		// A trailing space lets one alert name appear twice in the map.
		f.waitAlert(from, "resolved", strings.TrimSpace(name), labels)
	}
	f.t.Logf("fact: %s undone: Alertmanager: %d alert(s) resolved after %s", fault, len(alerts), time.Since(start).Round(100*time.Millisecond))
}

// faultUnreachable: the store's apiserver is stopped, then started again.
func faultUnreachable(f *fixture) {
	closeAllow := f.allow(syncFamilies...)
	defer closeAllow()
	start := time.Now()
	from := f.hook.Count()
	f.store.StopAPIServer()
	f.step("store apiserver stopped")
	f.notSyncing(start, from, "store unreachable", "db-props", "api-extract", "features-find", "cert-db", "cluster-db")
	f.storeFailing(start, from, "store unreachable", "remote", 3)
	f.storeFailing(start, from, "store unreachable", "remote-cert", 1)
	f.storeFailing(start, from, "store unreachable", clusterStore, 1)
	for _, s := range []string{"remote", "remote-cert", clusterStore} {
		f.t.Logf("fact: store unreachable: SecretStore %s: %s", s, f.storeState(s))
	}
	start = time.Now()
	from = f.hook.Count()
	f.store.StartAPIServer()
	f.step("store apiserver started again")
	f.recovered(start, from, "store unreachable", map[string]map[string]string{
		"DriftwatchExternalSecretNotReady":    {"externalsecret": "db-props"},
		"DriftwatchExternalSecretSyncOverdue": {"externalsecret": "db-props"},
		"DriftwatchSecretStoreReadFailing":    {"store": "remote"},
		"DriftwatchSecretStoreReadFailing ":   {"store": clusterStore},
	})
	f.quiet("store unreachable undone")
}

// faultPermission: the RoleBinding that lets the reader read Secrets is
// deleted (403 for both stores), then created again.
func faultPermission(f *fixture) {
	closeAllow := f.allow(syncFamilies...)
	defer closeAllow()
	start := time.Now()
	from := f.hook.Count()
	f.readerBinding(false)
	f.step("RoleBinding deleted in the store")
	f.notSyncing(start, from, "permission removed", "db-props", "cert-db")
	f.storeFailing(start, from, "permission removed", "remote", 3)
	d := poll(f.t, wait, "permission removed: ESO marks store remote not Ready", func() (bool, string) {
		s := f.storeState("remote")
		return s.Status == "False", s.String()
	})
	f.t.Logf("fact: permission removed: ESO: SecretStore remote %s after %s", f.storeState("remote"), d.Round(100*time.Millisecond))
	s := f.agent.WaitForSeries(f.t, "driftwatch_secretstore_not_ready", map[string]string{"namespace": f.ns, "store": "remote"}, wait)
	f.t.Logf("fact: permission removed: driftwatch: %s after %s", s, time.Since(start).Round(100*time.Millisecond))
	a := f.waitAlert(from, "firing", "DriftwatchSecretStoreNotReady", map[string]string{"store": "remote"})
	f.t.Logf("fact: permission removed: Alertmanager: %s %s (%s): %s", a.Labels["alertname"], a.Status, a.Labels["severity"], a.Annotations["description"])
	start = time.Now()
	from = f.hook.Count()
	f.readerBinding(true)
	f.step("RoleBinding created again")
	f.recovered(start, from, "permission removed", map[string]map[string]string{
		"DriftwatchExternalSecretNotReady": {"externalsecret": "db-props"},
		"DriftwatchSecretStoreNotReady":    {"store": "remote"},
	})
	f.quiet("permission removed undone")
}

// faultTokenRevoked: the reader ServiceAccount is deleted, which revokes
// every bound token of it; undone by re-creating it and writing a new token
// into the SecretStore's auth Secret (what an operator does).
func faultTokenRevoked(f *fixture) {
	closeAllow := f.allow(syncFamilies...)
	defer closeAllow()
	start := time.Now()
	from := f.hook.Count()
	if err := f.store.Client.CoreV1().ServiceAccounts(remoteNS).Delete(ctxT(f.t), readerSA, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.step("reader ServiceAccount deleted (its tokens revoked)")
	f.notSyncing(start, from, "token revoked", "db-props", "api-extract", "features-find", "cluster-db")
	f.storeFailing(start, from, "token revoked", "remote", 3)
	f.storeFailing(start, from, "token revoked", clusterStore, 1)
	f.t.Logf("fact: token revoked: ClusterSecretStore %s: %s", clusterStore, f.storeState(clusterStore))
	if s := f.es("cert-db"); s.Status != "True" {
		f.t.Errorf("token revoked: cert-db (another credential) is %s", s)
	}
	f.t.Logf("fact: token revoked: SecretStore remote: %s", f.storeState("remote"))
	start = time.Now()
	from = f.hook.Count()
	f.createReaderSA()
	f.writeToken()
	f.step("ServiceAccount re-created, new token written")
	f.recovered(start, from, "token revoked", map[string]map[string]string{
		"DriftwatchExternalSecretNotReady":    {"externalsecret": "db-props"},
		"DriftwatchExternalSecretSyncOverdue": {"externalsecret": "db-props"},
		"DriftwatchSecretStoreReadFailing":    {"store": "remote"},
	})
	f.quiet("token revoked undone")
}

// faultCertExpired: the cert store's client certificate is replaced by one
// that expires 20 s later; undone by a new certificate.
func faultCertExpired(f *fixture) {
	closeAllow := f.allow(syncFamilies...)
	defer closeAllow()
	expires := time.Now().Add(20 * time.Second).Truncate(time.Second)
	f.writeCert(expires)
	written := time.Now()
	poll(f.t, wait, "cert-db synced with the short-lived certificate", func() (bool, string) {
		s := f.es("cert-db")
		return s.Status == "True" && s.RefreshTime.After(written), s.String()
	})
	f.step("cert-db synced with a certificate that expires at %s", expires.Format(time.TimeOnly))
	from := f.hook.Count()
	for time.Now().Before(expires) {
		time.Sleep(250 * time.Millisecond)
	}
	f.notSyncing(expires, from, "certificate expired", "cert-db")
	f.storeFailing(expires, from, "certificate expired", "remote-cert", 1)
	f.t.Logf("fact: certificate expired: SecretStore remote-cert: %s", f.storeState("remote-cert"))
	start := time.Now()
	from = f.hook.Count()
	f.writeCert(time.Now().Add(time.Hour))
	f.step("a new certificate written")
	f.recovered(start, from, "certificate expired", map[string]map[string]string{
		"DriftwatchExternalSecretNotReady":    {"externalsecret": "cert-db"},
		"DriftwatchExternalSecretSyncOverdue": {"externalsecret": "cert-db"},
		"DriftwatchSecretStoreReadFailing":    {"store": "remote-cert"},
	})
	f.quiet("certificate expired undone")
}

// faultKeyDeletedData: a property that spec.data names is deleted from the
// remote Secret: ESO cannot build the target and says so (not Ready); the
// Secret keeps its keys; nothing pages.
func faultKeyDeletedData(f *fixture) {
	closeAllow := f.allow(syncFamilies...)
	defer closeAllow()
	start := time.Now()
	from := f.hook.Count()
	f.remoteSecret("db", map[string]string{"username": "app"})
	f.step("property password deleted from the store's db")
	f.notSyncing(start, from, "key deleted (spec.data)", "db-props")
	f.storeFailing(start, from, "key deleted (spec.data)", "remote", 1)
	if s := f.es("cert-db"); s.Status != "True" {
		f.t.Errorf("key deleted (spec.data): cert-db reads only username, and is %s", s)
	}
	start = time.Now()
	from = f.hook.Count()
	f.remoteSecret("db", map[string]string{"username": "app", "password": "storefaults-db-v1"})
	f.recovered(start, from, "key deleted (spec.data)", map[string]map[string]string{
		"DriftwatchExternalSecretNotReady": {"externalsecret": "db-props"},
	})
	f.quiet("key deleted (spec.data) undone")
}

// shrink: a key that a dataFrom entry brought disappears at the provider:
// ESO says Ready and writes the Secret without it; web reads it by a
// required secretKeyRef: the page names the key and the reader; restoring
// the key resolves it.
func (f *fixture) shrink(fault, secret, key string, del, restore func()) {
	f.t.Helper()
	page := pages.Page{Alert: "DriftwatchSecretMissingKeyConsumed", Object: f.ns + "/" + secret}
	closePage := f.mon.AllowFault(page)
	defer closePage()
	// While the key is gone: the missing-key findings, and web's pods
	// (started before) are stale for it.
	closeAllow := f.allow("driftwatch_secret_missing_keys", "driftwatch_secret_missing_key", "driftwatch_workload_stale_pods", "driftwatch_pod_stale_secret_seconds")
	defer closeAllow()
	start := time.Now()
	from := f.hook.Count()
	del()
	d := poll(f.t, wait, fault+": ESO writes "+secret+" without "+key, func() (bool, string) {
		keys := f.secretKeys(secret)
		return !slices.Contains(keys, key), fmt.Sprint(keys)
	})
	es := map[string]string{"api-creds": "api-extract", "features": "features-find"}[secret]
	st := f.es(es)
	f.t.Logf("fact: %s: ESO: %s lost %s after %s; ExternalSecret %s: %s", fault, secret, key, d.Round(100*time.Millisecond), es, st)
	if st.Status != "True" {
		f.t.Errorf("%s: ESO's %s is %s (the silent shrink says Ready)", fault, es, st)
	}
	s := f.agent.WaitForSeries(f.t, "driftwatch_secret_missing_key", map[string]string{"namespace": f.ns, "secret": secret, "key": key, "source": "pod"}, wait)
	f.t.Logf("fact: %s: driftwatch: %s after %s", fault, s, time.Since(start).Round(100*time.Millisecond))
	a := f.waitAlert(from, "firing", page.Alert, map[string]string{"secret": secret})
	desc := a.Annotations["description"]
	f.t.Logf("fact: %s: Alertmanager: %s %s (%s) after %s: %s", fault, a.Labels["alertname"], a.Status, a.Labels["severity"], time.Since(start).Round(100*time.Millisecond), desc)
	if a.Labels["severity"] != "critical" || !strings.Contains(desc, key) || !strings.Contains(desc, "Deployment/web") {
		f.t.Errorf("%s: the page does not name the key %s and the reader Deployment/web: %v %q", fault, key, a.Labels, desc)
	}
	start = time.Now()
	from = f.hook.Count()
	restore()
	poll(f.t, wait, fault+" undone: "+secret+" has "+key, func() (bool, string) {
		keys := f.secretKeys(secret)
		return slices.Contains(keys, key), fmt.Sprint(keys)
	})
	f.agent.WaitForNoSeries(f.t, "driftwatch_secret_missing_key", map[string]string{"namespace": f.ns, "secret": secret}, wait)
	f.waitAlert(from, "resolved", page.Alert, map[string]string{"secret": secret})
	f.t.Logf("fact: %s undone: the key is back, the page resolved after %s", fault, time.Since(start).Round(100*time.Millisecond))
	f.quiet(fault + " undone")
}

func faultKeyDeletedExtract(f *fixture) {
	f.shrink("key deleted (dataFrom.extract)", "api-creds", "API_URL",
		func() { f.remoteSecret("api", map[string]string{"API_KEY": "storefaults-api-key"}) },
		func() {
			f.remoteSecret("api", map[string]string{"API_KEY": "storefaults-api-key", "API_URL": "https://api.example"})
		})
}

func faultKeyDeletedFind(f *fixture) {
	f.shrink("key deleted (dataFrom.find)", "features", "feature-beta",
		func() {
			if err := f.store.Client.CoreV1().Secrets(remoteNS).Delete(ctxT(f.t), "feature-beta", metav1.DeleteOptions{}); err != nil {
				f.t.Fatal(err)
			}
		},
		func() { f.remoteSecret("feature-beta", map[string]string{"on": "1"}) })
}

// faultRotated: a value rotated at the provider: ESO updates db-props; web
// (env) runs the old value and is stale, files (a volume the kubelet
// refreshes) is not; a rollout restart of web makes it current.
func faultRotated(f *fixture) {
	closeAllow := f.allow("driftwatch_workload_stale_pods", "driftwatch_pod_stale_secret_seconds")
	defer closeAllow()
	start := time.Now()
	from := f.hook.Count()
	before := f.agent.WaitForSeries(f.t, "driftwatch_secret_last_data_change_timestamp_seconds", map[string]string{"namespace": f.ns, "secret": "db-props"}, wait)
	f.remoteSecret("db", map[string]string{"username": "app", "password": "storefaults-db-v2"})
	f.step("password rotated in the store")
	poll(f.t, wait, "value rotated: ESO updates db-props", func() (bool, string) {
		series, err := f.agent.Scrape()
		if err != nil {
			return false, err.Error()
		}
		got := scrape.Find(series, "driftwatch_secret_last_data_change_timestamp_seconds", map[string]string{"namespace": f.ns, "secret": "db-props"})
		return len(got) == 1 && got[0].Value > before.Value, fmt.Sprint(got)
	})
	f.t.Logf("fact: value rotated: ESO updated db-props, seen by driftwatch after %s", time.Since(start).Round(100*time.Millisecond))
	s := f.agent.WaitForSeries(f.t, "driftwatch_workload_stale_pods", map[string]string{"namespace": f.ns, "workload": "web", "secret": "db-props"}, wait)
	f.t.Logf("fact: value rotated: driftwatch: %s after %s", s, time.Since(start).Round(100*time.Millisecond))
	series, err := f.agent.Scrape()
	if err != nil {
		f.t.Fatal(err)
	}
	if got := scrape.Find(series, "driftwatch_workload_stale_pods", map[string]string{"namespace": f.ns, "workload": "files"}); len(got) > 0 {
		f.t.Errorf("value rotated: files reads db-props through a volume the kubelet refreshes, and is reported stale: %v", got)
	}
	a := f.waitAlert(from, "firing", "DriftwatchWorkloadStalePods", map[string]string{"workload": "web"})
	f.t.Logf("fact: value rotated: Alertmanager: %s %s (%s): %s", a.Labels["alertname"], a.Status, a.Labels["severity"], a.Annotations["description"])
	f.noPageNow("value rotated")

	start = time.Now()
	from = f.hook.Count()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := f.c.Kubectl(ctx, "", "-n", f.ns, "rollout", "restart", "deployment/web"); err != nil {
		f.t.Fatalf("kubectl rollout restart: %v\n%s", err, out)
	}
	// No kubelet here: the new pod is marked running (after the change), the
	// old one deleted as the ReplicaSet controller would once the new is ready.
	f.markNewWebRunning(ctx)
	f.agent.WaitForNoSeries(f.t, "driftwatch_workload_stale_pods", map[string]string{"namespace": f.ns}, wait)
	f.waitAlert(from, "resolved", "DriftwatchWorkloadStalePods", map[string]string{"workload": "web"})
	f.t.Logf("fact: value rotated: after a rollout restart of web the stale finding and alert resolved after %s", time.Since(start).Round(100*time.Millisecond))
}

// markNewWebRunning marks web's pods of the newest ReplicaSet running and
// deletes the others.
func (f *fixture) markNewWebRunning(ctx context.Context) {
	f.t.Helper()
	pods := f.c.Client.CoreV1().Pods(f.ns)
	var old []string
	poll(f.t, wait, "web's new pod", func() (bool, string) {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		old = old[:0]
		fresh := 0
		for _, p := range l.Items {
			if p.Status.Phase == "Running" {
				old = append(old, p.Name)
			} else {
				fresh++
			}
		}
		return fresh > 0, fmt.Sprintf("%d pods, %d running", len(l.Items), len(old))
	})
	for _, name := range old {
		_ = pods.Delete(ctx, name, metav1.DeleteOptions{})
	}
	f.c.MarkPodsRunning(f.t, f.ns, "app=web", 1)
}
