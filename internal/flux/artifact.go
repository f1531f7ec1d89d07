package flux

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Limits of an artifact (source-controller's defaults cap a Git artifact far
// below these).
const (
	MaxArtifactBytes        = 64 << 20  // the tarball as served
	MaxArtifactUncompressed = 256 << 20 // the files read out of it
	MaxArtifactFiles        = 50000     // entries of the tarball
)

// Fetcher downloads the artifacts source-controller serves (status.artifact.url)
// the way kustomize-controller does (fluxcd/pkg/http/fetch): a plain HTTP GET,
// the digest verified.
type Fetcher struct {
	Client *http.Client
	// Host, when set, replaces the host:port of every artifact URL (as
	// kustomize-controller's SOURCE_CONTROLLER_LOCALHOST): for an agent that
	// reaches source-controller another way than the cluster's DNS.
	Host string
}

// Fetch downloads and unpacks an artifact: its YAML and kustomization files
// (everything a build may read), bounded by the limits above.
func (f *Fetcher) Fetch(ctx context.Context, a Artifact) (FS, error) {
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("artifact URL is not http(s)")
	}
	if f.Host != "" {
		u.Host = f.Host
	}
	h, want, err := digester(a.Digest)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	c := f.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch artifact: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch artifact: %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxArtifactBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch artifact: %w", err)
	}
	if len(body) > MaxArtifactBytes {
		return nil, fmt.Errorf("artifact larger than %d bytes", MaxArtifactBytes)
	}
	if h != nil {
		h.Write(body)
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			return nil, errors.New("artifact digest mismatch")
		}
	}
	return ReadTarGz(body)
}

// digester returns the hash of an artifact digest "<algorithm>:<hex>" (nil
// when there is none: older source-controllers wrote only a checksum).
func digester(d string) (hash.Hash, string, error) {
	if d == "" {
		return nil, "", nil
	}
	algo, hexsum, ok := strings.Cut(d, ":")
	if !ok {
		return nil, "", errors.New("artifact digest without an algorithm")
	}
	switch algo {
	case "sha256":
		return sha256.New(), strings.ToLower(hexsum), nil
	case "sha384":
		return sha512.New384(), strings.ToLower(hexsum), nil
	case "sha512":
		return sha512.New(), strings.ToLower(hexsum), nil
	}
	return nil, "", fmt.Errorf("artifact digest algorithm %q is not supported", algo)
}

// ReadTarGz unpacks a gzipped tarball into an FS of its regular .yaml, .yml
// and .json files and kustomization files. Paths are cleaned; entries outside
// the root and links are skipped.
func ReadTarGz(b []byte) (FS, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, errors.New("artifact is not gzip")
	}
	tr := tar.NewReader(zr)
	fs := FS{}
	total, n := 0, 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errors.New("artifact is not a valid tarball")
		}
		n++
		if n > MaxArtifactFiles {
			return nil, fmt.Errorf("artifact has more than %d entries", MaxArtifactFiles)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		p := path.Clean(strings.TrimLeft(hdr.Name, "/"))
		if p == "." || p == ".." || strings.HasPrefix(p, "../") {
			continue
		}
		if !wanted(p) {
			continue
		}
		if hdr.Size > MaxArtifactUncompressed-int64(total) {
			return nil, fmt.Errorf("artifact holds more than %d bytes of manifests", MaxArtifactUncompressed)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, errors.New("artifact is not a valid tarball")
		}
		total += len(data)
		fs[p] = data
	}
	return fs, nil
}

func wanted(p string) bool {
	switch path.Ext(p) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return path.Base(p) == "Kustomization"
}
