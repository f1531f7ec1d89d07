package detectors

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// safeES is eso_test.go's healthyES with creationPolicy set, so that it is
// safe by every adoption rule however it is applied (server-side apply without
// creationPolicy is itself an implicit policy).
const safeES = `
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

// runAgentCLI runs the built agent binary as a real process (a one-shot
// subcommand) and returns its stdout, stderr and exit code.
func runAgentCLI(t *testing.T, c *cluster.Cluster, args ...string) (string, string, int) {
	t.Helper()
	bin, err := c.BuildAgent()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("agent %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), code
}

// secretAlphabet holds characters that none of compare's own output uses
// (keys, verdicts, counts, names), so any 4-byte run of a value found in the
// output is a leak, not a coincidence.
const secretAlphabet = "!#$%&*+;<=>?@^`{|}~BJKQWXZ"

func randomValue(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		x, err := rand.Int(rand.Reader, big.NewInt(int64(len(secretAlphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = secretAlphabet[x.Int64()]
	}
	return string(b)
}

// assertNoLeak fails if any value, any 4-byte substring of one, or a value's
// base64 appears in out.
func assertNoLeak(t *testing.T, what, out string, values ...string) {
	t.Helper()
	for _, v := range values {
		if enc := base64.StdEncoding.EncodeToString([]byte(v)); strings.Contains(out, enc) {
			t.Fatalf("%s holds the base64 of a Secret value:\n%s", what, out)
		}
		for i := 0; i+4 <= len(v); i++ {
			if strings.Contains(out, v[i:i+4]) {
				t.Fatalf("%s holds %q, part of a Secret value:\n%s", what, v[i:i+4], out)
			}
		}
	}
}

func createSecret(t *testing.T, c *cluster.Cluster, ns, name string, data map[string]string, annotations map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctxT(t), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// `agent compare` as a real process against the real apiserver, with the
// agent's restricted kubeconfig: one line per key, the summary last, exit 1 on
// any difference, 0 when identical, 2 when a Secret cannot be read; no value
// (nor any 4 bytes of one) on stdout or stderr, in text or JSON.
func TestCompareCLI(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	pass, user, liveOnly, storeOnly := randomValue(t, 24), randomValue(t, 16), randomValue(t, 20), randomValue(t, 20)
	values := []string{pass, user, liveOnly, storeOnly}
	createSecret(t, c, ns, "live", map[string]string{"PASS": pass + "\n", "USER": user, "LEGACY_TOKEN": liveOnly}, nil)
	createSecret(t, c, ns, "check", map[string]string{"PASS": pass, "USER": user, "NEW_TOKEN": storeOnly}, nil)
	createSecret(t, c, ns, "copy", map[string]string{"PASS": pass + "\n", "USER": user, "LEGACY_TOKEN": liveOnly}, nil)

	compare := func(args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code := runAgentCLI(t, c, append([]string{"compare", "--kubeconfig", c.AgentKubeconfig}, args...)...)
		assertNoLeak(t, "compare stdout", out, values...)
		assertNoLeak(t, "compare stderr", errOut, values...)
		return out, errOut, code
	}

	out, errOut, code := compare(ns+"/live", ns+"/check")
	want := "LEGACY_TOKEN: MISSING FROM STORE\n" +
		"NEW_TOKEN: ONLY IN STORE\n" +
		"PASS: MISMATCH (25 vs 24 bytes) - hint: the live value has an extra trailing newline\n" +
		"USER: MATCH\n" +
		"DIFFERENT: live " + ns + "/live vs store " + ns + "/check (sizes: live vs store): 4 keys, 1 match, 1 mismatch, 1 missing from store, 1 only in store\n"
	if code != 1 || out != want {
		t.Fatalf("compare live check: exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s\nstderr:\n%s", code, out, want, errOut)
	}

	// The same as JSON, flags after the arguments.
	out, errOut, code = compare(ns+"/live", ns+"/check", "--output", "json")
	var rep struct {
		Identical bool
		Summary   struct{ Keys, Match, Mismatch int }
		Keys      []struct {
			Key, Verdict, Hint string
			HintSide           string `json:"hint_side"`
			LiveBytes          int    `json:"live_bytes"`
			StoreBytes         int    `json:"store_bytes"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("compare --output json: %v\n%s\nstderr:\n%s", err, out, errOut)
	}
	if code != 1 || rep.Identical || rep.Summary.Keys != 4 || rep.Summary.Match != 1 || rep.Summary.Mismatch != 1 || len(rep.Keys) != 4 {
		t.Fatalf("compare --output json: exit %d, report:\n%s", code, out)
	}
	if k := rep.Keys[2]; k.Key != "PASS" || k.Verdict != "MISMATCH" || k.Hint != "trailing_newline" || k.HintSide != "live" || k.LiveBytes != 25 || k.StoreBytes != 24 {
		t.Fatalf("compare --output json: PASS is %+v", k)
	}

	// Identical Secrets.
	out, errOut, code = compare(ns+"/live", ns+"/copy")
	want = "LEGACY_TOKEN: MATCH\nPASS: MATCH\nUSER: MATCH\n" +
		"IDENTICAL: live " + ns + "/live vs store " + ns + "/copy (sizes: live vs store): 3 keys, 3 match, 0 mismatch, 0 missing from store, 0 only in store\n"
	if code != 0 || out != want {
		t.Fatalf("compare live copy: exit %d, stdout:\n%s\nwant exit 0, stdout:\n%s\nstderr:\n%s", code, out, want, errOut)
	}

	// A Secret that does not exist: an access error.
	out, errOut, code = compare(ns+"/live", ns+"/nope")
	if code != 2 || out != "" || !strings.Contains(errOut, "cannot read Secret "+ns+"/nope") {
		t.Fatalf("compare live nope: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 2, nothing on stdout, the Secret named on stderr", code, out, errOut)
	}
	// Bad usage.
	if _, errOut, code = compare(ns + "/live"); code != 2 {
		t.Fatalf("compare with one argument: exit %d, want 2; stderr:\n%s", code, errOut)
	}
}

// Continuous compare: an ExternalSecret (the real ESO controller syncs it from
// a fake store) annotated driftwatch.io/compare-with names the live Secret it
// is meant to replace. The live copy has a trailing newline and a key the store
// lacks: one mismatch series per key, compare_ready 0. Fixing the live Secret
// makes the pair safe to adopt: no findings, compare_ready 1.
func TestCompareContinuous(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, fakeStore("store", "db-pass", "pw-compare-e2e", "db-user", "admin"))
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {PASS: "pw-compare-e2e\n", LEGACY: old-e2e}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: app-check
  annotations: {driftwatch.io/compare-with: app}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: app-check, creationPolicy: Owner}
  data:
  - {secretKey: PASS, remoteRef: {key: db-pass}}
`+"---\n"+safeES)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	pair := `compare_with="app",`
	expectFindings(t, a, ns,
		series("driftwatch_compare_mismatch", pair+`hint="whitespace",key="PASS",namespace="`+ns+`",secret="app-check",verdict="mismatch"`, 1),
		series("driftwatch_compare_mismatch", pair+`hint="",key="LEGACY",namespace="`+ns+`",secret="app-check",verdict="missing_from_store"`, 1),
	)
	ready := map[string]string{"namespace": ns, "secret": "app-check", "compare_with": "app"}
	if s := a.WaitForSeries(t, "driftwatch_compare_ready", ready, wait); s.Value != 0 {
		t.Fatalf("driftwatch_compare_ready = %g with mismatches", s.Value)
	}

	// The live Secret is fixed to the store's bytes.
	if _, err := c.Client.CoreV1().Secrets(ns).Update(ctxT(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Data:       map[string][]byte{"PASS": []byte("pw-compare-e2e")},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectFindings(t, a, ns)
	deadline := time.Now().Add(wait)
	for {
		s := a.WaitForSeries(t, "driftwatch_compare_ready", ready, wait)
		if s.Value == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("driftwatch_compare_ready = %g after the fix, want 1", s.Value)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Adoption safety with the real ESO CRDs (so defaulting is real) and the real
// controller: each unsafe reason once, next to safe ExternalSecrets.
func TestExternalSecretUnsafe(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx := ctxT(t)
	// The store lacks "adopted" at first: ESO cannot sync adopter, so it has not
	// taken Secret existing over yet (owner_over_existing); once the key is
	// there ESO adopts it, and the finding clears.
	storeWithout := fakeStore("store", "db-user", "admin", "implicit", "imp-e2e", "merged", "mrg-e2e", "explicit", "exp-e2e")
	c.Apply(t, ns, storeWithout)
	// A second store for dataFrom.find: its folder holds the two keys the chart
	// expects and two parked ones nobody asked for.
	c.Apply(t, ns, fakeStore("folder", "url", "https://svc.e2e", "token", "tok-e2e", "parked-old", "po-e2e", "parked-tmp", "pt-e2e"))
	// Secrets that exist before the ExternalSecrets that take them over. A second
	// between them: creation timestamps have one-second resolution.
	c.Apply(t, ns, `
apiVersion: v1
kind: Secret
metadata: {name: existing}
stringData: {OLD: kept-e2e}
---
apiVersion: v1
kind: Secret
metadata: {name: merged}
stringData: {BASE: base-e2e}
`)
	time.Sleep(1100 * time.Millisecond)

	// implicit_creation_policy: applied with client-side `kubectl apply` and no
	// creationPolicy; the CRD defaults it to Owner on the live object. Next to
	// it, one applied the same way with creationPolicy set.
	const implicit = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: implicit}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: implicit}
  data:
  - {secretKey: IMPLICIT, remoteRef: {key: implicit}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: explicit}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: explicit, creationPolicy: Owner}
  data:
  - {secretKey: EXPLICIT, remoteRef: {key: explicit}}
`
	if out, err := c.Kubectl(ctx, implicit, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	es, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctx, "implicit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedString(es.Object, "spec", "target", "creationPolicy"); p != "Owner" {
		t.Fatalf("the CRD did not default creationPolicy: %q", p)
	}

	c.Apply(t, ns, `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: adopter}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: existing, creationPolicy: Owner}
  data:
  - {secretKey: ADOPTED, remoteRef: {key: adopted}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: merger}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: merged, creationPolicy: Merge, deletionPolicy: Delete}
  data:
  - {secretKey: MERGED, remoteRef: {key: merged}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: finder
  annotations: {driftwatch.io/expected-keys: "url,token"}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: folder, kind: SecretStore}
  target: {name: found, creationPolicy: Owner}
  dataFrom:
  - find: {name: {regexp: ".*"}}
`+"---\n"+safeES)

	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	unsafe := func(es, reason string) string {
		return series("driftwatch_externalsecret_unsafe", `externalsecret="`+es+`",namespace="`+ns+`",reason="`+reason+`"`, 1)
	}
	expectFindings(t, a, ns,
		unsafe("implicit", "implicit_creation_policy"),
		unsafe("adopter", "owner_over_existing"),
		unsafe("merger", "delete_with_merge"),
		unsafe("finder", "unexpected_keys"),
		series("driftwatch_externalsecret_not_ready", `externalsecret="adopter",namespace="`+ns+`",reason="SecretSyncedError"`, 1),
		// The store lacks the key adopter reads: ESO "could not get secret
		// data from provider", counted for the store.
		series("driftwatch_secretstore_read_failing", `kind="SecretStore",namespace="`+ns+`",store="store"`, 1),
		// Secret existing does not hold what adopter expects yet.
		series("driftwatch_secret_missing_key", `key="ADOPTED",namespace="`+ns+`",optional="false",secret="existing",source="externalsecret"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="existing",source="externalsecret"`, 1),
	)

	// The store gets the key; a forced refresh lets the real ESO controller adopt
	// the existing Secret (its controller reference from now on): the takeover
	// is done and legitimate, and the finding clears.
	c.Apply(t, ns, fakeStore("store", "db-user", "admin", "implicit", "imp-e2e", "adopted", "ado-e2e", "merged", "mrg-e2e",
		"explicit", "exp-e2e"))
	if out, err := c.Kubectl(ctx, "", "annotate", "-n", ns, "externalsecret", "adopter", "force-sync="+strconv.FormatInt(time.Now().UnixNano(), 10), "--overwrite"); err != nil {
		t.Fatalf("kubectl annotate: %v\n%s", err, out)
	}
	deadline := time.Now().Add(wait)
	for {
		s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "existing", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(s); ref != nil && ref.Kind == "ExternalSecret" && ref.Name == "adopter" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ESO did not adopt Secret existing: owners %v", s.OwnerReferences)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Setting creationPolicy in the applied manifest clears its finding.
	if out, err := c.Kubectl(ctx, strings.Replace(implicit, "target: {name: implicit}", "target: {name: implicit, creationPolicy: Owner}", 1),
		"apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	expectFindings(t, a, ns,
		unsafe("merger", "delete_with_merge"),
		unsafe("finder", "unexpected_keys"),
	)
}

// Workload identity per provider: SecretStores authenticating as a
// ServiceAccount. AWS (jwt) needs eks.amazonaws.com/role-arn, Azure
// (WorkloadIdentity) needs azure.workload.identity/client-id, an absent
// ServiceAccount is reported as such; GCP's annotation is optional on GKE, so
// it is an info series only. No cloud is reachable: the real ESO controller
// marks the stores not Ready, which is a finding too.
func TestWorkloadIdentity(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, `
apiVersion: v1
kind: ServiceAccount
metadata: {name: aws-plain}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: aws-irsa
  annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/e2e"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: azure-plain}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: azure-wi
  annotations: {azure.workload.identity/client-id: "00000000-0000-0000-0000-000000000001", azure.workload.identity/tenant-id: "00000000-0000-0000-0000-000000000002"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: gcp-plain}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws-missing}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth: {jwt: {serviceAccountRef: {name: aws-plain}}}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws-absent}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth: {jwt: {serviceAccountRef: {name: ghost}}}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws-ok}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth: {jwt: {serviceAccountRef: {name: aws-irsa}}}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: azure-missing}
