package demo

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/agent"
)

// Stand-in addresses of the demo's Argo CD API and Flux source-controller. The
// agent reaches them through Transport, never through the network.
const (
	ArgoCDServer = "http://argocd-server.argocd.demo"
	// ArgoCDToken is the bearer token the stand-in expects.
	ArgoCDToken = "demo-token"
)

var managedResourcesPath = regexp.MustCompile(`^/api/v1/applications/([^/]+)/managed-resources$`)

// Transport answers, in memory, what the demo's Argo CD API and Flux's
// source-controller would: the managed resources of the gitops part's
// Applications and the artifact of the Flux part's GitRepository.
func (d *Demo) Transport() http.RoundTripper { return transport{} }

type transport struct{}

func (transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	reply := func(code int, ctype string, body []byte) (*http.Response, error) {
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {ctype}}, Body: io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)), Request: r}, nil
	}
	switch {
	case "http://"+r.URL.Host == ArgoCDServer:
		m := managedResourcesPath.FindStringSubmatch(r.URL.Path)
		if m == nil || r.Header.Get("Authorization") != "Bearer "+ArgoCDToken {
			return reply(http.StatusUnauthorized, "text/plain", []byte("no"))
		}
		body, ok := argoManaged[m[1]]
		if !ok || r.URL.Query().Get("appNamespace") != "" && r.URL.Query().Get("appNamespace") != gitopsNS {
			body = `{"items":[]}`
		}
		return reply(http.StatusOK, "application/json", []byte(body))
	case r.URL.String() == fluxArtifactURL:
		return reply(http.StatusOK, "application/gzip", fluxArtifact)
	case strings.HasPrefix(r.URL.Host, "source-controller."):
		return reply(http.StatusNotFound, "text/plain", []byte("not found"))
	}
	return reply(http.StatusBadGateway, "text/plain", []byte("the demo has no such server"))
}

// ArgoCD points the Flux artifact poller at the demo's in-memory
// source-controller and, unless the user named an Argo CD API (cfg.Server
// set), the Argo CD poller at the demo's in-memory API with a token file in a
// new temporary folder, which cleanup removes.
func (d *Demo) ArgoCD(cfg *agent.ArgoCDConfig, flux *agent.FluxConfig) (cleanup func(), err error) {
	flux.Artifacts, flux.Transport, flux.PollInterval = true, d.Transport(), 5*time.Second
	if cfg.Server != "" {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "driftwatch-demo-")
	if err != nil {
		return nil, err
	}
	tok := filepath.Join(dir, "argocd-token")
	if err := os.WriteFile(tok, []byte(ArgoCDToken+"\n"), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cfg.Server, cfg.TokenFile, cfg.Insecure, cfg.Transport = ArgoCDServer, tok, true, d.Transport()
	cfg.PollInterval = 5 * time.Second
	return func() { _ = os.RemoveAll(dir) }, nil
}
