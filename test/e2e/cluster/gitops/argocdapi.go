package gitops

// argocd-server's REST API, as the argocd CLI calls it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
)

// Token generates an API token for ArgoCDAccount the way `argocd account
// generate-token --account driftwatch` does: it logs in as admin (with the
// initial password argocd-server wrote into argocd-initial-admin-secret) and
// asks POST /api/v1/account/{name}/token. The stack must run argocd-server.
func (a *ArgoCD) Token(t testing.TB) string {
	t.Helper()
	if a.ServerURL() == "" {
		t.Fatal("ArgoCD.Token: the stack was started without Options.ArgoCDServer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := a.adminSession(ctx, t)
	var tok struct {
		Token string `json:"token"`
	}
	if err := a.api(ctx, http.MethodPost, "/api/v1/account/"+ArgoCDAccount+"/token", admin,
		map[string]string{"name": ArgoCDAccount, "id": fmt.Sprintf("e2e-%d", time.Now().UnixNano())}, &tok); err != nil {
		t.Fatalf("argocd account token: %v", err)
	}
	if tok.Token == "" {
		t.Fatal("argocd returned an empty token")
	}
	return tok.Token
}

// adminSession logs in to argocd-server as admin with the initial
// password argocd-server wrote into argocd-initial-admin-secret (as `argocd
// login` does) and returns the session token.
func (a *ArgoCD) adminSession(ctx context.Context, t testing.TB) string {
	t.Helper()
	var password string
	if err := proc.WaitFor(ctx, 60*time.Second, "secret argocd-initial-admin-secret", a.server, func(ctx context.Context) (bool, error) {
		s, err := a.env.Client.CoreV1().Secrets(ArgoCDNamespace).Get(ctx, "argocd-initial-admin-secret", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		password = string(s.Data["password"])
		return password != "", nil
	}); err != nil {
		t.Fatal(err)
	}
	var session struct {
		Token string `json:"token"`
	}
	if err := a.api(ctx, http.MethodPost, "/api/v1/session", "",
		map[string]string{"username": "admin", "password": password}, &session); err != nil {
		t.Fatalf("argocd login as admin: %v", err)
	}
	return session.Token
}

// api calls argocd-server's REST API (grpc-gateway) with a JSON body.
func (a *ArgoCD) api(ctx context.Context, method, path, token string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, a.ServerURL()+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		// The body is an error message; it carries no token or password.
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// Sync syncs an Application through argocd-server's API, as `argocd app
// sync NAME [--revision REV]` does (POST /api/v1/applications/{name}/sync,
// logged in as admin); revision "" syncs the Application's targetRevision
// (Argo CD v3.2.9 refuses another revision for an automated Application:
// "Cannot sync to <rev>: auto-sync currently set to <targetRevision>"). The API server
// writes the operation with the Application's spec.syncPolicy.syncOptions
// (server/application/application.go Sync, v3.2.9): a sync requested by
// patching the operation field alone runs without them (a client-side apply
// where the Application says ServerSideApply=true). The stack must run
// argocd-server.
func (a *ArgoCD) Sync(t testing.TB, namespace, name, revision string) {
	t.Helper()
	if a.ServerURL() == "" {
		t.Fatal("ArgoCD.Sync: the stack was started without Options.ArgoCDServer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := a.adminSession(ctx, t)
	req := map[string]any{"name": name, "appNamespace": namespace}
	if revision != "" {
		req["revision"] = revision
	}
	var app map[string]any
	if err := a.api(ctx, http.MethodPost, "/api/v1/applications/"+name+"/sync", admin, req, &app); err != nil {
		t.Fatalf("argocd app sync %s/%s --revision %s: %v", namespace, name, revision, err)
	}
}
