// Package flux holds the end-to-end tests of driftwatch's Flux detectors
// against the real Flux: source-controller and kustomize-controller v1.9.6 on
// the real kube-apiserver, reconciling from local Git repositories served over
// smart HTTP (git http-backend), with the real ESO controller writing the
// ExternalSecrets' target Secrets. Every case asserts what Flux itself reports
// (the Kustomization's status, the live objects it applied) next to what
// driftwatch exports.
package flux

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true, Flux: true}))
}

// Generous bounds: a reconcile takes about a second here; these only bound a
// broken run.
const (
	waitFlux  = 2 * time.Minute
	waitAgent = 2 * time.Minute
)

var esGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var (
	gitRepository = gitops.GitRepositoryYAML
	kustomization = gitops.KustomizationYAML
)

// ksState is what a Kustomization's status says, as kustomize-controller
// wrote it.
type ksState struct {
	Ready, Reason, Message string
	LastApplied            string
	LastAttempted          string
	Inventory              []string // status.inventory.entries[].id
	InventoryVersions      []string // status.inventory.entries[].v
}

func getKS(t *testing.T, c *cluster.Cluster, ns, name string) ksState {
	t.Helper()
	st, reason, msg, obj, err := c.Flux().Condition(ctxT(t), gitops.KustomizationGVR, ns, name, "Ready")
	if err != nil {
		t.Fatalf("get Kustomization %s/%s: %v", ns, name, err)
	}
	s := ksState{Ready: st, Reason: reason, Message: msg}
	s.LastApplied, _, _ = unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	s.LastAttempted, _, _ = unstructured.NestedString(obj.Object, "status", "lastAttemptedRevision")
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "inventory", "entries")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		s.Inventory = append(s.Inventory, fmt.Sprint(m["id"]))
		s.InventoryVersions = append(s.InventoryVersions, fmt.Sprint(m["v"]))
	}
	return s
}

func (s ksState) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// secretShape is a Secret's key names with their value lengths (never values),
// "absent" when it does not exist.
func secretShape(t *testing.T, c *cluster.Cluster, ns, name string) string {
	t.Helper()
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		return "absent"
	}
	var parts []string
	for k, v := range s.Data {
		parts = append(parts, fmt.Sprintf("%s(%d bytes)", k, len(v)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func secretKeyNames(t *testing.T, c *cluster.Cluster, ns, name string) []string {
	t.Helper()
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for k := range s.Data {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// esEntries returns the live ExternalSecret's spec.data secretKeys.
func esEntries(t *testing.T, c *cluster.Cluster, ns, name string) []string {
	t.Helper()
	u, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	l, _, _ := unstructured.NestedSlice(u.Object, "spec", "data")
	out := []string{}
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["secretKey"]))
		}
	}
	return out
}

// waitFor polls cond until it holds or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last: %s)", what, d, last)
}

// fakeStore is a fake-provider SecretStore holding db-user, db-pass and api-token.
func fakeStore(name string) string {
	return fmt.Sprintf(`apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: %s}
spec:
  provider:
    fake:
      data:
      - {key: db-user, value: app}
      - {key: db-pass, value: e2e-db-pass}
      - {key: api-token, value: e2e-api-token}
`, name)
}

var remoteKey = map[string]string{"DB_USER": "db-user", "DB_PASS": "db-pass", "API_TOKEN": "api-token"}

// externalSecret renders an ExternalSecret named name (target name, store
// store) with a spec.data entry per key; annotations adds metadata
// annotations (a YAML flow map body, may be empty).
func externalSecret(name, store, annotations string, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: %s, annotations: {%s}}
spec:
  refreshInterval: 10s
  secretStoreRef: {name: %s, kind: SecretStore}
  target: {name: %s, creationPolicy: Owner}
  data:
`, name, annotations, store, name)
	for _, k := range keys {
		fmt.Fprintf(&b, "  - {secretKey: %s, remoteRef: {key: %s}}\n", k, remoteKey[k])
	}
	return b.String()
}

// secret renders a Secret named name with a stringData entry per key (the
// value is the Secret's and the key's name: distinct per Secret, so no two
// Secrets of a test hold the same data; the tests never print values).
func secret(name, annotations string, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: %s, annotations: {%s}}\nstringData:\n", name, annotations)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %q\n", k, name+"-"+strings.ToLower(k))
	}
	return b.String()
}
