package desired

import (
	"context"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/build"
	"log/slog"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Sink is what the poller reads and writes (model.Store), as apiclient.Sink is
// the Argo CD poller's.
type Sink interface {
	Read(fn func(v model.View))
	SetFluxDesired(ks model.Ref, d *model.FluxDesired)
}

// Defaults of the agent's --flux-poll-interval (Poller.Interval),
// --flux-timeout (one artifact download) and --flux-build-timeout
// (Poller.BuildTimeout).
const (
	DefaultPollInterval = 30 * time.Second
	DefaultFetchTimeout = 30 * time.Second
	DefaultBuildTimeout = 30 * time.Second
)

// Backoff of a failed download (fetch_failed): the first retry after a poll
// interval, then doubling up to maxRetryInterval, until the artifact changes.
const maxRetryInterval = 10 * time.Minute

// Poller builds, for every Kustomization, what its source's current artifact
// declares (Build) and records it in the model, or why it cannot
// (FluxDesired.Unjudged): once per artifact digest and build-relevant spec,
// downloading each artifact at most once per round.
type Poller struct {
	Fetcher  *Fetcher
	Interval time.Duration
	Logger   *slog.Logger
	// GetKustomization reads a Kustomization from the apiserver: the build
	// reads its spec (patches, postBuild), which the model does not keep.
	GetKustomization func(ctx context.Context, namespace, name string) (map[string]any, error)
	// FP is the transforms' Fingerprinter (BuildKey).
	FP *model.Fingerprinter
	// Available reports whether a watched resource is listed and permitted
	// (nil: every one). No round runs before Kustomizations are.
	Available func(model.Resource) bool
	// BuildTimeout bounds one build (DefaultBuildTimeout).
	BuildTimeout time.Duration
	// Now is the clock (tests).
	Now func() time.Time

	fetches, failures atomic.Uint64
	// lastBuilds counts the kustomize builds the last Round ran (Run's
	// goroutine only).
	lastBuilds int
	// health: the desired-source health every poller reports (SourceHealth).
	health   model.SourceTracker
	mu       sync.Mutex
	refusals map[string]uint64
	// limited: artifacts (by digest) that broke a limit, and builds (digest
	// and build key) that did: never fetched or built again by this process.
	limited map[string]string
	// retry: the backoff of downloads that failed, by URL and digest.
	retry  map[string]*retryState
	logged map[string]bool
}

type retryState struct {
	b    *backoff.ExponentialBackOff
	next time.Time
}

// Fetches and Failures count artifact downloads and the ones that failed;
// Refusals the downloads refused before or while they were made, by
// FetchError reason.
// SourceHealth is the desired-source health of the Flux artifact poller: one
// read per artifact download (refused ones included; a download not tried
// because of a remembered limit or a backoff is no read).
func (p *Poller) SourceHealth() model.SourceHealth { return p.health.SourceHealth() }

func (p *Poller) Fetches() uint64  { return p.fetches.Load() }
func (p *Poller) Failures() uint64 { return p.failures.Load() }
func (p *Poller) Refusals() map[string]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]uint64, len(p.refusals))
	for k, v := range p.refusals {
		out[k] = v
	}
	return out
}

