package cluster

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// ArgoCDSync syncs an Application through argocd-server's API, as `argocd app
// sync NAME [--revision REV]` does (POST /api/v1/applications/{name}/sync,
// logged in as admin); revision "" syncs the Application's targetRevision
// (Argo CD v3.2.9 refuses another revision for an automated Application:
// "Cannot sync to <rev>: auto-sync currently set to <targetRevision>"). The API server
// writes the operation with the Application's spec.syncPolicy.syncOptions
// (server/application/application.go Sync, v3.2.9): a sync requested by
// patching the operation field alone runs without them (a client-side apply
// where the Application says ServerSideApply=true). The stack must run
// argocd-server.
func (c *Cluster) ArgoCDSync(t testing.TB, namespace, name, revision string) {
	t.Helper()
	if c.ArgoCDServerURL() == "" {
		t.Fatal("ArgoCDSync: the stack was started without Options.ArgoCDServer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := c.argoAdminSession(ctx, t)
	req := map[string]any{"name": name, "appNamespace": namespace}
	if revision != "" {
		req["revision"] = revision
	}
	var app map[string]any
	if err := c.argoAPI(ctx, http.MethodPost, "/api/v1/applications/"+name+"/sync", admin, req, &app); err != nil {
		t.Fatalf("argocd app sync %s/%s --revision %s: %v", namespace, name, revision, err)
	}
}
