package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/desired"
	"github.com/driftwatch/driftwatch/internal/model"
)

// FluxConfig configures the Flux source of desired state (--flux-* flags):
// the artifacts Flux's artifact servers serve, built for the Kustomizations'
// Secrets and ExternalSecrets. With Artifacts off only the Kustomizations'
// own status is read (no expectations, no Flux findings but none that need
// Git).
type FluxConfig struct {
	Artifacts bool
	// Namespace is the Flux controllers' namespace: artifact URLs must name
	// its source-controller or source-watcher Service (or AllowedHosts).
	Namespace string
	// AllowedHosts: more allowed artifact hosts (host, or host:port).
	AllowedHosts []string
	// AllowedCIDRs: addresses the dial-time guard refuses (loopback,
	// link-local, metadata) that are allowed anyway.
	AllowedCIDRs []netip.Prefix
	// SourceHost replaces the host:port of allowed artifact URLs (an agent
	// outside the cluster, or a proxy in front of source-controller).
	SourceHost   string
	PollInterval time.Duration
	Timeout      time.Duration
	// MaxArtifactBytes bounds the bytes inflated from one artifact.
	MaxArtifactBytes int64
	BuildTimeout     time.Duration
	Logger           *slog.Logger
	// Transport overrides the HTTP transport (tests, the demo's in-memory
	// source-controller).
	Transport http.RoundTripper
}

var kustomizationGVR = schema.GroupVersionResource{Group: flux.Group, Version: flux.Version, Resource: "kustomizations"}

// StartFlux starts the Flux artifact poller and registers its metrics
// (driftwatch_flux_artifact_fetches_total,
// driftwatch_flux_artifact_refusals_total). It returns nil without doing
// anything when Artifacts is off. The poller reads the model, and a
// Kustomization from the apiserver when it builds one: with no Kustomization
// CRD served it downloads nothing.
func (a *Agent) StartFlux(ctx context.Context, cfg FluxConfig) error {
	if !cfg.Artifacts {
		return nil
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = desired.DefaultFetchTimeout
	}
	limits := desired.DefaultLimits()
	if cfg.MaxArtifactBytes > 0 {
		limits.Inflated = cfg.MaxArtifactBytes
	}
	f := &desired.Fetcher{FluxNamespace: cfg.Namespace, AllowedHosts: cfg.AllowedHosts, AllowedCIDRs: cfg.AllowedCIDRs,
		SourceHost: cfg.SourceHost, Timeout: cfg.Timeout, Limits: limits, Transport: cfg.Transport}
	p := &desired.Poller{Fetcher: f, Interval: cfg.PollInterval, BuildTimeout: cfg.BuildTimeout, FP: a.fp,
		Logger: log.With("component", "flux"), Available: a.available}
	if a.dynamic != nil {
		p.GetKustomization = func(ctx context.Context, ns, name string) (map[string]any, error) {
			u, err := a.dynamic.Resource(kustomizationGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return u.Object, nil
		}
	}
	if err := a.Register(collectors.NewFluxArtifacts(p)); err != nil {
		return fmt.Errorf("flux: register metrics: %w", err)
	}
	if err := a.addDesiredSource("flux", p); err != nil {
		return fmt.Errorf("flux: register metrics: %w", err)
	}
	go p.Run(ctx, a.Store)
	return nil
}

// available reports whether a watched resource is listed and permitted.
func (a *Agent) available(r model.Resource) bool {
	return model.AvailabilityOf(a.Manager.States())[r]
}