// releaseAfterBuilds: after a Round of at least this many builds, Run returns
// the free heap to the OS.
const releaseAfterBuilds = 20

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context, s Sink) {
	if p.Interval <= 0 {
		p.Interval = DefaultPollInterval
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		p.Round(ctx, s)
		if p.lastBuilds >= releaseAfterBuilds {
			// Each build parses kustomize's OpenAPI schema and the artifact:
			// a round of many (the first, or a revision shared by many
			// Kustomizations) leaves the heap several times what stays
			// live, which the runtime's scavenger would give back over
			// minutes. Collected and returned now: one forced collection.
			debug.FreeOSMemory()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// job is one Kustomization to build.
type job struct {
	ks   model.Ref
	a    flux.Artifact
	key  string // the Kustomization's flux.BuildKey as the informer saw it
	prev *model.FluxDesired
}

func (p *Poller) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Poller) init() {
	if p.limited == nil {
		p.limited, p.retry, p.logged, p.refusals = map[string]string{}, map[string]*retryState{}, map[string]bool{}, map[string]uint64{}
	}
	if p.Interval <= 0 {
		p.Interval = DefaultPollInterval
	}
	if p.BuildTimeout <= 0 {
		p.BuildTimeout = DefaultBuildTimeout
	}
}

// Round brings every Kustomization's build up to date once.
func (p *Poller) Round(ctx context.Context, s Sink) {
	p.init()
	p.lastBuilds = 0
	if p.Available != nil && !p.Available(model.ResKustomizations) {
		return
	}
	now := p.now()
	var jobs []job
	type verdict struct {
		ks model.Ref
		d  *model.FluxDesired
	}
	var set []verdict
	digests := map[string]bool{}
	s.Read(func(v model.View) {
		for _, k := range v.Kustomizations() {
			ref := model.Ref{Namespace: k.Namespace, Name: k.Name}
			prev, had := v.FluxDesiredOf(k.Namespace, k.Name)
			if k.Deleting || k.DecodeErr != "" {
				if had {
					set = append(set, verdict{ref, nil})
				}
				continue
			}
			unjudged := func(reason, detail, rev, digest string) {
				if had && prev.Unjudged == reason && prev.Detail == detail && prev.Revision == rev && prev.Digest == digest {
					return
				}
				set = append(set, verdict{ref, p.unjudged(ref, prev, reason, detail, rev, digest, k.BuildKey, now)})
			}
			if !slices.Contains(flux.SourceKinds, k.SourceKind) {
				unjudged(flux.UnjudgedSourceKind, fmt.Sprintf("sourceRef kind %q is not one driftwatch reads", build.Truncate(k.SourceKind)), "", "")
				continue
			}
			if res := model.FluxSourceResource(k.SourceKind); p.Available != nil && !p.Available(res) {
				unjudged(flux.UnjudgedSourceUnavailable, fmt.Sprintf("%s objects are not listed (CRD absent or forbidden)", k.SourceKind), "", "")
				continue
			}
			src, ok := v.FluxSourceOf(k)
			if !ok || src.ArtifactURL == "" || src.ArtifactRevision == "" {
				unjudged(flux.UnjudgedNoArtifact, fmt.Sprintf("%s %s/%s serves no artifact", k.SourceKind, k.SourceNamespace, k.SourceName), "", "")
				continue
			}
			a := flux.Artifact{URL: src.ArtifactURL, Revision: src.ArtifactRevision, Digest: src.ArtifactDigest}
			digests[a.Digest] = true
			if had && prev.Revision == a.Revision && prev.Digest == a.Digest && prev.BuildKey == k.BuildKey &&
				(prev.Judged() || !retryable(prev.Unjudged)) {
				continue // up to date, or failed for good on this artifact and spec
			}
			if src.Suspend {
				// A suspended source's status is written by nobody but
				// whoever may edit it (Flux's flux-edit role, aggregated
				// into edit): never fetched.
				unjudged(flux.UnjudgedSourceSuspended, fmt.Sprintf("%s %s/%s is suspended and its artifact changed since the last build", k.SourceKind, k.SourceNamespace, k.SourceName), a.Revision, a.Digest)
				continue
			}
			jobs = append(jobs, job{ks: ref, a: a, key: k.BuildKey, prev: prev})
		}
	})
	for _, x := range set {
		s.SetFluxDesired(x.ks, x.d)
	}
	p.prune(digests)
	// One download per artifact (digest) per round: sources that serve the
	// same content share it; an error belongs to the URL that gave it.
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].a.Digest < jobs[j].a.Digest })
	var cur build.FS
	var curDigest string
	have := false
	defer func() { cur.Wipe() }()
	for _, j := range jobs {
		if ctx.Err() != nil {
			return
		}
		if !have || j.a.Digest != curDigest {
			cur.Wipe()
			cur, have, curDigest = nil, false, j.a.Digest
		}
		fs := cur
		var err error
		if have {
			// The content of this digest, downloaded for another source:
			// used only where this source's own URL passes the checks.
			if err = p.Fetcher.Check(j.a); err != nil {
				p.count(err)
			}
		} else {
			if fs, err = p.fetch(ctx, j.a, now); err == nil {
				cur, have = fs, true
			}
		}
		var d *model.FluxDesired
		if err != nil {
			var skip *skipped
			if errors.As(err, &skip) {
				continue // backing off: the previous verdict stands
			}
			reason, detail := fetchVerdict(err)
			d = p.unjudged(j.ks, j.prev, reason, detail, j.a.Revision, j.a.Digest, j.key, now)
		} else {
			d = p.build(ctx, j, fs, now)
		}
		if d != nil {
			s.SetFluxDesired(j.ks, d)
		}
	}
}

