package apiclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/time/rate"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// ClientConfig configures the Argo CD API poller.
type ClientConfig struct {
	// Server is the Argo CD API base URL, e.g. https://argocd-server.argocd.svc
	// (a path prefix such as https://host/argocd is kept). http:// is refused
	// unless Insecure is set: the bearer token must not travel in clear text.
	Server string
	// TokenFile holds the API token (an Argo CD account or project token). It is
	// re-read every poll round, so a rotated token is picked up, and it must not be
	// world-readable.
	TokenFile string
	// CAFile, when set, is the PEM bundle the server certificate must chain to
	// (instead of the system roots).
	CAFile string
	// Insecure skips TLS verification and allows http://. For tests and labs.
	Insecure bool
	// Timeout bounds each API call, reading the body included (default 10s).
	Timeout time.Duration
	// Interval is the pause between poll rounds when all is well (default 1m).
	Interval time.Duration
	// RPS bounds the request rate (default 5/s, no bursts).
	RPS float64
	// InitialBackoff and MaxBackoff shape the exponential backoff after a failed
	// round (defaults 2s and 5m).
	InitialBackoff, MaxBackoff time.Duration
	Logger                     *slog.Logger
	// Transport overrides the HTTP transport (tests). nil builds one from CAFile
	// and Insecure.
	Transport http.RoundTripper
}

// Defaults of ClientConfig (the agent's --argocd-timeout, --argocd-poll-interval
// and --argocd-rps).
const (
	DefaultTimeout  = 10 * time.Second
	DefaultInterval = time.Minute
	DefaultRPS      = 5
)

func (c *ClientConfig) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.RPS <= 0 {
		c.RPS = DefaultRPS
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = 2 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Limits on what is read from the API and the token file.
const (
	MaxResponseBytes    = 64 << 20
	MaxTargetStateBytes = 4 << 20
	maxTokenBytes       = 64 << 10
)

// Sink receives the desired state. *model.Store implements it.
type Sink interface {
	// ArgoAppRevision is the revision the Application compares now, as the
	// Application informer last saw it: the managed resources' target state
	// belongs to it.
	ArgoAppRevision(app model.Ref) (string, bool)
	SetArgoDesired(app model.Ref, items []model.Declared)
	ForgetArgoApp(app model.Ref)
	ArgoDesiredApps() []model.Ref
}

var _ Sink = (*model.Store)(nil)

// Client polls GET /api/v1/applications/{name}/managed-resources for the desired
// state of the Secrets and ExternalSecrets Applications manage. Its request
// counts (APIStats) are exported by collectors.ArgoCDAPI.
type Client struct {
	cfg     ClientConfig
	base    *url.URL
	http    *http.Client
	limiter *rate.Limiter
	log     *slog.Logger

	// requests counts API requests per HTTP status code ("timeout", "error"
	// when no response arrived); up is 1 when the last request was answered
	// and understood. collectors.ArgoCDAPI exports both.
	statsMu  sync.Mutex
	requests map[string]uint64
	up       atomic.Bool
	// health: the desired-source health every poller reports (SourceHealth).
	health model.SourceTracker
	// asked is set once a round has tried the API: api_up is exported only
	// then, so an agent with no Application managing Secrets (never a request)
	// does not report the API down.
	asked atomic.Bool

	mu     sync.Mutex
	warned map[model.Ref]int // last per-app status logged, to log changes only
}

// NewClient checks the configuration (URL, token file readable and not
// world-readable, CA file) and builds a client. It makes no request.
func NewClient(cfg ClientConfig) (*Client, error) {
	cfg.defaults()
	base, err := url.Parse(cfg.Server)
	if err != nil || base.Host == "" || (base.Scheme != "https" && base.Scheme != "http") {
		return nil, fmt.Errorf("argocd: server %q: want an http(s) URL such as https://argocd-server.argocd.svc", cfg.Server)
	}
	if base.User != nil || base.RawQuery != "" {
		return nil, errors.New("argocd: server URL must not carry credentials or a query")
	}
	if base.Scheme == "http" && !cfg.Insecure {
		return nil, fmt.Errorf("argocd: server %s is plain http: the token would travel in clear text (use https, or --argocd-insecure for a lab)", base.Redacted())
	}
	if cfg.TokenFile == "" {
		return nil, errors.New("argocd: a token file is required (--argocd-token-file)")
	}
	if _, err := readToken(cfg.TokenFile); err != nil {
		return nil, err
	}
	rt := cfg.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tlsc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("argocd: CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("argocd: CA file %s holds no PEM certificate", cfg.CAFile)
			}
			tlsc.RootCAs = pool
		}
		if cfg.Insecure {
			tlsc.InsecureSkipVerify = true // #nosec G402 -- explicit opt-in flag
			cfg.Logger.Warn("argocd: TLS verification is off (--argocd-insecure)")
		}
		tr.TLSClientConfig = tlsc
		rt = tr
	}
	c := &Client{
		cfg:  cfg,
		base: base,
		http: &http.Client{Transport: rt,
			// A redirect is an error: never replay the bearer token to another URL.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		limiter:  rate.NewLimiter(rate.Limit(cfg.RPS), 1),
		log:      cfg.Logger,
		requests: map[string]uint64{},
		warned:   map[model.Ref]int{},
	}
	for _, code := range []string{"200", "401", "500", "timeout", "error"} {
		c.requests[code] = 0 // start the common series at 0
	}
	return c, nil
}

