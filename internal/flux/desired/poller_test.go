package desired

import (
	"context"
	"errors"
	"github.com/driftwatch/driftwatch/internal/flux"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// artifactServer answers, in memory, for every URL: the tarball of the
// current content, or a failure the test sets.
type artifactServer struct {
	mu     sync.Mutex
	body   []byte
	status int
	hits   atomic.Int64
}

func (s *artifactServer) RoundTrip(r *http.Request) (*http.Response, error) {
	s.hits.Add(1)
	s.mu.Lock()
	body, status := s.body, s.status
	s.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(strings.NewReader(string(body))),
		ContentLength: int64(len(body)), Header: http.Header{}, Request: r}, nil
}

func (s *artifactServer) set(body []byte, status int) {
	s.mu.Lock()
	s.body, s.status = body, status
	s.mu.Unlock()
}

// pollerFixture: Kustomization flux-system/apps (path app) of GitRepository
// flux-system/apps serving the artifact of files.
type pollerFixture struct {
	t      *testing.T
	store  *model.Store
	srv    *artifactServer
	p      *Poller
	now    time.Time
	spec   map[string]any
	getErr error
	gets   atomic.Int64
	src    *model.FluxSource
	ks     *model.FluxKustomization
}

func newPollerFixture(t *testing.T, files ...entry) *pollerFixture {
	f := &pollerFixture{t: t, store: model.NewStore(nil), srv: &artifactServer{}, now: time.Unix(1_700_000_000, 0)}
	fp := model.NewFingerprinterWithKey([]byte("poller-test-key"))
	f.spec = map[string]any{"path": "./app", "sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"}}
	f.p = &Poller{Fetcher: &Fetcher{Transport: f.srv}, Interval: 30 * time.Second, FP: fp, Now: func() time.Time { return f.now },
		GetKustomization: func(context.Context, string, string) (map[string]any, error) {
			f.gets.Add(1)
			if f.getErr != nil {
				return nil, f.getErr
			}
			return map[string]any{"spec": f.spec}, nil
		}}
	f.ks = mt.Kustomization("flux-system", "apps")
	f.ks.BuildKey = flux.BuildKey(fp, f.spec)
	f.store.UpsertKustomization(f.ks)
	f.serve(files...)
	return f
}

// serve publishes a new artifact (a new revision) of the files.
func (f *pollerFixture) serve(files ...entry) {
	tgz := tarGz(f.t, files...)
	f.srv.set(tgz, 0)
	src := mt.GitRepository("flux-system", "apps")
	src.ArtifactDigest = sha("sha256", tgz)
	src.ArtifactRevision = "main@sha1:" + strings.TrimPrefix(src.ArtifactDigest, "sha256:")[:40]
	f.src = src
	f.store.UpsertFluxSource(src)
}

func (f *pollerFixture) round() *model.FluxDesired {
	f.t.Helper()
	f.p.Round(context.Background(), f.store)
	var d *model.FluxDesired
	f.store.Read(func(v model.View) { d, _ = v.FluxDesiredOf("flux-system", "apps") })
	if d == nil {
		f.t.Fatal("no verdict recorded")
	}
	return d
}

func TestPollerBuildsOncePerArtifact(t *testing.T) {
	f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
	d := f.round()
	if !d.Judged() || len(d.Objects) != 1 || d.Objects[0].Name != "db" || d.BuildKey != f.ks.BuildKey || d.Digest != f.src.ArtifactDigest {
		t.Fatalf("first round: %+v", d)
	}
	if f.p.lastBuilds != 1 {
		t.Errorf("first round counted %d builds, want 1", f.p.lastBuilds)
	}
	f.round()
	if f.p.lastBuilds != 0 {
		t.Errorf("a round with nothing to build counted %d builds (Run returns memory after a round of many)", f.p.lastBuilds)
	}
	f.round()
	if n := f.srv.hits.Load(); n != 1 {
		t.Fatalf("%d downloads of one artifact over three rounds, want 1", n)
	}
	// A new revision: built again.
	f.serve(reg("app/s.yaml", secretYAML("db", "A", "B")))
	if d := f.round(); !d.Judged() || !slices.Equal(d.Objects[0].Keys, []string{"A", "B"}) {
		t.Fatalf("after a commit: %+v", d)
	}
	// A spec change (another BuildKey): built again from what the apiserver says.
	f.spec["targetNamespace"] = "prod"
	f.ks = mt.Kustomization("flux-system", "apps")
	f.ks.BuildKey = flux.BuildKey(f.p.FP, f.spec)
	f.store.UpsertKustomization(f.ks)
	if d := f.round(); d.Objects[0].Namespace != "prod" || d.BuildKey != f.ks.BuildKey {
		t.Fatalf("after a spec change: %+v", d)
	}
	if f.gets.Load() != 3 {
		t.Errorf("the Kustomization was read %d times, want once per build (3)", f.gets.Load())
	}
}

