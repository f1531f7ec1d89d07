package detectors

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func fakeStore(name string, kv ...string) string {
	y := "apiVersion: external-secrets.io/v1\nkind: SecretStore\nmetadata: {name: " + name + "}\nspec:\n  provider:\n    fake:\n      data:\n"
	for i := 0; i+1 < len(kv); i += 2 {
		y += "      - {key: " + kv[i] + ", value: " + strconv.Quote(kv[i+1]) + "}\n"
	}
	if len(kv) == 0 {
		y += "      - {key: unrelated, value: x}\n"
	}
	return y
}

// healthyES is applied next to every scenario: it must never show up. Every
// ExternalSecret here sets creationPolicy explicitly: one applied without it is an
// implicit_creation_policy finding (see migration_test.go). Its key
// name differs from the scenarios' so the two Secrets never hold identical data
// (which would rightly be a duplicate-credentials finding).
const healthyES = `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: healthy}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: healthy, creationPolicy: Owner}
  data:
  - {secretKey: HEALTHY_USER, remoteRef: {key: db-user}}
`

// ESO with deletionPolicy Delete skips a key the store lacks and reports
// Ready=True SecretSynced over a Secret short by that key: the purest
// Ready-but-short case. Adding the key to the store heals it at the next refresh.
func TestESOReadyButShortDeletionPolicyDelete(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin"))
	c.Apply(t, ns, healthyES+`---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: short}
spec:
  refreshInterval: 2s
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: short, creationPolicy: Owner, deletionPolicy: Delete}
  data:
  - {secretKey: USER, remoteRef: {key: db-user}}
  - {secretKey: TOKEN, remoteRef: {key: api-token}}
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns,
		series("driftwatch_secret_missing_key", `key="TOKEN",namespace="`+ns+`",optional="false",secret="short",source="externalsecret"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="short",source="externalsecret"`, 1),
		series("driftwatch_externalsecret_ready_but_short", `externalsecret="short",namespace="`+ns+`",reason="missing_keys",secret="short"`, 1),
	)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin", "api-token", "tok-e2e"))
	expectFindings(t, a, ns)
}

// creationPolicy Merge with no target: ESO says Ready=True, reason SecretMissing.
// Creating the Secret lets ESO merge into it at the next refresh.
func TestESOMergeWithoutTarget(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin"))
	c.Apply(t, ns, healthyES+`---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: merge}
spec:
  refreshInterval: 2s
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: merge-target, creationPolicy: Merge}
  data:
  - {secretKey: USER, remoteRef: {key: db-user}}
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns,
		series("driftwatch_secret_absent", `namespace="`+ns+`",secret="merge-target",source="externalsecret"`, 1),
		series("driftwatch_externalsecret_ready_but_short", `externalsecret="merge",namespace="`+ns+`",reason="absent",secret="merge-target"`, 1),
	)
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: merge-target}
stringData: {OTHER: kept}
`)
	expectFindings(t, a, ns)
}

// dataFrom.find whose regexp matches nothing: Ready=True and no Secret at all.
func TestESODataFromFindMatchesNothing(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin"))
	c.Apply(t, ns, healthyES+`---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: finder}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: finder, creationPolicy: Owner}
  dataFrom:
  - find: {name: {regexp: "^nomatch-.*"}}
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	expectFindings(t, a, ns,
		series("driftwatch_secret_absent", `namespace="`+ns+`",secret="finder",source="externalsecret"`, 1),
		series("driftwatch_externalsecret_ready_but_short", `externalsecret="finder",namespace="`+ns+`",reason="absent",secret="finder"`, 1),
	)
}