spec:
  provider:
    azurekv:
      vaultUrl: "https://e2e.vault.azure.net"
      authType: WorkloadIdentity
      serviceAccountRef: {name: azure-plain}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: azure-ok}
spec:
  provider:
    azurekv:
      vaultUrl: "https://e2e.vault.azure.net"
      authType: WorkloadIdentity
      serviceAccountRef: {name: azure-wi}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: gcp}
spec:
  provider:
    gcpsm:
      projectID: e2e-project
      auth:
        workloadIdentity:
          clusterLocation: europe-west1
          clusterName: e2e
          serviceAccountRef: {name: gcp-plain}
`)
	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	id := func(metric, sa, provider, store, reason string) string {
		return series(metric, `namespace="`+ns+`",provider="`+provider+`",reason="`+reason+`",serviceaccount="`+sa+`",store="`+store+`",store_kind="SecretStore",store_namespace="`+ns+`"`, 1)
	}
	const missing, info = "driftwatch_serviceaccount_workload_identity_missing", "driftwatch_serviceaccount_workload_identity_info"
	// ESO cannot build a client for any of them here (no IAM role, no client ID,
	// no STS or metadata server to reach): every store is not Ready, the
	// well-configured ones included. Those findings are the sync-health
	// detector's; workload identity adds its own only for the misconfigured.
	notReady := func(store string) string {
		return series("driftwatch_secretstore_not_ready", `kind="SecretStore",namespace="`+ns+`",reason="InvalidProviderConfig",store="`+store+`"`, 1)
	}
	expectFindings(t, a, ns,
		notReady("aws-missing"), notReady("aws-absent"), notReady("aws-ok"),
		notReady("azure-missing"), notReady("azure-ok"), notReady("gcp"),
		id(missing, "aws-plain", "aws", "aws-missing", "annotation_missing"),
		id(missing, "ghost", "aws", "aws-absent", "sa_absent"),
		id(missing, "azure-plain", "azurekv", "azure-missing", "annotation_missing"),
		id(info, "gcp-plain", "gcpsm", "gcp", "annotation_missing"),
	)

	// The missing annotation is added: that finding goes.
	c.Apply(t, ns, `
