package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/internal/flux/build"
	"github.com/driftwatch/driftwatch/internal/flux/desired"
	"github.com/driftwatch/driftwatch/internal/model"
)

// artifactFiles is artifact a's repository at revision rev: the layout of
// internal/flux/desired's BenchmarkFluxScale (scaleArtifactFiles) and
// internal/agent's BenchmarkScrapeFlux (gitopsTarGz), kept in step with them
// (they live in _test.go files of other packages, so they cannot be
// imported): a base of 4 Secrets (one named and keyed by ${ENV}), 3
// ExternalSecrets, a secretGenerator, a ConfigMap and a Deployment, and five
// overlays each with a patch on a Secret, a secretGenerator and one more
// ExternalSecret. Revision 1 changes a value and the overlays' generator
// literal, as a commit would, and adds the key NEW_KEY to db-0: the key the
// revision phase waits for (driftwatch_secret_key_pending_sync).
func artifactFiles(a, rev int) map[string]string {
	var base strings.Builder
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&base, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-%d\n  labels: {app.kubernetes.io/name: app-%d}\ntype: Opaque\nstringData:\n"+
			"  USER: app\n  PASSWORD: hunter2-%d-%d\n  HOST: db.svc\n  PORT: \"5432\"\n", i, a, a, rev)
		if i == 0 && rev > 0 {
			base.WriteString("  NEW_KEY: n\n")
		}
		base.WriteString("---\n")
	}
	base.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: env-${ENV}\nstringData:\n  KEY_${ENV}: v\n  OTHER: w\n---\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&base, "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: es-%d\nspec:\n  refreshInterval: 1h\n"+
			"  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: es-%d, creationPolicy: Owner}\n  data:\n"+
			"  - {secretKey: U, remoteRef: {key: app-%d/u}}\n  - {secretKey: P, remoteRef: {key: app-%d/p}}\n  - {secretKey: T, remoteRef: {key: app-%d/t}}\n---\n", i, i, a, a, a)
	}
	base.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  LOG: info\n  FEATURE: \"on\"\n---\n")
	fmt.Fprintf(&base, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n"+
		"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.example.com/app-%d:1.%d\n"+
		"        envFrom: [{secretRef: {name: db-0}}]\n        env: [{name: P, valueFrom: {secretKeyRef: {name: es-0, key: P}}}]\n", a, rev)
	files := map[string]string{
		"apps/base/kustomization.yaml": "resources: [all.yaml]\nsecretGenerator:\n- name: gen\n  literals: [A=1, B=2]\n",
		"apps/base/all.yaml":           base.String(),
		"README.md":                    fmt.Sprintf("# app-%d\n", a),
	}
	for o := 0; o < 5; o++ {
		dir := fmt.Sprintf("apps/overlays/o%d/", o)
		files[dir+"kustomization.yaml"] = fmt.Sprintf("resources: [../../base, es.yaml]\npatches:\n- path: p.yaml\nsecretGenerator:\n- name: ov\n  literals: [X=%d, Y=%d]\n", o, rev)
		files[dir+"p.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata: {name: db-1}\nstringData: {EXTRA: e}\n"
		files[dir+"es.yaml"] = fmt.Sprintf("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: extra}\nspec:\n"+
			"  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: extra-%d}\n  dataFrom: [{extract: {key: app-%d/extra}}]\n", o, a)
	}
	return files
}

// archive packs files as source-controller's Storage.Archive
// (github.com/fluxcd/pkg/artifact/storage) does: the files written to a
// directory, walked with filepath.Walk (directories included, the root as
// "."), each header from tar.FileInfoHeader with the path relative to the
// root, uid/gid 0, no user or group names, zero times and the default modes
// (0o750 directories, 0o600 files), gzip at the default level. It returns the
// tarball and its digest ("sha256:<hex>", as status.artifact.digest).
func archive(dir string, files map[string]string) ([]byte, string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, "", err
		}
	}
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if m := fi.Mode(); !m.IsRegular() && !m.IsDir() {
			return nil
		}
		h, err := tar.FileInfoHeader(fi, p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = rel, 0, 0, "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}, time.Time{}
		h.Mode = 0o600
		if fi.IsDir() {
			h.Mode = 0o750
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	if err := gw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(out.Bytes())
	return out.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// artifact is one published artifact of a GitRepository.
type artifact struct {
	path     string // gitrepository/NS/NAME/COMMIT.tar.gz
	revision string // main@sha1:COMMIT
	digest   string
	size     int
	body     []byte
}

// makeArtifact archives artifact a at revision rev under a (fake,
// deterministic) commit id, named as source-controller names its files.
func makeArtifact(tmp string, a, rev int) (artifact, error) {
	body, digest, err := archive(filepath.Join(tmp, fmt.Sprintf("src-%d", a)), artifactFiles(a, rev))
	if err != nil {
		return artifact{}, err
	}
	c := sha1.Sum([]byte(fmt.Sprintf("%s@%d", sourceName(a), rev)))
	commit := hex.EncodeToString(c[:])
	return artifact{path: "gitrepository/" + fluxNS + "/" + sourceName(a) + "/" + commit + ".tar.gz",
		revision: "main@sha1:" + commit, digest: digest, size: len(body), body: body}, nil
}

// sourceServer stands in for source-controller's artifact server: it serves
// the published tarballs by path (GET /gitrepository/NS/NAME/FILE).
type sourceServer struct {
	mu       sync.RWMutex
	files    map[string][]byte
	requests atomic.Int64
}

func (s *sourceServer) publish(a artifact) {
	s.mu.Lock()
	s.files["/"+a.path] = a.body
	s.mu.Unlock()
}

func (s *sourceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.RLock()
	body, ok := s.files[r.URL.Path]
	s.mu.RUnlock()
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-gzip")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	_, _ = w.Write(body)
}

// declaredByK builds, with the agent's own build (desired.ReadTarGz and
// build.Build, Flux's kustomize), what Kustomization k of artifact 0
// declares: the Secrets and ExternalSecrets (generated names included) that
// every artifact's Kustomization k applies, in its own namespace. Names and
// keys do not depend on the artifact (kustomize's generator hash covers
// kind, name, type and data, not the namespace).
func declaredByK(perArtifact int, art artifact) ([][]model.Declared, error) {
	fs, err := desired.ReadTarGz(context.Background(), art.body, desired.DefaultLimits())
	if err != nil {
		return nil, err
	}
	out := make([][]model.Declared, perArtifact)
	for k := 0; k < perArtifact; k++ {
		r, err := build.Build(map[string]any{"spec": ksSpec(0, k)}, fs)
		if err != nil {
			return nil, fmt.Errorf("build of Kustomization %d: %w", k, err)
		}
		out[k] = r.Objects
	}
	return out, nil
}
