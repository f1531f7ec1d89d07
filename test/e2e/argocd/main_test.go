// Package argocd holds the end-to-end tests of driftwatch's Argo CD detectors
// against the real Argo CD v3.2.9: its application controller, repo-server and
// API server (argocd-server) on the real kube-apiserver, syncing from local git
// repositories (file:// URLs), with the real ESO controller writing the
// ExternalSecrets' target Secrets. Every case asserts what Argo CD itself reports
// (the Application's status, the live objects it applied and the last-applied
// annotation it left) next to what driftwatch exports.
package argocd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true, ArgoCDServer: true}))
}

// Generous bounds: Argo CD reconciles every 10 s here (--app-resync 10), a sync
// takes a few seconds; these only bound a broken run.
const (
	waitArgo  = 3 * time.Minute
	waitAgent = 2 * time.Minute
)

var esGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// application renders an Application in the argocd namespace syncing path of
// repo into namespace dest. spec adds to the spec (indented two spaces).
func application(name, repoURL, path, dest, spec string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  source: {repoURL: %q, path: %s, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
%s`, name, repoURL, path, dest, spec)
}

// createApp applies an Application and deletes it when the test ends (without
// a finalizer: the objects it synced stay for the namespace's cleanup).
func createApp(t *testing.T, c *cluster.Cluster, manifest string) {
	t.Helper()
	objs := c.Apply(t, gitops.ArgoCDNamespace, manifest)
	for _, o := range objs {
		name := o.GetName()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("delete Application %s: %v", name, err)
			}
		})
	}
}

// appState is what an Application's status says, as Argo CD wrote it.
type appState struct {
	Sync         string // status.sync.status
	Revision     string // status.sync.revision
	Health       string
	Phase        string // status.operationState.phase
	SyncedRev    string // status.operationState.syncResult.revision
	Operation    bool   // an operation is requested or running (.operation set)
	Message      string // status.operationState.message
	Resources    []map[string]any
	SyncResult   []map[string]any // status.operationState.syncResult.resources
	FinishedAt   string
	Conditions   []map[string]any
	raw          *unstructured.Unstructured
	statusString string
}

func (s appState) String() string { return s.statusString }

func getApp(t *testing.T, c *cluster.Cluster, name string) appState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Application %s: %v", name, err)
	}
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(u.Object, path...); return v }
	maps := func(path ...string) []map[string]any {
		l, _, _ := unstructured.NestedSlice(u.Object, path...)
		var out []map[string]any
		for _, x := range l {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	_, op := u.Object["operation"]
	st, _ := json.MarshalIndent(map[string]any{"status": u.Object["status"], "operation": u.Object["operation"]}, "", "  ")
	return appState{
		Sync: str("status", "sync", "status"), Revision: str("status", "sync", "revision"),
		Health: str("status", "health", "status"),
		Phase:  str("status", "operationState", "phase"), SyncedRev: str("status", "operationState", "syncResult", "revision"),
		Message: str("status", "operationState", "message"), FinishedAt: str("status", "operationState", "finishedAt"),
		Operation: op, Resources: maps("status", "resources"), SyncResult: maps("status", "operationState", "syncResult", "resources"),
		Conditions: maps("status", "conditions"),
		raw:        u, statusString: string(st),
	}
}

// waitApp polls the Application until cond holds.
func waitApp(t *testing.T, c *cluster.Cluster, name, what string, cond func(appState) bool) appState {
	t.Helper()
	deadline := time.Now().Add(waitArgo)
	var s appState
	for {
		s = getApp(t, c, name)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("Application %s: not %s within %s; status:\n%s\n----- controller log (last 40 lines) -----\n%s",
				name, what, waitArgo, s, tail(c.ArgoCD().ControllerLog(), 40))
		}
		time.Sleep(time.Second)
	}
}

// syncedAt: Argo CD compares revision rev and its last operation synced rev
// with phase Succeeded; no operation is pending.
func syncedAt(rev string) func(appState) bool {
	return func(s appState) bool {
		return s.Revision == rev && s.SyncedRev == rev && s.Phase == "Succeeded" && !s.Operation
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// refresh asks Argo CD to look at Git again now (as a webhook would).
func refresh(t *testing.T, c *cluster.Cluster, names ...string) {
	t.Helper()
	for _, n := range names {
		c.ArgoCD().Refresh(t, gitops.ArgoCDNamespace, n)
	}
}

// liveES returns the live ExternalSecret's spec.data secretKeys and the
// secretKeys of spec.data in its kubectl.kubernetes.io/last-applied-configuration
// annotation (what Argo CD's kubectl apply sent), nil when there is none.
func liveES(t *testing.T, c *cluster.Cluster, ns, name string) (live, applied []string, obj *unstructured.Unstructured) {
	t.Helper()
	u, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ExternalSecret %s/%s: %v", ns, name, err)
	}
	live = secretKeys(u.Object)
	if la := u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; la != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(la), &m); err != nil {
			t.Fatalf("last-applied of %s: %v", name, err)
		}
		applied = secretKeys(m)
		if applied == nil {
			applied = []string{}
		}
	}
	return live, applied, u
}

func secretKeys(obj map[string]any) []string {
	l, _, _ := unstructured.NestedSlice(obj, "spec", "data")
	out := []string{}
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["secretKey"]))
		}
	}
	return out
}

// waitSecretKeys waits until Secret ns/name exists with exactly keys (ESO wrote it).
func waitSecretKeys(t *testing.T, c *cluster.Cluster, ns, name string, keys ...string) {
	t.Helper()
	keys = slices.Sorted(slices.Values(keys))
	deadline := time.Now().Add(waitArgo)
	var got []string
	for time.Now().Before(deadline) {
		s, err := c.Client.CoreV1().Secrets(ns).Get(ctxT(t), name, metav1.GetOptions{})
		if err == nil {
			got = got[:0]
			for k := range s.Data {
				got = append(got, k)
			}
			slices.Sort(got)
			if slices.Equal(got, keys) {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Secret %s/%s: keys %v, want %v", ns, name, got, keys)
}

// startAgent runs driftwatch on the test's namespace and argocd (where the
// Applications are), with the real argocd-server as the desired-state source
// and a real API token of the account the stack configured.
func startAgent(t *testing.T, c *cluster.Cluster, ns string, extra ...string) *cluster.Agent {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte(c.ArgoCD().Token(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--namespaces", ns + "," + gitops.ArgoCDNamespace,
		"--argocd-server", c.ArgoCD().ServerURL(), "--argocd-insecure", "--argocd-token-file", tokenFile,
		"--argocd-poll-interval", "2s"}, extra...)
	a := c.StartAgent(t, args...)
	a.WaitReady(t, waitAgent)
	return a
}

// appSeries returns the series of name whose application label is app.
func appSeries(t *testing.T, a *cluster.Agent, name, app string) []scrape.Series {
	t.Helper()
	all, err := a.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	return scrape.Find(all, name, map[string]string{"application": app})
}

// expectStaysAbsent checks, over several scrapes spanning d, that no series of
// name matches labels.
func expectStaysAbsent(t *testing.T, a *cluster.Agent, name string, labels map[string]string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; {
		all, err := a.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		if got := scrape.Find(all, name, labels); len(got) > 0 {
			t.Fatalf("unexpected %s matching %v: %v", name, labels, got)
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(time.Second)
	}
}

// expectNoCritical checks, over scrapes a second apart spanning d, that the
// agent serves no series whose catalog severity is critical (a page, whatever
// the alert's consumer join) about an object of namespace ns, and returns the
// finding series it saw, for the log.
func expectNoCritical(t *testing.T, a *cluster.Agent, ns string, d time.Duration) []scrape.Series {
	t.Helper()
	seen := map[string]scrape.Series{}
	scrapes := 0
	for end := time.Now().Add(d); ; {
		all, err := a.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		scrapes++
		for _, s := range all {
			if s.Labels["namespace"] != ns || !scrape.IsFinding(s) {
				continue
			}
			seen[s.String()] = s
			if f, ok := finding.Lookup(s.Name); ok && f.Kind == finding.KindFinding && f.SeverityOf(s.Labels) == finding.SevCritical && s.Value > 0 {
				t.Fatalf("page-grade series after %d scrapes: %s", scrapes, s)
			}
		}
		if time.Now().After(end) {
			break
		}
		time.Sleep(time.Second)
	}
	out := make([]scrape.Series, 0, len(seen))
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, seen[k])
	}
	t.Logf("%d scrapes over %s: no page-grade series in %s; finding series seen: %d", scrapes, d, ns, len(out))
	return out
}

// mergePatch patches an object with a JSON merge patch as the admin.
func mergePatch(t *testing.T, c *cluster.Cluster, gvr schema.GroupVersionResource, ns, name, patch string) {
	t.Helper()
	var err error
	if ns == "" {
		_, err = c.Dynamic.Resource(gvr).Patch(ctxT(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	} else {
		_, err = c.Dynamic.Resource(gvr).Namespace(ns).Patch(ctxT(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatalf("patch %s %s: %v", gvr.Resource, name, err)
	}
}

// managedItem is an item of GET /api/v1/applications/{name}/managed-resources.
type managedItem struct {
	Group, Kind, Namespace, Name string
	TargetState, LiveState       string
	Hook                         bool
}

// managedResources asks the real argocd-server for an Application's managed
// resources, with a token of the stack's read-only account.
func managedResources(t *testing.T, c *cluster.Cluster, app string) []managedItem {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet,
		c.ArgoCD().ServerURL()+"/api/v1/applications/"+app+"/managed-resources?appNamespace="+gitops.ArgoCDNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.ArgoCD().Token(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Items []managedItem `json:"items"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("managed-resources of %s: %s", app, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Items
}