// A key removed from the store after a good sync: Ready=False, the Secret keeps
// its old data (so no missing key), and the sync age keeps growing.
func TestESOKeyRemovedAfterGoodSync(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin", "db-pass", "pw-e2e"))
	c.Apply(t, ns, healthyES+`---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: rotated}
spec:
  refreshInterval: 2s
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: rotated, creationPolicy: Owner}
  data:
  - {secretKey: PASS, remoteRef: {key: db-pass}}
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	a.WaitForSeries(t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": ns, "externalsecret": "rotated"}, wait)
	expectFindings(t, a, ns)

	c.Apply(t, ns, fakeStore("store", "db-user", "admin"))
	// ESO: "could not get secret data from provider": the store-level finding
	// counts it (before the sync age passes 3 × 2 s and overdue joins).
	expectFindings(t, a, ns,
		series("driftwatch_externalsecret_not_ready", `externalsecret="rotated",namespace="`+ns+`",reason="SecretSyncedError"`, 1),
		series("driftwatch_secretstore_read_failing", `kind="SecretStore",namespace="`+ns+`",store="store"`, 1),
	)
	age := func() float64 {
		return a.WaitForSeries(t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": ns, "externalsecret": "rotated"}, wait).Value
	}
	first := age()
	time.Sleep(3 * time.Second)
	if second := age(); second <= first {
		t.Fatalf("sync age must grow while the ExternalSecret fails: %g then %g", first, second)
	}
}

// growES is the ExternalSecret "grow": deletionPolicy Delete (ESO skips a key
// the store lacks and says Ready), one data entry per "secretKey:remoteKey".
func growES(entries ...string) string {
	y := "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: grow}\nspec:\n" +
		"  refreshInterval: 1h\n  secretStoreRef: {name: store, kind: SecretStore}\n" +
		"  target: {name: grow, creationPolicy: Owner, deletionPolicy: Delete}\n  data:\n"
	for _, e := range entries {
		k, r, _ := strings.Cut(e, ":")
		y += "  - {secretKey: " + k + ", remoteRef: {key: " + r + "}}\n"
	}
	return y
}

// waitESSynced waits until the real ESO has synced the current generation of
// ns/name (more than after: a spec change applied before) and returns it and
// when: ESO's status.syncedResourceVersion, as ESO writes it
// ("<generation>-<hash>", what model.ExternalSecret.SyncPending reads), names
// it.
func waitESSynced(t *testing.T, c *cluster.Cluster, ns, name string, after int64) (int64, time.Time) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last string
	var gen int64
	for time.Now().Before(deadline) {
		es, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gen = es.GetGeneration()
		last, _, _ = unstructured.NestedString(es.Object, "status", "syncedResourceVersion")
		if gen > after && strings.HasPrefix(last, strconv.FormatInt(gen, 10)+"-") {
			return gen, time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s/%s: ESO did not sync a generation after %d (generation %d, status.syncedResourceVersion %q)", ns, name, after, gen, last)
	return 0, time.Time{}
}

// A spec change that adds a key reaches the agent before ESO has synced it:
// the status still says Ready of the spec before, and the Secret lacks the new
// key until ESO writes it. Sampled every 50 ms through the real ESO's
// reconcile, nothing is ever reported (found in review: ready_but_short and
// missing_keys for the scrape or two in between). A change ESO syncs short
// (the store lacks the key) is reported once synced, well before the 2-minute
// grace a sync still pending gets: the agent reads the real ESO's
// syncedResourceVersion as synced.
func TestESOSpecChangeAddingAKey(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin", "api-token", "tok-e2e"))
	c.Apply(t, ns, healthyES+"---\n"+growES("USER:db-user"))
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	gen, _ := waitESSynced(t, c, ns, "grow", 0)
	expectFindings(t, a, ns)

	stop, seen := make(chan struct{}), make(chan []string, 1)
	scrapes := 0
	go func() {
		var bad []string
		for {
			select {
			case <-stop:
				seen <- bad
				return
			default:
			}
			if all, err := a.Scrape(); err == nil {
				scrapes++
				for _, s := range all {
					if scrape.IsFinding(s) && s.Labels["namespace"] == ns {
						bad = append(bad, s.String())
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	c.Apply(t, ns, healthyES+"---\n"+growES("USER:db-user", "TOKEN:api-token"))
	gen, _ = waitESSynced(t, c, ns, "grow", gen)
	time.Sleep(3 * time.Second) // the Secret's update, on its own stream
	close(stop)
	if bad := <-seen; len(bad) > 0 {
		t.Fatalf("reported while ESO synced a spec change (%d scrapes):\n  %s", scrapes, strings.Join(bad, "\n  "))
	}
	t.Logf("%d scrapes through the change and ESO's sync, none with a finding", scrapes)

	c.Apply(t, ns, healthyES+"---\n"+growES("USER:db-user", "TOKEN:api-token", "CERT:tls-cert"))
	gen, synced := waitESSynced(t, c, ns, "grow", gen)
	expectFindings(t, a, ns,
		series("driftwatch_secret_missing_key", `key="CERT",namespace="`+ns+`",optional="false",secret="grow",source="externalsecret"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="grow",source="externalsecret"`, 1),
		series("driftwatch_externalsecret_ready_but_short", `externalsecret="grow",namespace="`+ns+`",reason="missing_keys",secret="grow"`, 1),
	)
	t.Logf("short sync reported %s after ESO's status named generation %d", time.Since(synced).Round(time.Second), gen)
}