apiVersion: v1
kind: ServiceAccount
metadata:
  name: aws-plain
  annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/e2e-plain"}
`)
	expectFindings(t, a, ns,
		notReady("aws-missing"), notReady("aws-absent"), notReady("aws-ok"),
		notReady("azure-missing"), notReady("azure-ok"), notReady("gcp"),
		id(missing, "ghost", "aws", "aws-absent", "sa_absent"),
		id(missing, "azure-plain", "azurekv", "azure-missing", "annotation_missing"),
		id(info, "gcp-plain", "gcpsm", "gcp", "annotation_missing"),
	)
}

// `agent check` as a real process: exit 1 with a finding at or above
// --fail-on in the namespaces it checks, 0 in a healthy one.
func TestCheckExitCodes(t *testing.T) {
	c := cluster.Get(t)
	ctx := ctxT(t)
	// critical: a key the chart author declared is missing.
	bad := c.NewNamespace(t)
	c.Apply(t, bad, `
apiVersion: v1
kind: Secret
metadata:
  name: legacy
  annotations: {driftwatch.io/expected-keys: "URL, TOKEN"}
stringData: {URL: "https://legacy.e2e"}
`)
	// warning only: a Secret applied with client-side `kubectl apply` keeps a
	// copy of its data in the last-applied annotation (info while it equals
	// live); the value rotates by a patch and the copy is stale: a warning.
	warn := c.NewNamespace(t)
	if out, err := c.Kubectl(ctx, "apiVersion: v1\nkind: Secret\nmetadata: {name: applied}\nstringData: {KEY: applied-e2e}\n",
		"apply", "-n", warn, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "", "patch", "-n", warn, "secret", "applied", "-p", `{"stringData":{"KEY":"rotated-e2e"}}`); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	// healthy: a Secret and a pod that reads it.
	good := c.NewNamespace(t)
	c.Apply(t, good, `
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {DB_USER: admin}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - name: app
    image: example/app:1
    env: [{name: DB_USER, valueFrom: {secretKeyRef: {name: app, key: DB_USER}}}]
