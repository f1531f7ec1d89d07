package detectors

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// anyValue, as the value of a wanted series (seriesAny), matches any positive
// value: for series whose value is a duration measured by the agent.
const anyValue = "*"

// seriesAny is series with a value that only has to be positive.
func seriesAny(name, labels string) string {
	return name + "{" + labels + "} " + anyValue
}

// splitSeries splits a rendered series into "name{labels}" and its value.
func splitSeries(s string) (string, string) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i+1:]
}

// sameFindings reports whether got (rendered series) is exactly want, where a
// wanted value anyValue matches any value > 0.
func sameFindings(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	wantByKey := map[string]string{}
	for _, w := range want {
		k, v := splitSeries(w)
		wantByKey[k] = v
	}
	for _, g := range got {
		k, v := splitSeries(g)
		w, ok := wantByKey[k]
		if !ok {
			return false
		}
		if w == anyValue {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0) {
				return false
			}
			continue
		}
		if v != w {
			return false
		}
	}
	return true
}

// expectFindingsLoose is expectFindings for wanted sets holding seriesAny
// entries: it waits until the namespace's findings are exactly want (names and
// label sets exactly; values exactly, or positive for seriesAny).
func expectFindingsLoose(t *testing.T, a *cluster.Agent, ns string, want ...string) []string {
	t.Helper()
	sort.Strings(want)
	deadline := time.Now().Add(wait)
	var got []string
	for time.Now().Before(deadline) {
		got = findings(t, a, ns)
		if sameFindings(got, want) {
			return got
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("findings in %s:\n got:\n  %s\nwant:\n  %s", ns, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	return nil
}

// valueOf returns the value of the rendered series in got whose name and labels
// are key ("name{labels}").
func valueOf(t *testing.T, got []string, key string) float64 {
	t.Helper()
	for _, g := range got {
		if k, v := splitSeries(g); k == key {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", g, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in:\n  %s", key, strings.Join(got, "\n  "))
	return 0
}

var esGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

// keysES is applied with real client-side `kubectl apply`: the apiserver then
// holds the real kubectl.kubernetes.io/last-applied-configuration annotation.
// creationPolicy is set explicitly so the adoption-safety detector has nothing
// to say (implicit_creation_policy is the migration test's).
const keysES = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: keys}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: keys, creationPolicy: Owner}
  data:
  - {secretKey: STRIPE_KEY, remoteRef: {key: stripe}}
  - {secretKey: PAYPAL_KEY, remoteRef: {key: paypal}}
  - {secretKey: ADYEN_KEY, remoteRef: {key: adyen}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: extended}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: extended, creationPolicy: Owner}
  data:
  - {secretKey: SEARCH_USER, remoteRef: {key: search-user}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: untouched}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: untouched, creationPolicy: Owner}
  data:
  - {secretKey: ORDERS_URL, remoteRef: {key: orders-url}}
  - {secretKey: ORDERS_USER, remoteRef: {key: orders-user}}
