package agent

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"

	"github.com/driftwatch/driftwatch/internal/ui"
)

// WebConfig is the HTTP side of the agent beyond /metrics: the findings page
// and API, and the exporter-toolkit web configuration (TLS, basic auth) every
// endpoint is served with.
type WebConfig struct {
	// ConfigFile is an exporter-toolkit web configuration file
	// (--web.config.file): TLS and basic auth for every endpoint. "" serves
	// plain HTTP without authentication.
	ConfigFile string
	// UI serves the findings page (/), /secret/NS/NAME and /api/v1/findings.
	// Off, / answers with the list of endpoints and the others are 404.
	UI bool
	// UIOptions configure the pages (runbook links, refresh).
	UIOptions ui.Options
}

// uiHandler is the page's handler, nil when the UI is off.
func (a *Agent) uiHandler(cfg WebConfig, version string) http.Handler {
	if !cfg.UI {
		return nil
	}
	if cfg.UIOptions.Version == "" {
		cfg.UIOptions.Version = version
	}
	return ui.New(a.Store, a.Findings, a.Manager, cfg.UIOptions).Handler()
}

// ValidateWebConfig checks a web configuration file before serving, so a bad
// file stops the agent at start with a clear error, not at the first request.
func ValidateWebConfig(path string) error {
	if path == "" {
		return nil
	}
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return nil
}

// serve serves srv on ln through the exporter-toolkit (TLS and basic auth
// from the web config file, plain HTTP without one).
func serve(ln net.Listener, srv *http.Server, configFile string, log *slog.Logger) error {
	return web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &configFile}, log.With("component", "web"))
}

// WebConfigAuthenticates reports whether the web configuration file makes
// every request authenticate: basic auth users, or TLS with client
// certificates verified against client_ca_file (RequireAndVerifyClientCert).
// It reads the file into exporter-toolkit's own Config type, as web.Serve
// does. "" (plain HTTP) authenticates nobody.
func WebConfigAuthenticates(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	if err := ValidateWebConfig(path); err != nil {
		return false, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	var c web.Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return false, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return len(c.Users) > 0 || c.TLSConfig.ClientAuth == "RequireAndVerifyClientCert", nil
}