// setUp records whether the API answered and was understood, for
// driftwatch_argocd_api_up and the desired-source health.
func (c *Client) setUp(ok bool) {
	c.up.Store(ok)
	c.health.Read(ok, time.Now())
}

// SourceHealth is the desired-source health of the Argo CD API poller: one
// read per request for an Application's managed resources (or per round whose
// token cannot be read); a per-Application 404 or 403 is an answer, not a
// failure.
func (c *Client) SourceHealth() model.SourceHealth { return c.health.SourceHealth() }

// APIStats reports the requests per status code, whether a round has tried
// the API yet, and whether the last request was answered and understood.
func (c *Client) APIStats() (requests map[string]uint64, asked, up bool) {
	c.statsMu.Lock()
	requests = maps.Clone(c.requests)
	c.statsMu.Unlock()
	return requests, c.asked.Load(), c.up.Load()
}

func (c *Client) count(code string) {
	c.statsMu.Lock()
	c.requests[code]++
	c.statsMu.Unlock()
}

// readToken reads the bearer token, refusing a world-readable file. Errors never
// carry the file's content.
func readToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("argocd: token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("argocd: token file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return "", fmt.Errorf("argocd: refusing token file %s: it is world-readable (mode %04o); chmod o-r it (in Kubernetes: defaultMode 0440 on the Secret volume)",
			path, fi.Mode().Perm())
	}
	if fi.Size() > maxTokenBytes {
		return "", fmt.Errorf("argocd: token file %s is larger than %d bytes", path, maxTokenBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("argocd: token file: %w", err)
	}
	defer clear(b)
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return "", fmt.Errorf("argocd: token file %s is empty", path)
	}
	for _, ch := range tok {
		if ch < 0x21 || ch > 0x7e {
			return "", fmt.Errorf("argocd: token file %s holds characters a bearer token cannot have", path)
		}
	}
	return string(tok), nil
}

// StatusError is a non-2xx answer.
type StatusError struct {
	App  model.Ref
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("argocd: managed-resources of application %s: HTTP %d %s", e.App, e.Code, http.StatusText(e.Code))
}

// perApp reports whether the status concerns only this Application (it is gone or
// this token may not read it), not the API as a whole.
func (e *StatusError) perApp() bool {
	return e.Code == http.StatusNotFound || e.Code == http.StatusForbidden
}

