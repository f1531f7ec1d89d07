package detectors

import (
	"strconv"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
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
