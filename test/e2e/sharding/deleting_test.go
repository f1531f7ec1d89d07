package sharding

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// An Application being deleted, seen by three shards (issue 22 item 6). The
// real Argo CD v3.2.9 syncs, from a local Git repository, an Application in
// namespace argocd whose Secrets live in two namespaces of the two other
// shards, with Argo CD's resources finalizer and one managed object (a
// ConfigMap) held back by a finalizer of the test's, as a Deployment waiting
// for a pod on a dead node holds it in real clusters. Deleting the Application
// makes the real controller (finalizeApplicationDeletion) delete every
// resource it manages, foreground, and keep the Application until none
// remains: its Secrets are gone while it is still being deleted. Its desired
// state is no expectation any more, on any shard: the shards of the Secrets'
// namespaces see only the reduced record of an Application of another shard,
// which must keep Deleting. The positive control first shows that exactly one
// shard, the owner of the Secret's namespace, uses that desired state.
func TestApplicationBeingDeletedAcrossShards(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const hold = "driftwatch.e2e/hold"
	g := owner(gitops.ArgoCDNamespace)
	d, e := namespaceOn(t, c, (g+1)%shards), namespaceOn(t, c, (g+2)%shards)
	repo := c.NewGitRepo(t, "deleting")
	secret := func(ns string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: %s}\nstringData: {K1: one, K2: two}\n", ns)
	}
	rev := repo.Commit(t, "two Secrets and a held ConfigMap", map[string]string{
		"app/d.yaml": secret(d),
		"app/e.yaml": secret(e),
		"app/held.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: %s, finalizers: [%s]}\ndata: {x: \"1\"}\n",
			d, hold),
	})
	app := "deleting-" + d
	t.Cleanup(func() { // let the held ConfigMap, and with it the Application, go
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, _ = c.Client.CoreV1().ConfigMaps(d).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Delete(ctx, app, metav1.DeleteOptions{})
	})
	c.Apply(t, gitops.ArgoCDNamespace, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: default
  source: {repoURL: %q, path: app, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  syncPolicy:
    automated: {prune: true}
`, app, repo.URL, d))
	waitSynced(ctx, t, c, app, rev)
	t.Logf("Application %s/%s (shard %d) Synced at %s; Secrets creds in %s (shard %d) and %s (shard %d); ConfigMap %s/held with finalizer %s",
		gitops.ArgoCDNamespace, app, g, rev[:8], d, owner(d), e, owner(e), d, hold)

	common := argoArgs(t, c)
	parts := make([]*cluster.Agent, shards)
	for i := range parts {
		parts[i] = c.StartAgent(t, append([]string{"--shard", fmt.Sprint(i), "--total-shards", fmt.Sprint(shards)}, common...)...)
	}
	for _, p := range parts {
		p.WaitReady(t, 90*time.Second)
	}

	// Positive control: someone removes K2 from d's Secret. Exactly one shard,
	// d's, finds it missing against the desired state it reads from the real
	// argocd-server.
	kubectl(ctx, t, c, "patch", "secret", "creds", "-n", d, "--type=json", `-p=[{"op":"remove","path":"/data/K2"}]`)
	k2 := map[string]string{"namespace": d, "secret": "creds", "key": "K2", "source": "argocd"}
	var report string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var from []int
		var b strings.Builder
		for i, p := range parts {
			all, err := p.Scrape()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range scrape.Find(all, "driftwatch_secret_missing_key", k2) {
				from = append(from, i)
				fmt.Fprintf(&b, "  shard %d: %s\n", i, s)
			}
		}
		report = b.String()
		if len(from) == 1 && from[0] == owner(d) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("positive control: driftwatch_secret_missing_key%v from shards %v, want exactly shard %d:\n%s", k2, from, owner(d), report)
		}
		time.Sleep(time.Second)
	}
	t.Logf("positive control, K2 removed from %s/creds, exported once:\n%s", d, report)

	// Delete the Application: Argo CD's finalizer deletes what it manages; the
	// held ConfigMap keeps the Application being deleted.
	if err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Delete(ctx, app, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{d, e} {
		waitSecretGone(ctx, t, c, ns, "creds")
	}
	u, err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Get(ctx, app, metav1.GetOptions{})
	if err != nil || u.GetDeletionTimestamp() == nil {
		t.Fatalf("the Application is not being deleted (err %v)", err)
	}
	cm, err := c.Client.CoreV1().ConfigMaps(d).Get(ctx, "held", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("the held ConfigMap is not being deleted: %v", err)
	}
	var resources []string
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, x := range entries {
		if m, ok := x.(map[string]any); ok {
			resources = append(resources, fmt.Sprintf("%v %v/%v status=%v", m["kind"], m["namespace"], m["name"], m["status"]))
		}
	}
	t.Logf("Application %s being deleted since %s, finalizers %v; creds gone from %s and %s, held ConfigMap waiting; status.resources: %v",
		app, u.GetDeletionTimestamp(), u.GetFinalizers(), d, e, resources)

	for _, p := range parts {
		p.WaitForNoSeries(t, "driftwatch_secret_missing_key", k2, 2*time.Minute)
	}
	// Several poll intervals (2 s): no shard reports anything from the
	// Application's desired state about the two namespaces, while the shards
	// of d and e keep asking argocd-server for it.
	before := argoRequests(t, parts)

	for end := time.Now().Add(12 * time.Second); ; {
		for i, p := range parts {
			all, err := p.Scrape()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range all {
				ns := s.Labels["namespace"]
				if (ns == d || ns == e) && (s.Labels["source"] == "argocd" || strings.HasPrefix(s.Name, "driftwatch_gitops_")) {
					t.Fatalf("shard %d reports, for the Secrets of an Application being deleted: %s", i, s)
				}
			}
		}
		if time.Now().After(end) {
			break
		}
		time.Sleep(time.Second)
	}
	after := argoRequests(t, parts)
	t.Logf("argocd-server requests (code 200) per shard during the check: before %v, after %v", before, after)
	// Not a vacuous check: the shards of d and e kept reading the
	// Application's desired state meanwhile (status.resources still lists
	// the deleted Secrets, OutOfSync).
	for _, ns := range []string{d, e} {
		if i := owner(ns); after[i]-before[i] < 3 {
			t.Errorf("shard %d (namespace %s) asked argocd-server %g times during the check, want at least 3", i, ns, after[i]-before[i])
		}
	}
	if u, err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Get(ctx, app, metav1.GetOptions{}); err != nil || u.GetDeletionTimestamp() == nil {
		t.Fatalf("the Application went before the check ended (err %v)", err)
	}
}

// argoArgs are the agent flags that read desired state from the stack's real
// argocd-server with a token of its read-only account.
func argoArgs(t *testing.T, c *cluster.Cluster) []string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte(c.ArgoCD().Token(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--argocd-server", c.ArgoCD().ServerURL(), "--argocd-insecure",
		"--argocd-token-file", tokenFile, "--argocd-poll-interval", "2s"}
}

// argoRequests returns each agent's driftwatch_argocd_requests_total{code="200"}.
func argoRequests(t *testing.T, agents []*cluster.Agent) []float64 {
	t.Helper()
	out := make([]float64, len(agents))
	for i, a := range agents {
		all, err := a.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scrape.Find(all, "driftwatch_argocd_requests_total", map[string]string{"code": "200"}) {
			out[i] += s.Value
		}
	}
	return out
}

// waitSynced waits until the Application is Synced at rev with its last
// operation Succeeded there.
func waitSynced(ctx context.Context, t *testing.T, c *cluster.Cluster, app, rev string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		u, err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		synced, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
		if sync == "Synced" && phase == "Succeeded" && synced == rev {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Application %s: sync=%q phase=%q syncResult.revision=%q, want Synced/Succeeded at %s", app, sync, phase, synced, rev)
		}
		time.Sleep(time.Second)
	}
}

func waitSecretGone(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Secret %s/%s still there", ns, name)
}