func (c *Client) endpoint(app model.Ref) string {
	u := c.base.JoinPath("api", "v1", "applications", app.Name, "managed-resources")
	q := url.Values{}
	if app.Namespace != "" {
		q.Set("appNamespace", app.Namespace)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ManagedResources fetches one Application's managed resources and returns the
// desired state of its Secrets and ExternalSecrets, value-free. It waits for the
// rate limiter; the call itself is bounded by the configured timeout.
func (c *Client) ManagedResources(ctx context.Context, app model.Ref) ([]model.Declared, error) {
	tok, err := readToken(c.cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	return c.fetch(ctx, app, tok)
}

func (c *Client) fetch(ctx context.Context, app model.Ref, token string) ([]model.Declared, error) {
	if err := c.limiter.Wait(ctx); err != nil {
		return nil, err
	}
	c.asked.Store(true)
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, c.endpoint(app), nil)
	if err != nil {
		return nil, fmt.Errorf("argocd: request for application %s: %w", app, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		code := "error"
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			code = "timeout"
			err = fmt.Errorf("argocd: managed-resources of application %s: no answer within %s", app, c.cfg.Timeout)
		} else {
			err = fmt.Errorf("argocd: managed-resources of application %s: %w", app, unwrapURLError(err))
		}
		c.count(code)
		c.setUp(false)
		return nil, err
	}
	defer resp.Body.Close()
	c.count(strconv.Itoa(resp.StatusCode))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		se := &StatusError{App: app, Code: resp.StatusCode}
		if se.perApp() {
			c.setUp(true) // the API answered and accepted the token
		} else {
			c.setUp(false)
		}
		return nil, se
	}
	items, err := decodeManagedResources(resp.Body)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil {
			err = fmt.Errorf("argocd: managed-resources of application %s: body not read within %s", app, c.cfg.Timeout)
		} else {
			err = fmt.Errorf("argocd: managed-resources of application %s: %w", app, err)
		}
		c.setUp(false)
		return nil, err
	}
	c.setUp(true)
	var out []model.Declared
	for _, it := range items {
		if !argocd.DesiredKind(it.Group, it.Kind) || it.TargetState == "" || it.Hook {
			// Not a Secret/ExternalSecret, not in Git (to be pruned), or a sync
			// hook: run by a sync (and possibly deleted after it), not desired
			// state.
			continue
		}
		d, err := DesiredFromTargetState(it.Group, it.Kind, it.Namespace, it.Name, it.TargetState)
		if err != nil {
			c.log.Warn("argocd: cannot read the target state of a managed resource; skipped",
				"application", app.String(), "kind", it.Kind, "namespace", it.Namespace, "name", it.Name, "err", err.Error())
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// unwrapURLError drops *url.Error's method and URL prefix (they are in our own
// message) and keeps the cause.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// managedItem is ResourceDiff without liveState and the other states: the decoder
// skips what it does not name, so live objects are never kept.
type managedItem struct {
	Group       string `json:"group,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	TargetState string `json:"targetState,omitempty"`
	Hook        bool   `json:"hook,omitempty"`
}

func decodeManagedResources(body io.Reader) ([]managedItem, error) {
	lr := &io.LimitedReader{R: body, N: MaxResponseBytes + 1}
	buf, err := io.ReadAll(lr)
	defer clear(buf)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(buf) > MaxResponseBytes {
		return nil, fmt.Errorf("response larger than %d bytes", MaxResponseBytes)
	}
	var resp struct {
		Items []managedItem `json:"items"`
	}
	if err := json.Unmarshal(buf, &resp); err != nil {
		return nil, jsonError("response", err)
	}
	return resp.Items, nil
}

// jsonError describes a decoding failure by position and Go type only: the
// standard library's messages may quote input bytes.
func jsonError(what string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON %s at offset %d", what, se.Offset)
	case errors.As(err, &te):
		return fmt.Errorf("unexpected JSON %s in %s at offset %d", te.Value, what, te.Offset)
	}
	return fmt.Errorf("malformed JSON %s", what)
}

// InputTargetState names an Argo CD target state in parse's errors.
const InputTargetState = "argocd target state"

// DesiredFromTargetState reads the key names out of a managed resource's
// targetState (a JSON manifest in a string) with parse.Declared, the reader of
// Helm manifests and Flux builds too, and drops the rest: for a Secret the
// names of data and stringData (values are skipped unread); for an
// ExternalSecret what it writes. group/kind/namespace/name identify the
// resource (the manifest may omit its namespace, name, apiVersion and kind).
func DesiredFromTargetState(group, kind, namespace, name, targetState string) (model.Declared, error) {
	d := model.Declared{Group: group, Kind: kind, Namespace: namespace, Name: name}
	if len(targetState) > MaxTargetStateBytes {
		return d, fmt.Errorf("targetState larger than %d bytes", MaxTargetStateBytes)
	}
	if !argocd.DesiredKind(group, kind) {
		return d, fmt.Errorf("kind %s/%s is not read", group, kind)
	}
	buf := []byte(targetState)
	defer clear(buf)
	got, ok, err := parse.Declared(buf, parse.Input{What: InputTargetState, JSON: true,
		Group: group, Kind: kind, Namespace: namespace, Name: name})
	if err != nil {
		return d, err
	}
	if !ok {
		return d, errors.New("targetState is not a JSON object")
	}
	return got, nil
}

// PollOnce polls each Application once, in order, and records the result in sink,
// each desired object stamped with the revision it belongs to (Revision).
// A 404 or 403 for one Application forgets its desired state and moves on; any
// other failure (token unreadable, 401, 5xx, timeout, malformed answer) ends the
// round early and is returned: the rest keep their last known state.
// Applications no longer listed are forgotten.
func (c *Client) PollOnce(ctx context.Context, apps []model.Ref, sink Sink) error {
	listed := make(map[model.Ref]bool, len(apps))
	for _, a := range apps {
		listed[a] = true
	}
	for _, known := range sink.ArgoDesiredApps() {
		if !listed[known] {
			sink.ForgetArgoApp(known)
		}
	}
	if len(apps) == 0 {
		return nil
	}
	tok, err := readToken(c.cfg.TokenFile)
	if err != nil {
		c.asked.Store(true)
		c.setUp(false)
		return err
	}
	for _, app := range apps {
		before, _ := sink.ArgoAppRevision(app)
		items, err := c.fetch(ctx, app, tok)
		var se *StatusError
		switch {
		case err == nil:
			// The target state is the one of the revision the Application
			// compares; when that moved while the call ran, which one it is
			// is unknown until the next round (no evidence meanwhile).
			rev := before
			if after, _ := sink.ArgoAppRevision(app); after != before {
				rev = ""
			}
			for i := range items {
				items[i].Revision = rev
			}
			sink.SetArgoDesired(app, items)
			c.noteApp(app, 0, nil)
		case errors.As(err, &se) && se.perApp():
			sink.ForgetArgoApp(app)
			c.noteApp(app, se.Code, err)
		default:
			return err
		}
	}
	return nil
}

// noteApp logs a per-application problem when it changes, not every round.
func (c *Client) noteApp(app model.Ref, code int, err error) {
	c.mu.Lock()
	prev, seen := c.warned[app]
	if code == 0 {
		delete(c.warned, app)
	} else {
		c.warned[app] = code
	}
	c.mu.Unlock()
	if code != 0 && (!seen || prev != code) {
		c.log.Warn("argocd: application's managed resources not readable; its desired state is not used",
			"application", app.String(), "err", err.Error())
	}
}

// Run polls until ctx ends: a round over apps() every Interval, and after a
// failed round an exponential backoff (cenkalti/backoff) instead, reset by the
// next good round.
func (c *Client) Run(ctx context.Context, apps func() []model.Ref, sink Sink) {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.cfg.InitialBackoff),
		backoff.WithMaxInterval(c.cfg.MaxBackoff),
		backoff.WithMaxElapsedTime(0), // never give up
	)
	failing := false
	for {
		err := c.PollOnce(ctx, apps(), sink)
		if ctx.Err() != nil {
			return
		}
		wait := c.cfg.Interval
		if err != nil {
			wait = b.NextBackOff()
			c.log.Warn("argocd: poll failed; retrying with backoff", "retry_in", wait.Round(time.Millisecond).String(), "err", err.Error())
			failing = true
		} else {
			if failing {
				c.log.Info("argocd: API reachable again")
			}
			failing = false
			b.Reset()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