// A failed download is retried with backoff, without a new commit, and the
// build returns once it succeeds.
func TestPollerRetriesAFailedDownload(t *testing.T) {
	f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
	f.srv.set(f.srv.body, http.StatusServiceUnavailable)
	d := f.round()
	if d.Unjudged != flux.UnjudgedFetchFailed {
		t.Fatalf("verdict %+v, want fetch_failed", d)
	}
	since := d.Since
	f.now = f.now.Add(5 * time.Second)
	f.round()
	if n := f.srv.hits.Load(); n != 1 {
		t.Fatalf("retried within the backoff: %d downloads", n)
	}
	good := tarGz(t, reg("app/s.yaml", secretYAML("db", "A")))
	f.srv.set(good, 0)
	f.now = f.now.Add(40 * time.Second)
	if h := f.p.SourceHealth(); h.Reads != 1 || h.Failures != 1 || h.Up || !h.Asked || !h.LastSuccess.IsZero() {
		t.Fatalf("source health after a failed download and a backoff: %+v", h)
	}
	if d := f.round(); !d.Judged() {
		t.Fatalf("after the backoff: %+v (downloads %d)", d, f.srv.hits.Load())
	}
	if h := f.p.SourceHealth(); h.Reads != 2 || h.Failures != 1 || !h.Up || !h.LastSuccess.Equal(f.now) {
		t.Fatalf("source health after the download: %+v (now %v)", h, f.now)
	}
	if since.IsZero() {
		t.Error("the unjudged verdict has no time")
	}
}

// An artifact that breaks a limit is remembered by digest: not downloaded
// again by this process.
func TestPollerRemembersALimit(t *testing.T) {
	f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
	f.p.Fetcher.Limits = Limits{Inflated: 64}
	d := f.round()
	if d.Unjudged != flux.UnjudgedLimit {
		t.Fatalf("verdict %+v, want limit", d)
	}
	for i := 0; i < 3; i++ {
		f.now = f.now.Add(time.Hour)
		f.round()
	}
	if n := f.srv.hits.Load(); n != 1 {
		t.Fatalf("%d downloads of an artifact over the limit, want 1", n)
	}
}