`)

	check := func(ns string, extra ...string) (string, int) {
		t.Helper()
		out, errOut, code := runAgentCLI(t, c, append([]string{"check", "--kubeconfig", c.AgentKubeconfig, "--namespaces", ns}, extra...)...)
		t.Logf("agent check --namespaces %s %s: exit %d\n%s%s", ns, strings.Join(extra, " "), code, out, errOut)
		return out, code
	}
	out, code := check(bad)
	if code != 1 || !strings.Contains(out, "MISSING KEYS (") || !strings.Contains(out, bad+"/legacy") || !strings.Contains(out, "FAIL: ") {
		t.Fatalf("check %s: exit %d, want 1 with the missing key listed", bad, code)
	}
	if _, code = check(bad, "--fail-on", "critical"); code != 1 {
		t.Fatalf("check %s --fail-on critical: exit %d, want 1", bad, code)
	}
	out, code = check(warn)
	if code != 1 || !strings.Contains(out, "secret_last_applied_data") || !strings.Contains(out, warn+"/applied") {
		t.Fatalf("check %s: exit %d, want 1 with the last-applied data listed", warn, code)
	}
	if _, code = check(warn, "--fail-on", "critical"); code != 0 {
		t.Fatalf("check %s --fail-on critical: exit %d, want 0 (warnings only)", warn, code)
	}
	out, code = check(good)
	if code != 0 || !strings.Contains(out, "No findings.") || !strings.Contains(out, "PASS: ") {
		t.Fatalf("check %s: exit %d, want 0 and no findings", good, code)
	}
	// JSON agrees.
	out, code = check(bad, "--output", "json")
	var rep struct {
		Result   string
		Findings []struct{ Metric string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Result != "fail" || len(rep.Findings) == 0 {
		t.Fatalf("check %s --output json: exit %d, err %v, report %+v", bad, code, err, rep)
	}
}