// skipped: a download not attempted this round (its backoff runs).
type skipped struct{}

func (*skipped) Error() string { return "backing off" }

// fetch downloads an artifact unless it broke a limit before or its backoff
// runs.
func (p *Poller) fetch(ctx context.Context, a flux.Artifact, now time.Time) (build.FS, error) {
	if why, ok := p.limited[a.Digest]; ok && a.Digest != "" {
		return nil, &FetchError{Reason: flux.FetchLimit, Detail: why + " (remembered: not fetched again)"}
	}
	retryKey := a.URL + "|" + a.Digest
	if r, ok := p.retry[retryKey]; ok && now.Before(r.next) {
		return nil, &skipped{}
	}
	p.fetches.Add(1)
	fs, err := p.Fetcher.Fetch(ctx, a)
	p.health.Read(err == nil, now)
	if err == nil {
		delete(p.retry, retryKey)
		return fs, nil
	}
	p.failures.Add(1)
	p.count(err)
	switch ReasonOf(err) {
	case flux.FetchLimit:
		if a.Digest != "" {
			p.limited[a.Digest] = limitDetail(err)
		}
	case flux.FetchFailed:
		r := p.retry[retryKey]
		if r == nil {
			b := backoff.NewExponentialBackOff()
			b.InitialInterval, b.Multiplier, b.RandomizationFactor = p.Interval, 2, 0.1
			b.MaxInterval, b.MaxElapsedTime = maxRetryInterval, 0
			b.Reset()
			r = &retryState{b: b}
			p.retry[retryKey] = r
		}
		r.next = now.Add(r.b.NextBackOff())
	}
	return nil, err
}

// count adds a refusal to the refusals by reason.
func (p *Poller) count(err error) {
	var fe *FetchError
	if errors.As(err, &fe) && fe.Refused() {
		p.mu.Lock()
		p.refusals[fe.Reason]++
		p.mu.Unlock()
	}
}

func limitDetail(err error) string {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Detail
	}
	return "a limit"
}

// fetchVerdict maps a download error to an unjudged reason.
func fetchVerdict(err error) (reason, detail string) {
	var fe *FetchError
	detail = "the download failed"
	if errors.As(err, &fe) {
		detail = fe.Reason + ": " + fe.Detail
	}
	switch ReasonOf(err) {
	case flux.FetchLimit:
		return flux.UnjudgedLimit, detail
	case flux.FetchFailed:
		return flux.UnjudgedFetchFailed, detail
	}
	return flux.UnjudgedFetchRefused, detail
}

// retryable: reasons that a later round may clear without a new artifact or
// spec (a download failure after its backoff, an apiserver read).
func retryable(reason string) bool {
	return reason == flux.UnjudgedFetchFailed || reason == flux.UnjudgedSpecUnreadable
}