`

// The last-applied annotation is evidence only while its writer holds the list
// (managedFields). With the real kubectl, apiserver, helm and ESO:
//
//   - ExternalSecrets applied with client-side kubectl apply and left alone:
//     nothing.
//   - Their spec.data patched afterwards (an entry dropped from one, added to
//     another): the patcher now owns f:spec.f:data and the annotation is frozen
//     history, so nothing either (these used to be live_shorter and
//     last_applied_shorter).
//   - A Helm release renders ExternalSecret orders with three entries, then an
//     old two-entry manifest is kubectl-applied over it: client-side apply now
//     holds the list and its record lacks an entry the chart renders:
//     truncated_patch, and the Helm source misses the key in the Secret ESO
//     rewrote. helm upgrade leaves the drift (custom resources get a two-way
//     merge of release manifests); re-applying the full manifest clears both.
func TestLastAppliedTruncated(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx := ctxT(t)
	c.Apply(t, ns, fakeStore("store", "stripe", "sk-e2e", "paypal", "pp-e2e", "adyen", "ad-e2e",
		"search-user", "su-e2e", "search-pass", "sp-e2e", "orders-url", "https://orders.e2e", "orders-user", "ou-e2e",
		"api-url", "https://api.e2e", "api-user", "au-e2e", "api-token", "at-e2e"))
	if out, err := c.Kubectl(ctx, keysES, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	// The annotation is the real one, written by kubectl.
	es, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctx, "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	la := es.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]
	if !strings.Contains(la, `"ADYEN_KEY"`) {
		t.Fatalf("kubectl apply wrote no usable last-applied annotation: %q", la)
	}

	a := c.StartAgent(t, "--namespaces", ns)
	a.WaitReady(t, wait)
	a.WaitForSeries(t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": ns, "externalsecret": "keys"}, wait)
	expectFindings(t, a, ns)

	// Someone drops an entry from the live object (a merge patch replaces the
	// list whole) and adds one to another; the annotations still list the old.
	drop := `{"spec":{"data":[{"secretKey":"STRIPE_KEY","remoteRef":{"key":"stripe"}},{"secretKey":"PAYPAL_KEY","remoteRef":{"key":"paypal"}}]}}`
	if _, err := c.Dynamic.Resource(esGVR).Namespace(ns).Patch(ctx, "keys", types.MergePatchType, []byte(drop), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	add := `{"spec":{"data":[{"secretKey":"SEARCH_USER","remoteRef":{"key":"search-user"}},{"secretKey":"SEARCH_PASS","remoteRef":{"key":"search-pass"}}]}}`
	if _, err := c.Dynamic.Resource(esGVR).Namespace(ns).Patch(ctx, "extended", types.MergePatchType, []byte(add), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	// What the apiserver recorded: the patcher owns the list now.
	es, err = c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctx, "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := ""
	for _, m := range es.GetManagedFields() {
		if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:data"`) {
			owner += m.Manager + " "
		}
	}
	if owner != "kubectl-patch " {
		t.Fatalf("after the patch, f:spec.f:data is owned by %q, want only kubectl-patch", owner)
	}
	// Wait until the agent has seen both patches, then: nothing.
	a.WaitForSeries(t, "driftwatch_externalsecret_sync_age_seconds", map[string]string{"namespace": ns, "externalsecret": "extended"}, wait)
	time.Sleep(2 * time.Second)
	expectFindings(t, a, ns)

	// A Helm release renders orders with three entries (the real helm).
	chart := t.TempDir()
	writeFile(t, chart+"/Chart.yaml", "apiVersion: v2\nname: orders\nversion: 0.1.0\n")
	writeFile(t, chart+"/templates/es.yaml", ordersES(true))
	helm(t, c, "install", "orders", chart, "-n", ns)
	// An old two-entry manifest, applied over it with kubectl.
	if out, err := c.Kubectl(ctx, ordersES(false), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	expectFindings(t, a, ns,
		series("driftwatch_last_applied_truncated", `cause="truncated_patch",kind="ExternalSecret",name="orders",namespace="`+ns+`"`, 1),
		series("driftwatch_secret_missing_key", `key="API_TOKEN",namespace="`+ns+`",optional="false",secret="orders",source="helm"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="orders",source="helm"`, 1),
	)
	// helm upgrade does not heal it: Helm 3.22 patches custom resources with a
	// two-way merge of the old and new release manifests (pkg/kube createPatch),
	// so drift in the live object survives an upgrade whose chart is unchanged.
	helm(t, c, "upgrade", "orders", chart, "-n", ns)
	live, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructuredList(live.Object, "spec", "data"); len(data) != 2 {
		t.Fatalf("after helm upgrade the live list has %d entries; Helm 3.22 was expected to leave the drift (2)", len(data))
	}
	time.Sleep(2 * time.Second)
	expectFindings(t, a, ns,
		series("driftwatch_last_applied_truncated", `cause="truncated_patch",kind="ExternalSecret",name="orders",namespace="`+ns+`"`, 1),
		series("driftwatch_secret_missing_key", `key="API_TOKEN",namespace="`+ns+`",optional="false",secret="orders",source="helm"`, 1),
		series("driftwatch_secret_missing_keys", `namespace="`+ns+`",optional="false",secret="orders",source="helm"`, 1),
	)
	// Applying the chart's full manifest heals it: both clear.
	if out, err := c.Kubectl(ctx, ordersES(true), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	expectFindings(t, a, ns)
}

func unstructuredList(obj map[string]any, path ...string) ([]any, bool, error) {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s: not an object", p)
		}
		cur = m[p]
	}
	l, ok := cur.([]any)
	return l, ok, nil
}