func TestPollerVerdictsWithoutADownload(t *testing.T) {
	t.Run("a refused host is counted and nothing is fetched", func(t *testing.T) {
		f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
		f.src.ArtifactURL = "http://169.254.169.254/latest/meta-data/x.tar.gz"
		f.store.UpsertFluxSource(f.src)
		if d := f.round(); d.Unjudged != flux.UnjudgedFetchRefused || !strings.Contains(d.Detail, flux.RefuseHostNotAllowed) {
			t.Fatalf("verdict %+v", d)
		}
		if f.srv.hits.Load() != 0 || f.p.Refusals()[flux.RefuseHostNotAllowed] != 1 {
			t.Fatalf("downloads %d, refusals %v", f.srv.hits.Load(), f.p.Refusals())
		}
	})
	t.Run("a suspended source whose artifact changed is not fetched", func(t *testing.T) {
		f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
		if d := f.round(); !d.Judged() {
			t.Fatal(d)
		}
		f.serve(reg("app/s.yaml", secretYAML("db", "A", "B")))
		f.src.Suspend = true
		f.store.UpsertFluxSource(f.src)
		if d := f.round(); d.Unjudged != flux.UnjudgedSourceSuspended {
			t.Fatalf("verdict %+v", d)
		}
		if n := f.srv.hits.Load(); n != 1 {
			t.Fatalf("%d downloads, want 1 (before the suspension)", n)
		}
	})
	t.Run("a suspended source whose artifact did not change keeps its build", func(t *testing.T) {
		f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
		f.round()
		f.src.Suspend = true
		f.store.UpsertFluxSource(f.src)
		if d := f.round(); !d.Judged() {
			t.Fatalf("verdict %+v", d)
		}
	})
	t.Run("an unknown source kind", func(t *testing.T) {
		f := newPollerFixture(t)
		f.ks.SourceKind = "HelmChart"
		f.store.UpsertKustomization(f.ks)
		if d := f.round(); d.Unjudged != flux.UnjudgedSourceKind || f.srv.hits.Load() != 0 {
			t.Fatalf("verdict %+v", d)
		}
	})
	t.Run("a source resource not listed", func(t *testing.T) {
		f := newPollerFixture(t)
		f.ks.SourceKind = "ExternalArtifact"
		f.store.UpsertKustomization(f.ks)
		f.p.Available = func(r model.Resource) bool { return r != model.ResExternalArtifacts }
		if d := f.round(); d.Unjudged != flux.UnjudgedSourceUnavailable {
			t.Fatalf("verdict %+v", d)
		}
	})
	t.Run("no artifact yet", func(t *testing.T) {
		f := newPollerFixture(t)
		f.src.ArtifactURL, f.src.ArtifactRevision = "", ""
		f.store.UpsertFluxSource(f.src)
		if d := f.round(); d.Unjudged != flux.UnjudgedNoArtifact {
			t.Fatalf("verdict %+v", d)
		}
	})
	t.Run("the Kustomization cannot be read: retried next round", func(t *testing.T) {
		f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
		f.getErr = errors.New("forbidden")
		if d := f.round(); d.Unjudged != flux.UnjudgedSpecUnreadable {
			t.Fatalf("verdict %+v", d)
		}
		// Retried every round without a build: not counted toward Run's
		// memory return (a forced collection per round otherwise, with
		// releaseAfterBuilds Kustomizations unreadable).
		if f.p.lastBuilds != 0 {
			t.Errorf("an unreadable spec counted %d builds, want 0", f.p.lastBuilds)
		}
		f.getErr = nil
		if d := f.round(); !d.Judged() {
			t.Fatalf("verdict %+v", d)
		}
		if f.p.lastBuilds != 1 {
			t.Errorf("the build after it counted %d, want 1", f.p.lastBuilds)
		}
	})
	t.Run("a remote base", func(t *testing.T) {
		f := newPollerFixture(t, reg("app/kustomization.yaml", "resources: [https://example.invalid/x.yaml]\n"))
		if d := f.round(); d.Unjudged != flux.UnjudgedRemoteBase {
			t.Fatalf("verdict %+v", d)
		}
	})
	t.Run("no round before Kustomizations are listed", func(t *testing.T) {
		f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
		f.p.Available = func(model.Resource) bool { return false }
		f.p.Round(context.Background(), f.store)
		f.store.Read(func(v model.View) {
			if d, ok := v.FluxDesiredOf("flux-system", "apps"); ok {
				t.Errorf("a verdict before the informers synced: %+v", d)
			}
		})
	})
}

// The build time budget: a build over it is a limit, remembered for that
// artifact and spec.
func TestPollerBuildTimeout(t *testing.T) {
	// Every build takes longer than a millisecond (Flux's build parses the
	// OpenAPI schema each time).
	f := newPollerFixture(t, reg("app/s.yaml", secretYAML("db", "A")))
	f.p.BuildTimeout = time.Millisecond
	if d := f.round(); d.Unjudged != flux.UnjudgedLimit || !strings.Contains(d.Detail, "longer than") {
		t.Fatalf("verdict %+v", d)
	}
	f.p.BuildTimeout = time.Minute
	f.now = f.now.Add(time.Hour)
	if d := f.round(); d.Unjudged != flux.UnjudgedLimit {
		t.Fatalf("built again after a timeout: %+v", d)
	}
}

// secretYAML is a Secret manifest with stringData keys (values "v").
func secretYAML(name string, keys ...string) string {
	s := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\nstringData:\n"
	for _, k := range keys {
		s += "  " + k + ": v\n"
	}
	return s
}