// build reads the Kustomization and builds it from fs within BuildTimeout.
func (p *Poller) build(ctx context.Context, j job, fs build.FS, now time.Time) *model.FluxDesired {
	if p.GetKustomization == nil {
		return p.unjudged(j.ks, j.prev, flux.UnjudgedSpecUnreadable, "no apiserver client to read the Kustomization", j.a.Revision, j.a.Digest, j.key, now)
	}
	gctx, cancel := context.WithTimeout(ctx, DefaultFetchTimeout)
	obj, err := p.GetKustomization(gctx, j.ks.Namespace, j.ks.Name)
	cancel()
	if err != nil {
		return p.unjudged(j.ks, j.prev, flux.UnjudgedSpecUnreadable, "the Kustomization could not be read from the apiserver", j.a.Revision, j.a.Digest, j.key, now)
	}
	spec, _ := obj["spec"].(map[string]any)
	key := flux.BuildKey(p.FP, spec)
	if why, ok := p.limited[j.a.Digest+"/"+key]; ok {
		return p.unjudged(j.ks, j.prev, flux.UnjudgedLimit, why, j.a.Revision, j.a.Digest, key, now)
	}
	type out struct {
		r   build.Result
		err error
	}
	// Counted for Run's memory return: a build that ran. A Kustomization
	// whose spec cannot be read is retried every round and costs no build.
	p.lastBuilds++
	done := make(chan out, 1)
	go func() {
		r, err := build.Build(obj, fs)
		done <- out{r, err}
	}()
	timer := time.NewTimer(p.BuildTimeout)
	defer timer.Stop()
	var o out
	select {
	case o = <-done:
	case <-timer.C:
		why := fmt.Sprintf("the build took longer than %s", p.BuildTimeout)
		p.limited[j.a.Digest+"/"+key] = why
		<-done // kustomize builds one at a time (a process-wide lock): wait for it before the next
		return p.unjudged(j.ks, j.prev, flux.UnjudgedLimit, why, j.a.Revision, j.a.Digest, key, now)
	case <-ctx.Done():
		<-done
		return nil
	}
	if o.err != nil {
		reason, detail := flux.UnjudgedBuildFailed, "the build failed"
		var be *build.BuildError
		if errors.As(o.err, &be) {
			reason, detail = be.Reason, be.Detail
		}
		if reason == flux.UnjudgedLimit {
			p.limited[j.a.Digest+"/"+key] = detail
		}
		return p.unjudged(j.ks, j.prev, reason, detail, j.a.Revision, j.a.Digest, key, now)
	}
	d := &model.FluxDesired{Revision: j.a.Revision, Digest: j.a.Digest, BuildKey: key}
	d.Objects, d.Vars = o.r.Objects, o.r.Vars // the store stamps its own copy of the objects
	if n := undetermined(d.Objects); n > 0 && p.Logger != nil {
		p.logOnce(j.ks, "undetermined@"+j.a.Digest+key, "flux: objects of this Kustomization are undetermined: nothing is expected of them",
			"kustomization", j.ks.Namespace+"/"+j.ks.Name, "revision", j.a.Revision, "objects", n, "why", firstUndetermined(d.Objects))
	}
	return d
}

// unjudged makes the verdict of a Kustomization that cannot be judged, and
// logs it once per reason and artifact.
func (p *Poller) unjudged(ks model.Ref, prev *model.FluxDesired, reason, detail, rev, digest, key string, now time.Time) *model.FluxDesired {
	d := &model.FluxDesired{Revision: rev, Digest: digest, BuildKey: key, Unjudged: reason, Detail: detail, Since: now}
	if prev != nil && prev.Unjudged == reason && !prev.Since.IsZero() {
		d.Since = prev.Since
	}
	p.logOnce(ks, reason+"@"+digest+key, "flux: nothing is expected from this Kustomization", "kustomization", ks.Namespace+"/"+ks.Name,
		"reason", reason, "detail", detail, "revision", rev)
	return d
}

func (p *Poller) logOnce(ks model.Ref, what, msg string, args ...any) {
	if p.Logger == nil {
		return
	}
	k := ks.Namespace + "/" + ks.Name + "#" + what
	if p.logged[k] {
		return
	}
	if len(p.logged) > 10000 {
		p.logged = map[string]bool{}
	}
	p.logged[k] = true
	p.Logger.Warn(msg, args...)
}

// prune forgets the limits and backoffs of artifacts no source serves any
// more (a later return fetches once more, then remembers again).
func (p *Poller) prune(current map[string]bool) {
	for k := range p.retry {
		if _, digest, _ := strings.Cut(k, "|"); !current[digest] {
			delete(p.retry, k)
		}
	}
	for k := range p.limited {
		digest, _, _ := strings.Cut(k, "/")
		if !current[digest] {
			delete(p.limited, k)
		}
	}
}

func undetermined(objs []model.Declared) int {
	n := 0
	for _, o := range objs {
		if o.Undetermined != "" {
			n++
		}
	}
	return n
}

func firstUndetermined(objs []model.Declared) string {
	for _, o := range objs {
		if o.Undetermined != "" {
			return o.Kind + " " + o.Namespace + "/" + o.Name + ": " + o.Undetermined
		}
	}
	return ""
}
