package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Strings that must never leave the client: the token and the values in the
// recorded responses.
const (
	testToken   = "argocd-tok-7f3a9c1e5b"
	secretValue = "c3VwZXJzZWNyZXQtdmFsdWU=" // base64 of a value, as in a Secret's data
	plainValue  = "hunter2-plain-value"
)

func manifest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// recordedShop has the shape of a real managed-resources answer: items with
// group/kind/namespace/name and the target and live states as JSON strings (Argo
// CD masks Secret values in its answers; the test uses real-looking values to
// prove none is kept anyway).
func recordedShop() string {
	secret := manifest(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "shop"},
		"data":       map[string]any{"password": secretValue, "user": "YWRtaW4="},
		"stringData": map[string]any{"dsn": plainValue}})
	es := manifest(map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "api", "namespace": "shop"},
		"spec": map[string]any{"secretStoreRef": map[string]any{"name": "vault"},
			"target": map[string]any{"name": "api-creds", "template": map[string]any{"data": map[string]any{"URL": "https://{{ .host }}"}, "mergePolicy": "Merge"}},
			"data": []any{map[string]any{"secretKey": "KEY", "remoteRef": map[string]any{"key": "shop/api"}},
				map[string]any{"secretKey": "HOST", "remoteRef": map[string]any{"key": "shop/host"}}}}})
	deploy := manifest(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}})
	live := manifest(map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"password": secretValue}})
	body := map[string]any{"items": []any{
		map[string]any{"group": "", "kind": "Secret", "namespace": "shop", "name": "db", "targetState": secret, "liveState": live,
			"normalizedLiveState": live, "predictedLiveState": secret, "modified": true, "hook": false},
		map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret", "namespace": "shop", "name": "api", "targetState": es, "liveState": "null"},
		map[string]any{"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web", "targetState": deploy},
		// in the cluster, not in Git: no desired state
		map[string]any{"group": "", "kind": "Secret", "namespace": "shop", "name": "orphan", "liveState": live},
		// a sync hook (argocd.argoproj.io/hook: PreSync): run by a sync, not
		// desired state, although Argo CD lists its target state
		map[string]any{"group": "", "kind": "Secret", "namespace": "shop", "name": "presync", "targetState": secret, "hook": true},
		// a target state that is not JSON: skipped, logged value-free
		map[string]any{"group": "", "kind": "Secret", "namespace": "shop", "name": "broken", "targetState": `{"data": {"k": "` + plainValue},
	}}
	return manifest(body)
}

