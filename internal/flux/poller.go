package flux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Store is what the poller reads and writes (model.Store).
type Store interface {
	Read(fn func(v model.View))
	SetFluxDesired(ks model.Ref, d *model.FluxDesired)
}

// Defaults of the agent's --flux-poll-interval (Poller.Interval) and
// --flux-timeout (the timeout of the Fetcher's HTTP client: one artifact
// download).
const (
	DefaultPollInterval = 30 * time.Second
	DefaultFetchTimeout = 30 * time.Second
)

// Poller builds, for every Kustomization, what its source's current artifact
// declares (Build) and records it in the model: once per artifact revision and
// build-relevant spec, fetching each artifact once per round.
type Poller struct {
	Fetcher  *Fetcher
	Interval time.Duration
	Logger   *slog.Logger

	fetches, failures atomic.Uint64
	unjudged          atomic.Int64
	logged            map[string]bool
}

// Unjudged is the number of Kustomizations whose last build failed or is
// unsupported.
func (p *Poller) Unjudged() int { return int(p.unjudged.Load()) }

// Fetches and Failures count artifact downloads and the ones that failed.
func (p *Poller) Fetches() uint64  { return p.fetches.Load() }
func (p *Poller) Failures() uint64 { return p.failures.Load() }

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context, s Store) {
	if p.Interval <= 0 {
		p.Interval = DefaultPollInterval
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		p.Round(ctx, s)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type job struct {
	ks       model.Ref
	spec     BuildSpec
	specKey  string
	artifact Artifact
}

// Round brings every Kustomization's build up to date once.
func (p *Poller) Round(ctx context.Context, s Store) {
	if p.logged == nil {
		p.logged = map[string]bool{}
	}
	var jobs []job
	var forget []model.Ref
	s.Read(func(v model.View) {
		for _, k := range v.Kustomizations() {
			ref := model.Ref{Namespace: k.Namespace, Name: k.Name}
			src, ok := v.FluxSourceOf(k)
			if !ok || src.ArtifactURL == "" || src.ArtifactRevision == "" {
				if _, had := v.FluxDesiredOf(k.Namespace, k.Name); had {
					forget = append(forget, ref)
				}
				continue
			}
			spec := SpecOf(k)
			key := specKey(spec)
			if d, ok := v.FluxDesiredOf(k.Namespace, k.Name); ok && d.Revision == src.ArtifactRevision && d.SpecKey == key {
				continue
			}
			jobs = append(jobs, job{ks: ref, spec: spec, specKey: key,
				artifact: Artifact{URL: src.ArtifactURL, Revision: src.ArtifactRevision, Digest: src.ArtifactDigest}})
		}
	})
	for _, r := range forget {
		s.SetFluxDesired(r, nil)
	}
	defer func() {
		n := 0
		s.Read(func(v model.View) {
			for _, k := range v.Kustomizations() {
				if d, ok := v.FluxDesiredOf(k.Namespace, k.Name); ok && (d.Err != "" || d.Unsupported != "") {
					n++
				}
			}
		})
		p.unjudged.Store(int64(n))
	}()
	// One download per artifact per round.
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].artifact.URL < jobs[j].artifact.URL })
	var fs FS
	var fsURL string
	var fsErr error
	for _, j := range jobs {
		if ctx.Err() != nil {
			return
		}
		if j.artifact.URL != fsURL {
			fsURL = j.artifact.URL
			p.fetches.Add(1)
			fctx, cancel := context.WithTimeout(ctx, time.Minute)
			fs, fsErr = p.Fetcher.Fetch(fctx, j.artifact)
			cancel()
			if fsErr != nil {
				p.failures.Add(1)
			}
		}
		d := &model.FluxDesired{Revision: j.artifact.Revision, SpecKey: j.specKey}
		if fsErr != nil {
			d.Err = fsErr.Error()
		} else if res, err := Build(fs, j.spec); err != nil {
			d.Err = "build: " + err.Error()
		} else {
			d.Unsupported = res.Unsupported
			d.Objects, d.Vars = desiredObjects(res)
		}
		if d.Err != "" || d.Unsupported != "" {
			k := j.ks.Namespace + "/" + j.ks.Name + "@" + j.artifact.Revision
			if !p.logged[k] && p.Logger != nil {
				p.logged[k] = true
				if len(p.logged) > 10000 {
					p.logged = map[string]bool{k: true}
				}
				p.Logger.Warn("flux: nothing is expected from this Kustomization's source", "kustomization", j.ks.Namespace+"/"+j.ks.Name,
					"revision", j.artifact.Revision, "error", d.Err, "unsupported", d.Unsupported)
			}
		}
		s.SetFluxDesired(j.ks, d)
	}
}

// SpecOf is the build-relevant part of a Kustomization.
func SpecOf(k *model.FluxKustomization) BuildSpec {
	spec := BuildSpec{Path: k.Path, TargetNamespace: k.TargetNamespace, NamePrefix: k.NamePrefix, NameSuffix: k.NameSuffix,
		Components: k.Components, CommonAnnotations: k.CommonAnnotations, CommonLabels: k.CommonLabels}
	for _, p := range k.Patches {
		spec.Patches = append(spec.Patches, PatchTarget(p))
	}
	return spec
}

func specKey(s BuildSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q %v\n", s.Path, s.TargetNamespace, s.NamePrefix, s.NameSuffix, s.Components, s.Patches)
	for _, m := range []map[string]string{s.CommonAnnotations, s.CommonLabels} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%q=%q ", k, m[k])
		}
		h.Write([]byte("\n"))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// desiredObjects converts a build's result into model records.
func desiredObjects(r Result) ([]model.FluxDesiredObject, []model.FluxVarUse) {
	objs := make([]model.FluxDesiredObject, 0, len(r.Objects))
	for _, o := range r.Objects {
		objs = append(objs, model.FluxDesiredObject{Group: o.Group(), Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
			DataKeys: o.DataKeys, ES: o.ES, Labels: o.Labels, Annotations: o.Annotations,
			SOPS: o.SOPS, Undetermined: o.Undetermined})
	}
	vars := make([]model.FluxVarUse, 0, len(r.Vars))
	for _, v := range r.Vars {
		vars = append(vars, model.FluxVarUse{Var: v.Var, Kind: v.Kind, Namespace: v.Namespace, Name: v.Name})
	}
	return objs, vars
}

// RevisionsEqual compares two Flux revisions ("main@sha1:<sha>", or a bare
// SHA from older controllers).
func RevisionsEqual(a, b string) bool {
	if a == b {
		return true
	}
	return a != "" && b != "" && revisionDigest(a) == revisionDigest(b)
}

func revisionDigest(r string) string {
	if i := strings.LastIndex(r, "@"); i >= 0 {
		r = r[i+1:]
	}
	if i := strings.Index(r, ":"); i >= 0 {
		r = r[i+1:]
	}
	return r
}
