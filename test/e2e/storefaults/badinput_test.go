package storefaults

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// badInput: stores the real ESO cannot use — an auth Secret that does not
// exist, a CA bundle that is not PEM, a provider block without server
// trust or credentials. The agent must name each store with ESO's own
// condition reason, stay up, and never show a value; last, no value of the
// whole run is in the agent's metrics, findings API or log.
func badInput(f *fixture) {
	closeAllow := f.allow("driftwatch_secretstore_not_ready", "driftwatch_externalsecret_not_ready")
	defer closeAllow()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stores := map[string]string{
		"no-auth-secret": storeYAML("SecretStore", "no-auth-secret", f.store.URL, f.store.CAPEM, `        token:
          bearerToken: {name: missing-token, key: token}`),
		"bad-ca": storeYAML("SecretStore", "bad-ca", f.store.URL, []byte("not a PEM bundle"), tokenAuth),
		"wrong-shape": fmt.Sprintf(`apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: wrong-shape}
spec:
  provider:
    kubernetes:
      remoteNamespace: %s
      server: {url: %s}
`, remoteNS, f.store.URL),
	}
	var applied []string
	for name, y := range stores {
		out, err := f.c.Kubectl(ctx, y, "-n", f.ns, "apply", "-f", "-")
		if err != nil {
			f.t.Logf("fact: bad input: the apiserver (ESO's CRD schema) rejects SecretStore %s: %v %s", name, err, strings.TrimSpace(out))
			continue
		}
		applied = append(applied, name)
	}
	for _, name := range applied {
		poll(f.t, wait, "bad input: ESO judges SecretStore "+name, func() (bool, string) {
			s := f.storeState(name)
			return s.Status != "", s.String()
		})
		st := f.storeState(name)
		f.t.Logf("fact: bad input: ESO: SecretStore %s: %s", name, st)
		if st.Status == "True" {
			continue // nothing for driftwatch to say (recorded above)
		}
		s := f.agent.WaitForSeries(f.t, "driftwatch_secretstore_not_ready", map[string]string{"namespace": f.ns, "store": name, "kind": "SecretStore"}, wait)
		f.t.Logf("fact: bad input: driftwatch: %s", s)
		if s.Labels["reason"] != st.Reason {
			f.t.Errorf("bad input: store %s: driftwatch's reason %q is not ESO's %q", name, s.Labels["reason"], st.Reason)
		}
	}
	if gone, err := f.agent.Exited(); gone {
		f.t.Fatalf("bad input: the agent exited: %v", err)
	}
	if code, _, err := f.agent.Get("/readyz"); err != nil || code != http.StatusOK {
		f.t.Errorf("bad input: agent /readyz %d %v", code, err)
	}
	// The findings API names the stores.
	_, body, err := f.agent.Get("/api/v1/findings")
	if err != nil {
		f.t.Fatal(err)
	}
	for _, name := range applied {
		if st := f.storeState(name); st.Status != "True" && !strings.Contains(body, name) {
			f.t.Errorf("bad input: /api/v1/findings does not name store %s", name)
		}
	}

	// No value of this run anywhere the agent writes.
	_, metrics, err := f.agent.Get("/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	logb, err := os.ReadFile(f.agent.LogPath)
	if err != nil {
		f.t.Fatal(err)
	}
	// The credentials ESO used: the token and the client key in the auth Secrets.
	tok, err := f.c.Client.CoreV1().Secrets(f.ns).Get(ctx, "store-token", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	cert, err := f.c.Client.CoreV1().Secrets(f.ns).Get(ctx, "store-cert", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	key := string(cert.Data["tls.key"])
	key = strings.TrimSpace(key[strings.Index(key, "\n")+1:])[:40] // the key's first base64 bytes
	for _, v := range []string{"storefaults-db-v1", "storefaults-db-v2", "storefaults-api-key", "https://api.example",
		string(tok.Data["token"])[:40], base64.StdEncoding.EncodeToString([]byte("storefaults-db-v1")), key} {
		for where, text := range map[string]string{"/metrics": metrics, "/api/v1/findings": body, "the log": string(logb)} {
			if strings.Contains(text, v) {
				f.t.Errorf("a value of the run (%.6s…) is in the agent's %s", v, where)
			}
		}
	}
}
