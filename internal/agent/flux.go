package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/flux"
)

// FluxConfig configures the Flux source of desired state (--flux-* flags):
// the artifacts source-controller serves, read for the Kustomizations'
// Secrets and ExternalSecrets. With Artifacts off only the Kustomizations'
// own status is read (no expectations, no Flux findings but none that need
// Git).
type FluxConfig struct {
	Artifacts bool
	// SourceHost replaces the host:port of artifact URLs (an agent outside the
	// cluster, or a proxy in front of source-controller).
	SourceHost   string
	PollInterval time.Duration
	Timeout      time.Duration
	Logger       *slog.Logger
	// Transport overrides the HTTP transport (tests, the demo's in-memory
	// source-controller).
	Transport http.RoundTripper
}

// StartFlux starts the Flux artifact poller and registers its metrics
// (driftwatch_flux_artifact_fetches_total, driftwatch_flux_kustomizations_unjudged).
// It returns nil without doing anything when Artifacts is off. The poller only
// reads the model: with no Kustomization CRD served it downloads nothing.
func (a *Agent) StartFlux(ctx context.Context, cfg FluxConfig) error {
	if !cfg.Artifacts {
		return nil
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = flux.DefaultFetchTimeout
	}
	p := &flux.Poller{Fetcher: &flux.Fetcher{SourceHost: cfg.SourceHost, Timeout: cfg.Timeout, Transport: cfg.Transport},
		Interval: cfg.PollInterval, Logger: log.With("component", "flux")}
	if err := a.Register(collectors.NewFluxArtifacts(p)); err != nil {
		return fmt.Errorf("flux: register metrics: %w", err)
	}
	go p.Run(ctx, a.Store)
	return nil
}