// ordersES renders ExternalSecret orders with two entries, or three.
func ordersES(withToken bool) string {
	y := `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: orders}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: orders, creationPolicy: Owner}
  data:
  - {secretKey: API_URL, remoteRef: {key: api-url}}
  - {secretKey: API_USER, remoteRef: {key: api-user}}
`
	if withToken {
		y += "  - {secretKey: API_TOKEN, remoteRef: {key: api-token}}\n"
	}
	return y
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// helm runs the real helm against the stack as the admin, with its own home.
func helm(t *testing.T, c *cluster.Cluster, args ...string) {
	t.Helper()
	bin, err := tools.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, append(args, "--kubeconfig", c.AdminKubeconfig, "--wait=false")...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+home+"/cache", "XDG_CONFIG_HOME="+home+"/config", "XDG_DATA_HOME="+home+"/data")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// argoApp renders an Argo CD Application. The Application CRD has no status
// subresource (Argo CD's controller writes status with the object), so the
// status goes in with the manifest; no Argo CD controller runs to change it.
func argoApp(ns, name, spec, syncStatus, phase string, finished time.Time) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  source: {repoURL: "https://git.example/platform/apps.git", path: %s, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
%sstatus:
  sync: {status: %s, revision: 4f1c2a9}
  health: {status: Healthy}
  # what the Application manages: an ignoreDifferences entry is judged against it
  resources:
  - {group: external-secrets.io, version: v1, kind: ExternalSecret, namespace: %s, name: %s, status: Synced}
  operationState:
    phase: %s
    operation: {sync: {revision: 4f1c2a9}}
    # the revision the sync applied: the one status.sync compares (not behind)
    syncResult: {revision: 4f1c2a9}
    startedAt: %q
    finishedAt: %q
`, name, name, ns, spec, syncStatus, ns, name, phase,
		finished.Add(-30*time.Second).UTC().Format(time.RFC3339), finished.UTC().Format(time.RFC3339))
}

// Argo CD Applications on the real apiserver with the real Application CRD:
// ignoreDifferences paths that reach into list elements of a managed
// ExternalSecret are traps (effect says how; test/e2e/argocd shows it on the
// real Argo CD); a path into a map is not. An Application OutOfSync long after a Succeeded sync is
// not converging; one OutOfSync for less than the threshold, or Synced, is
// fine. Removing the trap and syncing clear the findings.
func TestArgoCDIgnoreListTrapAndNotConverging(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	hourAgo := time.Now().Add(-time.Hour)
	trapSpec := `  ignoreDifferences:
  - {group: external-secrets.io, kind: ExternalSecret, jsonPointers: [/spec/data/0/remoteRef]}
  syncPolicy:
    syncOptions: [CreateNamespace=true, RespectIgnoreDifferences=true]
`
	c.Apply(t, ns, argoApp(ns, "keys-trap", trapSpec, "Synced", "Succeeded", hourAgo)+"---\n"+
		argoApp(ns, "jq-trap", `  ignoreDifferences:
  - group: external-secrets.io
    kind: ExternalSecret
    jqPathExpressions: [".spec.data[]"]
`, "Synced", "Succeeded", hourAgo)+"---\n"+
		// Harmless: a map member, even with RespectIgnoreDifferences.
		argoApp(ns, "harmless", `  ignoreDifferences:
  - {group: external-secrets.io, kind: ExternalSecret, jsonPointers: [/metadata/annotations/x]}
  syncPolicy:
    syncOptions: [RespectIgnoreDifferences=true]
`, "Synced", "Succeeded", hourAgo)+"---\n"+
		argoApp(ns, "stuck", "", "OutOfSync", "Succeeded", hourAgo)+"---\n"+
		// OutOfSync, but its sync finished just now: under the threshold.
		argoApp(ns, "recent", "", "OutOfSync", "Succeeded", time.Now())+"---\n"+
		// OutOfSync after a failed sync is another problem, not this one.
		argoApp(ns, "failed", "", "OutOfSync", "Failed", hourAgo)+"---\n"+
		argoApp(ns, "synced", "", "Synced", "Succeeded", hourAgo))

	a := c.StartAgent(t, "--namespaces", ns, "--argocd-not-converging-threshold", "10m")
	a.WaitReady(t, wait)
	stuck := `application="stuck",automated="false",namespace="` + ns + `"`
	got := expectFindingsLoose(t, a, ns,
		series("driftwatch_argocd_ignore_list_trap", `application="keys-trap",effect="rebuilds_list",group="external-secrets.io",kind="ExternalSecret",namespace="`+ns+`",path="/spec/data/0/remoteRef",respect_ignore_differences="true"`, 1),
		series("driftwatch_argocd_ignore_list_trap", `application="jq-trap",effect="hides_new_entries",group="external-secrets.io",kind="ExternalSecret",namespace="`+ns+`",path=".spec.data[]",respect_ignore_differences="false"`, 1),
		seriesAny("driftwatch_argocd_not_converging", stuck),
	)
	// The value counts from status.operationState.finishedAt, an hour ago.
	if v := valueOf(t, got, "driftwatch_argocd_not_converging{"+stuck+"}"); v < 3600-5 {
		t.Fatalf("driftwatch_argocd_not_converging = %g, want at least the hour since finishedAt", v)
	}

	// Fix: the trap's ignoreDifferences entry is removed (server-side apply
	// drops the fields this manager no longer sets), the stuck app syncs.
	c.Apply(t, ns, argoApp(ns, "keys-trap", "", "Synced", "Succeeded", hourAgo)+"---\n"+
		argoApp(ns, "jq-trap", "", "Synced", "Succeeded", hourAgo)+"---\n"+
		argoApp(ns, "stuck", "", "Synced", "Succeeded", time.Now()))
	expectFindings(t, a, ns)

	// The objects really hold what the agent read: Application status kept
	// (no status subresource strips it).
	app, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).
		Namespace(ns).Get(ctxT(t), "recent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(app.Object["status"])
	if !strings.Contains(string(b), `"OutOfSync"`) {
		t.Fatalf("Application status not stored as written: %s", b)
	}
}
