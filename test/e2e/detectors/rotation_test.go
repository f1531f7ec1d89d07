package detectors

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// rotation_blocked against the real ESO controller: what it reports is what
// ESO does. A value rotated in the store reaches the periodic ExternalSecret's
// Secret and not the CreatedOnce one's; the generator-backed CreatedOnce
// ExternalSecret (a Password made once, on purpose) is not reported; setting the
// policy back to Periodic clears the finding and brings the rotation in.
func TestESORotationBlocked(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-user", "admin", "api-token", "tok-1"))
	once := func(policy string) string {
		return `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: once}
spec:
  refreshPolicy: ` + policy + `
  refreshInterval: 2s
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: once, creationPolicy: Owner}
  data:
  - {secretKey: ONCE_TOKEN, remoteRef: {key: api-token}}
`
	}
	c.Apply(t, ns, healthyES+`---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: periodic}
spec:
  refreshInterval: 2s
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: periodic, creationPolicy: Owner}
  data:
  - {secretKey: TOKEN, remoteRef: {key: api-token}}
---
apiVersion: generators.external-secrets.io/v1alpha1
kind: Password
metadata: {name: pw}
spec: {length: 24, digits: 5, symbols: 0, noUpper: false, allowRepeat: true}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: generated}
spec:
  refreshPolicy: CreatedOnce
  target: {name: generated, creationPolicy: Owner}
  dataFrom:
  - sourceRef:
      generatorRef: {apiVersion: generators.external-secrets.io/v1alpha1, kind: Password, name: pw}
---`+once("CreatedOnce"))
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	for _, es := range []string{"once", "periodic", "generated"} {
		a.WaitForSeries(t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": ns, "externalsecret": es}, wait)
	}
	expectFindings(t, a, ns,
		series("driftwatch_externalsecret_rotation_blocked", `externalsecret="once",namespace="`+ns+`",reason="created_once"`, 1))

	// Rotate in the store: ESO brings it into the periodic Secret only.
	c.Apply(t, ns, fakeStore("store", "db-user", "admin", "api-token", "tok-2"))
	value := func(secret, key string) string {
		out, err := c.Kubectl(ctxT(t), "", "-n", ns, "get", "secret", secret, "-o", "jsonpath={.data."+key+"}")
		if err != nil {
			t.Fatalf("get secret %s: %v", secret, err)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("secret %s key %s: %v", secret, key, err)
		}
		return string(b)
	}
	waitValue := func(secret, key, want string) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for value(secret, key) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s never became the rotated value", secret, key)
			}
			time.Sleep(time.Second)
		}
	}
	waitValue("periodic", "TOKEN", "tok-2")
	time.Sleep(5 * time.Second) // two more refresh intervals of 2s
	if value("once", "ONCE_TOKEN") != "tok-1" {
		t.Fatal("ESO refreshed a CreatedOnce ExternalSecret: the finding's premise is wrong")
	}
	expectFindings(t, a, ns,
		series("driftwatch_externalsecret_rotation_blocked", `externalsecret="once",namespace="`+ns+`",reason="created_once"`, 1))

	// The fix: refresh periodically again. The finding clears and the rotation
	// arrives.
	c.Apply(t, ns, once("Periodic"))
	expectFindings(t, a, ns)
	waitValue("once", "ONCE_TOKEN", "tok-2")
}
