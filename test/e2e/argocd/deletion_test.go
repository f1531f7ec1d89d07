package argocd

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
)

// An Application deleted with Argo CD's resources finalizer: the real
// controller (v3.2.9 finalizeApplicationDeletion) deletes every resource it
// manages at once, with foreground propagation, and keeps the Application
// until none remain. One that cannot go yet (here a ConfigMap held by a
// finalizer of ours; in real clusters a Deployment waiting for a pod on a dead
// node) keeps an Application being deleted whose Secrets are already gone. Its
// desired state is no expectation any more: no secret_absent from source
// argocd. The positive control first shows the agent uses that desired state.
func TestApplicationDeletedResourcesFirst(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "deleted")
	const app, hold = "deleted", "driftwatch.e2e/hold"
	rev := repo.Commit(t, "an app", map[string]string{
		"deleted/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: app-config}
stringData: {MODE: production}
`,
		"deleted/held.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: held, finalizers: [` + hold + `]}
data: {x: "1"}
`,
	})
	manifest := application(app, repo.URL, "deleted", ns, `  syncPolicy:
    automated: {prune: true}
`)
	// The resources finalizer: deleting the Application deletes what it manages.
	manifest = strings.Replace(manifest, "metadata: {name: "+app+"}",
		"metadata: {name: "+app+", finalizers: [resources-finalizer.argocd.argoproj.io]}", 1)
	t.Cleanup(func() { // let the held ConfigMap, and with it the Application, go
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_, _ = c.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	createApp(t, c, manifest)
	waitApp(t, c, app, "Synced at "+rev, func(s appState) bool { return syncedAt(rev)(s) && s.Sync == "Synced" })

	a := startAgent(t, c, ns)
	a.WaitForSeries(t, "driftwatch_argocd_requests_total", map[string]string{"code": "200"}, waitAgent)
	// Positive control: someone replaces app-config's key; the argocd source
	// misses it.
	mergePatch(t, c, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, ns, "app-config", `{"data":{"MODE":null,"OTHER":"eA=="}}`)
	a.WaitForSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "app-config", "key": "MODE", "source": "argocd"}, waitAgent)

	if err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Delete(ctxT(t), app, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, ns, "app-config") // deleted by Argo CD's finalizer
	s := getApp(t, c, app)
	if s.raw.GetDeletionTimestamp() == nil {
		t.Fatalf("the Application is not being deleted: %s", s)
	}
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctxT(t), "held", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("the held ConfigMap is not being deleted: %v", err)
	}
	t.Logf("Application %s being deleted since %s, finalizers %v; app-config gone, held ConfigMap waiting", app,
		s.raw.GetDeletionTimestamp(), s.raw.GetFinalizers())
	src := map[string]string{"namespace": ns, "secret": "app-config", "source": "argocd"}
	a.WaitForNoSeries(t, "driftwatch_secret_missing_key", src, waitAgent)
	expectStaysAbsent(t, a, "driftwatch_secret_absent", src, 10*time.Second) // five poll intervals
	if s := getApp(t, c, app); s.raw.GetDeletionTimestamp() == nil {
		t.Fatalf("the Application went before the check ended: %s", s)
	}
}
