package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/argocd/apiclient"
	"github.com/driftwatch/driftwatch/internal/model"
)

// ArgoCDConfig enables the optional Argo CD API source of desired state
// (--argocd-* flags). With Server empty the source is off.
type ArgoCDConfig struct {
	Server    string
	TokenFile string
	CAFile    string
	Insecure  bool
	// PollInterval between rounds (default 1m); Timeout per call (default 10s);
	// RPS bounds the request rate (default 5/s).
	PollInterval time.Duration
	Timeout      time.Duration
	RPS          float64
	Logger       *slog.Logger
	// Transport overrides the HTTP transport (tests, the demo's in-memory
	// Argo CD API).
	Transport http.RoundTripper
}

// StartArgoCD starts polling the Argo CD API for the desired state of the Secrets
// and ExternalSecrets that Applications manage (per their status.resources), feeds
// it to the model (desired lists for last_applied, the "argocd" expectation
// source) and registers the poller's metrics (driftwatch_argocd_api_up,
// driftwatch_argocd_requests_total). It returns an error, and starts nothing, when
// the configuration is unusable (bad URL, token file missing or world-readable,
// unreadable CA file). It returns nil without doing anything when Server is empty.
// The poller stops when ctx ends.
func (a *Agent) StartArgoCD(ctx context.Context, cfg ArgoCDConfig) error {
	if cfg.Server == "" {
		return nil
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c, err := apiclient.NewClient(apiclient.ClientConfig{
		Server: cfg.Server, TokenFile: cfg.TokenFile, CAFile: cfg.CAFile, Insecure: cfg.Insecure,
		Interval: cfg.PollInterval, Timeout: cfg.Timeout, RPS: cfg.RPS, Logger: log.With("component", "argocd"), Transport: cfg.Transport,
	})
	if err != nil {
		return err
	}
	if err := a.Register(collectors.NewArgoCDAPI(c)); err != nil {
		return fmt.Errorf("argocd: register metrics: %w", err)
	}
	if err := a.addDesiredSource("argocd", c); err != nil {
		return fmt.Errorf("argocd: register metrics: %w", err)
	}
	log.Info("argocd: polling the API for desired state", "server", cfg.Server)
	var sink apiclient.Sink = a.Store
	if a.owns != nil {
		sink = ownSink{Store: a.Store, owns: a.owns}
	}
	go c.Run(ctx, func() []model.Ref { return appsManagingSecrets(a.Store, a.owns) }, sink)
	return nil
}

// ownSink keeps, of an Application's desired state, the objects of this
// shard's namespaces: the Secrets of another shard's namespaces are that
// shard's to compare (it polls the same Application).
type ownSink struct {
	*model.Store
	owns func(string) bool
}

func (s ownSink) SetArgoDesired(app model.Ref, items []model.Declared) {
	kept := make([]model.Declared, 0, len(items))
	for _, it := range items {
		if s.owns(it.Namespace) {
			kept = append(kept, it)
		}
	}
	s.Store.SetArgoDesired(app, kept)
}

// AppsManagingSecrets lists the Applications whose status.resources include a
// Secret or an ExternalSecret that is not a sync hook: the only ones whose managed
// resources matter.
func AppsManagingSecrets(s *model.Store) []model.Ref { return appsManagingSecrets(s, nil) }

// appsManagingSecrets: with owns (sharding), only the Applications that manage
// a Secret or an ExternalSecret in this shard's namespaces, wherever the
// Application lives.
func appsManagingSecrets(s *model.Store, owns func(string) bool) []model.Ref {
	var out []model.Ref
	s.Read(func(v model.View) {
		for _, app := range v.Apps() {
			for _, r := range app.Resources {
				if r.Hook {
					continue // run by a sync, not desired state
				}
				if owns != nil && !owns(r.Namespace) {
					continue
				}
				if argocd.DesiredKind(r.Group, r.Kind) {
					out = append(out, model.Ref{Namespace: app.Namespace, Name: app.Name})
					break
				}
			}
		}
	})
	return out
}