type apiServer struct {
	*httptest.Server
	calls  atomic.Int64
	failN  atomic.Int64 // the next failN calls answer 500
	mu     sync.Mutex
	params []string
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		s.mu.Lock()
		s.params = append(s.params, r.URL.Path+"?"+r.URL.RawQuery)
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid session","code":16,"message":"invalid session"}`))
			return
		}
		if s.failN.Load() > 0 {
			s.failN.Add(-1)
			http.Error(w, `{"error":"etcdserver: `+plainValue+`"}`, http.StatusInternalServerError)
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 5 || parts[0] != "api" || parts[4] != "managed-resources" {
			http.NotFound(w, r)
			return
		}
		switch parts[3] {
		case "shop":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(recordedShop()))
		case "empty":
			_, _ = w.Write([]byte(`{}`))
		case "gone":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"applications.argoproj.io \"gone\" not found","code":5}`))
		case "denied":
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"permission denied","code":7}`))
		case "boom":
			http.Error(w, "internal", http.StatusInternalServerError)
		case "slow":
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
			_, _ = w.Write([]byte(`{}`))
		case "slowbody":
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"items":[`))
			w.(http.Flusher).Flush()
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
		case "garbage":
			_, _ = w.Write([]byte(`{"items":[{"kind":"Secret","targetState":"` + plainValue + `"` + secretValue))
		case "notjson":
			_, _ = w.Write([]byte(`<html>` + plainValue + `</html>`))
		case "redirect":
			http.Redirect(w, r, "https://elsewhere.example/steal", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // umask-independent
		t.Fatal(err)
	}
	return p
}

func caFile(t *testing.T, s *httptest.Server) string {
	return writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})), 0o644)
}

type testEnv struct {
	srv  *apiServer
	c    *Client
	logs *bytes.Buffer
}

func newEnv(t *testing.T, mod func(*ClientConfig)) *testEnv {
	t.Helper()
	srv := newAPIServer(t)
	logs := &bytes.Buffer{}
	cfg := ClientConfig{Server: srv.URL, TokenFile: writeFile(t, "token", testToken+"\n", 0o600), CAFile: caFile(t, srv.Server),
		Timeout: 500 * time.Millisecond, RPS: 1000, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Interval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: logs}, nil))}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{srv: srv, c: c, logs: logs}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// noLeak fails when a token or value appears in s.
func noLeak(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{testToken, secretValue, plainValue, "YWRtaW4=", "{{ .host }}"} {
		if strings.Contains(s, bad) {
			t.Fatalf("%s leaks %q: %s", what, bad, s)
		}
	}
}

func ref(ns, name string) model.Ref { return model.Ref{Namespace: ns, Name: name} }

func TestManagedResources(t *testing.T) {
	env := newEnv(t, nil)
	got, err := env.c.ManagedResources(context.Background(), ref("argocd", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Declared{
		{Kind: "Secret", Namespace: "shop", Name: "db", Keys: []string{"dsn", "password", "user"}},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api", ES: &model.ESWrites{
			DataKeys: []string{"KEY", "HOST"}, HasSpecData: true, Target: "api-creds", CreationPolicy: "Owner", DeletionPolicy: "Retain",
			HasTemplate: true, TemplateMergePolicy: "Merge", TemplateRendersData: true, TemplateKeys: []string{"URL"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	noLeak(t, "desired objects", fmt.Sprintf("%#v", got))
	noLeak(t, "logs", env.logs.String())
	if !strings.Contains(env.logs.String(), "broken") {
		t.Fatalf("the unreadable target state is logged by name: %s", env.logs.String())
	}
	env.srv.mu.Lock()
	defer env.srv.mu.Unlock()
	if env.srv.params[0] != "/api/v1/applications/shop/managed-resources?appNamespace=argocd" {
		t.Fatalf("request: %s", env.srv.params[0])
	}
	if v := upValue(env.c); v != 1 {
		t.Fatalf("api_up %v", v)
	}
}

func TestErrorsAndMetrics(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	cases := []struct {
		app, code string
		up        float64
		want      string
	}{
		{"boom", "500", 0, "HTTP 500"},
		{"slow", "timeout", 0, "no answer within 500ms"},
		{"slowbody", "200", 0, "body not read within"},
		{"garbage", "200", 0, "malformed JSON response at offset"},
		{"notjson", "200", 0, "malformed JSON response"},
		{"redirect", "302", 0, "HTTP 302"},
		{"gone", "404", 1, "HTTP 404"},
		{"denied", "403", 1, "HTTP 403"},
	}
	for _, tc := range cases {
		t.Run(tc.app, func(t *testing.T) {
			before := float64(requestsOf(env.c, tc.code))
			_, err := env.c.ManagedResources(ctx, ref("argocd", tc.app))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			noLeak(t, "error", err.Error())
			if d := float64(requestsOf(env.c, tc.code)) - before; d != 1 {
				t.Fatalf("requests_total{code=%q} +%v", tc.code, d)
			}
			if v := upValue(env.c); v != tc.up {
				t.Fatalf("api_up %v, want %v", v, tc.up)
			}
			// The desired-source health says the same as api_up.
			if h := env.c.SourceHealth(); !h.Asked || b2f(h.Up) != tc.up {
				t.Fatalf("source health %+v, want up %v", h, tc.up)
			}
		})
	}
	// Six failures; the 404 and the 403 are answers about one Application.
	if h := env.c.SourceHealth(); h.Reads != uint64(len(cases)) || h.Failures != 6 || h.LastSuccess.IsZero() {
		t.Fatalf("source health after the cases: %+v", h)
	}
	noLeak(t, "logs", env.logs.String())
}

func TestUnauthorized(t *testing.T) {
	env := newEnv(t, nil)
	// The token is rotated to a wrong one: re-read every call.
	if err := os.WriteFile(env.c.cfg.TokenFile, []byte("wrong-"+testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := env.c.ManagedResources(context.Background(), ref("argocd", "shop"))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("want 401, got %v", err)
	}
	noLeak(t, "error", err.Error())
	if float64(requestsOf(env.c, "401")) != 1 || upValue(env.c) != 0 {
		t.Fatal("401 counted, api down")
	}
}

func TestTLSVerification(t *testing.T) {
	srv := newAPIServer(t)
	tok := writeFile(t, "token", testToken, 0o400)
	// No CA file: the test server's certificate is not trusted.
	// A generous timeout: a loaded CI box can take over a second for a TLS
	// handshake, and this test is about verification, not about timeouts.
	c, err := NewClient(ClientConfig{Server: srv.URL, TokenFile: tok, Timeout: 20 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ManagedResources(context.Background(), ref("argocd", "shop"))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("want a certificate error, got %v", err)
	}
	if srv.calls.Load() != 0 {
		t.Fatal("no request may reach an unverified server")
	}
	// Insecure: verification off.
	c, err = NewClient(ClientConfig{Server: srv.URL, TokenFile: tok, Insecure: true, Timeout: 20 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ManagedResources(context.Background(), ref("argocd", "shop")); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientRefuses(t *testing.T) {
	good := writeFile(t, "token", testToken, 0o600)
	cases := []struct {
		name string
		cfg  ClientConfig
		want string
	}{
		{"world-readable token", ClientConfig{Server: "https://argocd.example", TokenFile: writeFile(t, "t", testToken, 0o644)}, "world-readable (mode 0644)"},
		{"no token file", ClientConfig{Server: "https://argocd.example"}, "token file is required"},
		{"missing token file", ClientConfig{Server: "https://argocd.example", TokenFile: "/nonexistent/token"}, "no such file"},
		{"empty token", ClientConfig{Server: "https://argocd.example", TokenFile: writeFile(t, "t", " \n", 0o600)}, "is empty"},
		{"token with spaces", ClientConfig{Server: "https://argocd.example", TokenFile: writeFile(t, "t", testToken+" x", 0o600)}, "characters"},
		{"directory", ClientConfig{Server: "https://argocd.example", TokenFile: t.TempDir()}, "not a regular file"},
		{"plain http", ClientConfig{Server: "http://argocd.example", TokenFile: good}, "clear text"},
		{"not a URL", ClientConfig{Server: "argocd.example", TokenFile: good}, "want an http(s) URL"},
		{"credentials in URL", ClientConfig{Server: "https://admin:" + testToken + "@argocd.example", TokenFile: good}, "credentials"},
		{"bad CA", ClientConfig{Server: "https://argocd.example", TokenFile: good, CAFile: writeFile(t, "ca", "nope", 0o644)}, "no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Logger = slog.New(slog.DiscardHandler)
			_, err := NewClient(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			noLeak(t, "error", err.Error())
		})
	}
	// http is allowed with Insecure (labs).
	if _, err := NewClient(ClientConfig{Server: "http://argocd.example", TokenFile: good, Insecure: true, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
}

func TestPollOnce(t *testing.T) {
	env := newEnv(t, nil)
	store := model.NewStore(nil)
	stale := ref("argocd", "removed")
	store.SetArgoDesired(stale, []model.Declared{{Kind: "Secret", Namespace: "x", Name: "y"}})
	store.SetArgoDesired(ref("argocd", "gone"), []model.Declared{{Kind: "Secret", Namespace: "x", Name: "z"}})
	apps := []model.Ref{ref("argocd", "shop"), ref("argocd", "gone"), ref("argocd", "denied"), ref("argocd", "empty")}
	if err := env.c.PollOnce(context.Background(), apps, store); err != nil {
		t.Fatal(err)
	}
	if got := store.ArgoDesiredApps(); !reflect.DeepEqual(got, []model.Ref{ref("argocd", "empty"), ref("argocd", "shop")}) {
		t.Fatalf("apps with desired state: %v", got)
	}
	store.Read(func(v model.View) {
		if d, ok := v.ArgoDesired("shop", "ExternalSecret", "api"); !ok || d.Source.Ref() != ref("argocd", "shop") {
			t.Fatalf("api: %+v %v", d, ok)
		}
	})
	// A second round logs per-app problems only once.
	if err := env.c.PollOnce(context.Background(), apps, store); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(env.logs.String(), "application=argocd/gone"); n != 1 {
		t.Fatalf("per-app warning logged %d times:\n%s", n, env.logs.String())
	}
	// A server error ends the round and keeps what is known.
	env.srv.failN.Store(1)
	err := env.c.PollOnce(context.Background(), apps, store)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("want the 500, got %v", err)
	}
	noLeak(t, "error", err.Error())
	if len(store.ArgoDesiredApps()) != 2 {
		t.Fatal("a failed round keeps the last known state")
	}
	noLeak(t, "logs", env.logs.String())
}

func TestRunBacksOffAndRecovers(t *testing.T) {
	env := newEnv(t, nil)
	env.srv.failN.Store(3)
	store := model.NewStore(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		env.c.Run(ctx, func() []model.Ref { return []model.Ref{ref("argocd", "shop")} }, store)
		close(done)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(store.ArgoDesiredApps()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery; logs:\n%s", env.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run does not stop with its context")
	}
	logs := env.logs.String()
	if strings.Count(logs, "retrying with backoff") < 3 || !strings.Contains(logs, "reachable again") {
		t.Fatalf("logs:\n%s", logs)
	}
	noLeak(t, "logs", logs)
	if float64(requestsOf(env.c, "500")) != 3 {
		t.Fatal("three 500s counted")
	}
}

func TestRateLimited(t *testing.T) {
	env := newEnv(t, func(c *ClientConfig) { c.RPS = 20 })
	start := time.Now()
	for i := 0; i < 4; i++ {
		if _, err := env.c.ManagedResources(context.Background(), ref("argocd", "empty")); err != nil {
			t.Fatal(err)
		}
	}
	// 4 requests at 20/s without burst: at least 3 intervals of 50ms.
	if el := time.Since(start); el < 140*time.Millisecond {
		t.Fatalf("4 requests in %v: not rate-limited", el)
	}
}

func TestDesiredFromTargetState(t *testing.T) {
	cases := []struct {
		name, group, kind, ts string
		want                  model.Declared
		err                   string
	}{
		{name: "secret", kind: "Secret", ts: `{"kind":"Secret","data":{"b":"` + secretValue + `","a":"x"},"stringData":{"a":"` + plainValue + `"}}`,
			want: model.Declared{Kind: "Secret", Namespace: "ns", Name: "n", Keys: []string{"a", "b"}}},
		{name: "secret without data", kind: "Secret", ts: `{"kind":"Secret","type":"Opaque"}`,
			want: model.Declared{Kind: "Secret", Namespace: "ns", Name: "n"}},
		{name: "es defaults target, null data", group: "external-secrets.io", kind: "ExternalSecret", ts: `{"spec":{"data":null,"dataFrom":[{"find":{}}]}}`,
			want: model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "ns", Name: "n",
				ES: &model.ESWrites{Target: "n", CreationPolicy: "Owner", DeletionPolicy: "Retain", DataFrom: 1, DataFromFind: 1}}},
		{name: "es empty data", group: "external-secrets.io", kind: "ExternalSecret", ts: `{"spec":{"data":[]}}`,
			want: model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "ns", Name: "n",
				ES: &model.ESWrites{Target: "n", CreationPolicy: "Owner", DeletionPolicy: "Retain", HasSpecData: true}}},
		{name: "es templateFrom", group: "external-secrets.io", kind: "ExternalSecret",
			ts: `{"spec":{"target":{"template":{"templateFrom":[{"configMap":{"name":"c","items":[{"key":"cfg"},{"key":"skip","templateAs":"KeysAndValues"}]}},{"target":"Annotations","secret":{"items":[{"key":"ann"}]}}]}}}}`,
			want: model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "ns", Name: "n",
				ES: &model.ESWrites{Target: "n", CreationPolicy: "Owner", DeletionPolicy: "Retain", HasTemplate: true,
					TemplateRendersData: true, TemplateKeys: []string{"cfg"}, TemplateOpen: model.TemplateOpenKeysAndValues}}},
		{name: "es templateFrom literal", group: "external-secrets.io", kind: "ExternalSecret",
			ts: `{"spec":{"data":[{"secretKey":"raw"}],"target":{"creationPolicy":"None","template":{"templateFrom":[{"literal":"{{ .raw }}: x"}]}}}}`,
			want: model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "ns", Name: "n",
				ES: &model.ESWrites{Target: "n", CreationPolicy: "None", DeletionPolicy: "Retain", DataKeys: []string{"raw"}, HasSpecData: true,
					HasTemplate: true, TemplateRendersData: true, TemplateOpen: model.TemplateOpenLiteral}}},
		{name: "malformed", kind: "Secret", ts: `{"data":{"k":"` + plainValue, err: "argocd target state: json: malformed at offset"},
		{name: "not an object", kind: "Secret", ts: `["` + plainValue + `"]`, err: "not a JSON object"},
		{name: "data not an object", kind: "Secret", ts: `{"data":"` + plainValue + `"}`, err: "json: data: malformed (not an object)"},
		{name: "kind mismatch", kind: "Secret", ts: `{"kind":"ConfigMap"}`, err: "kind: malformed (not the kind the source names)"},
		{name: "secretKey not a string", group: "external-secrets.io", kind: "ExternalSecret", ts: `{"spec":{"data":[{"secretKey":7}]}}`, err: "json: spec: malformed (not a string)"},
		{name: "es kind mismatch", group: "external-secrets.io", kind: "ExternalSecret", ts: `{"kind":"Secret","data":{"k":"` + plainValue + `"}}`, err: "kind: malformed (not the kind the source names)"},
		{name: "other kind", kind: "ConfigMap", ts: `{}`, err: "not read"},
		{name: "too large", kind: "Secret", ts: `{"data":{"k":"` + strings.Repeat("x", MaxTargetStateBytes) + `"}}`, err: "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DesiredFromTargetState(tc.group, tc.kind, "ns", "n", tc.ts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want %q, got %v", tc.err, err)
				}
				noLeak(t, "error", err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func upValue(c *Client) float64 {
	if _, _, up := c.APIStats(); up {
		return 1
	}
	return 0
}

func requestsOf(c *Client, code string) uint64 {
	r, _, _ := c.APIStats()
	return r[code]
}
