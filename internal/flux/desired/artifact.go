package desired

import (
	"archive/tar"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/build"
	"hash"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Reasons of a FetchError: a fixed, value-free vocabulary (they become

// FetchError is every error of Fetch and ReadTarGz. Reason is one of the
// constants above; Detail is value-free text for a log or a status: a host
// (quoted, truncated), an HTTP status code, a limit and a size, an entry's
// index, a cleaned entry path truncated to 200 bytes — never body bytes or
// file contents. It wraps no other error.
type FetchError struct{ Reason, Detail string }

func (e *FetchError) Error() string {
	var head string
	switch {
	case e.Refused():
		head = "artifact fetch refused (" + e.Reason + ")"
	case e.Reason == flux.FetchLimit:
		head = "artifact over a limit"
	case e.Reason == flux.FetchFailed:
		head = "artifact fetch failed"
	default:
		head = "artifact: " + e.Reason
	}
	if e.Detail == "" {
		return head
	}
	return head + ": " + e.Detail
}

// Refused says whether the reason is one of the Refuse* ones.
func (e *FetchError) Refused() bool {
	switch e.Reason {
	case flux.RefuseNotHTTP, flux.RefuseHostNotAllowed, flux.RefuseAddress, flux.RefuseRedirect, flux.RefuseNoDigest:
		return true
	}
	return false
}

// ReasonOf returns the Reason of a *FetchError in err's chain, FetchFailed
// for any other error, and "" for nil.
func ReasonOf(err error) string {
	if err == nil {
		return ""
	}
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return flux.FetchFailed
}

func refuse(reason, format string, args ...any) *FetchError {
	return &FetchError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func limitErr(format string, args ...any) *FetchError {
	return &FetchError{Reason: flux.FetchLimit, Detail: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) *FetchError {
	return &FetchError{Reason: flux.FetchFailed, Detail: fmt.Sprintf(format, args...)}
}

// quote truncates s to n bytes and quotes it (%q: no control character or
// invalid UTF-8 reaches a log line).
func quote(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return fmt.Sprintf("%q", s)
}

// Limits of one artifact. A zero (or negative) field takes its default.
type Limits struct {
	// Compressed: bytes of the tarball as served (default 32 MiB). A
	// Content-Length over it is refused before the body is read.
	Compressed int64
	// Inflated: total bytes inflated from the gzip stream, counted while
	// inflating: tar headers, every entry's data (kept or skipped) and
	// padding (default 64 MiB). The bytes of the files kept are counted
	// against it as well.
	Inflated int64
	// File: one regular file kept (default 8 MiB), judged on its header's
	// size before it is read.
	File int64
	// Entries: tar entries, of any type (default 50000).
	Entries int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{Compressed: 32 << 20, Inflated: 64 << 20, File: 8 << 20, Entries: 50000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Compressed <= 0 {
		l.Compressed = d.Compressed
	}
	if l.Inflated <= 0 {
		l.Inflated = d.Inflated
	}
	if l.File <= 0 {
		l.File = d.File
	}
	if l.Entries <= 0 {
		l.Entries = d.Entries
	}
	return l
}

// Check runs the checks Fetch makes before any request (the URL's scheme, its
// host against the allowed ones, the digest): a caller that already holds the
// content of a.Digest uses it for a only when Check passes.
func (f *Fetcher) Check(a flux.Artifact) error {
	if _, _, err := f.check(a); err != nil {
		return err
	}
	return nil
}

func (f *Fetcher) check(a flux.Artifact) (*url.URL, digestSpec, *FetchError) {
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Host == "" {
		return nil, digestSpec{}, refuse(flux.RefuseNotHTTP, "artifact URL is not an http(s) URL with a host")
	}
	f.once.Do(f.init)
	if !f.hostAllowed(u) {
		return nil, digestSpec{}, refuse(flux.RefuseHostNotAllowed, "host %s is not an allowed artifact host", quote(u.Host, 100))
	}
	dg, ferr := parseDigest(a.Digest)
	if ferr != nil {
		return nil, digestSpec{}, ferr
	}
	return u, dg, nil
}

// UserAgent is the User-Agent of the artifact downloads.
const UserAgent = "driftwatch-flux-artifacts"

// defaultTimeout of one download.
const defaultTimeout = 30 * time.Second

// Fetcher downloads the artifacts Flux serves (a Source's
// status.artifact.url) as kustomize-controller does (fluxcd/pkg/http/fetch:
// a plain GET, the digest verified), but treats the URL as untrusted input:
// anyone who may edit a Source's status in any namespace can write it.
//
// Set the fields before the first Fetch and do not change them afterwards:
// the HTTP client, the allowed hosts and the guard are built once, on the
// first Fetch. A Fetcher must not be copied after its first Fetch. Fetch is
// safe for concurrent use.
type Fetcher struct {
	// FluxNamespace: the namespace of Flux's controllers (default
	// "flux-system"). The allowed artifact hosts are, by default, the
	// Services of Flux's artifact servers in it: source-controller and
	// source-watcher (which serves the ExternalArtifacts of
	// ArtifactGenerators), as "NAME.NS", "NAME.NS.svc" and
	// "NAME.NS.svc.cluster.local" (a trailing dot and letter case ignored),
	// on any port. Never a suffix match:
	// source-controller.flux-system.svc.evil.example is refused. A cluster
	// domain other than cluster.local goes in AllowedHosts.
	FluxNamespace string
	// AllowedHosts: more allowed hosts (--flux-allowed-hosts): "host" for
	// any port, or "host:port" ("[v6addr]:port" for IPv6); no scheme. Letter
	// case and a trailing dot are ignored; a URL without a port has its
	// scheme's (80, 443). An IP address is compared as an address.
	AllowedHosts []string
	// SourceHost, when set, replaces host:port of an allowed URL before the
	// request (kustomize-controller's SOURCE_CONTROLLER_LOCALHOST): the
	// allowlist is checked on the URL's own host first. The dial-time guard
	// still applies to the address SourceHost resolves to (a port-forward
	// to localhost needs AllowedCIDRs 127.0.0.0/8 or ::1/128).
	SourceHost string
	// AllowedCIDRs: addresses the dial-time guard would refuse but the
	// operator allows (--flux-allowed-cidrs), e.g. 127.0.0.0/8 for an agent
	// that reaches source-controller through a port-forward. IPv4 ranges are
	// given as IPv4 prefixes (an IPv4-mapped IPv6 address is judged as IPv4).
	AllowedCIDRs []netip.Prefix
	// Timeout of one download, headers and body (default 30s).
	Timeout time.Duration
	// Limits of one artifact; zero fields take DefaultLimits' values.
	Limits Limits
	// Transport overrides the HTTP transport (the demo's in-memory
	// source-controller, tests). The host allowlist, the no-redirect rule,
	// the digest and all limits still apply; only the dial-time address
	// guard (and proxies) are the transport's business then.
	Transport http.RoundTripper

	once     sync.Once
	client   *http.Client
	anyPort  map[string]bool // allowed hosts, any port
	withPort map[string]bool // allowed "host:port"
}

// normHost lowercases a host, drops a trailing dot and the brackets of an
// IPv6 literal, and writes an IP address in its canonical form.
func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String()
	}
	return h
}

func (f *Fetcher) init() {
	f.client = f.newClient()
	f.anyPort, f.withPort = map[string]bool{}, map[string]bool{}
	ns := f.FluxNamespace
	if ns == "" {
		ns = "flux-system"
	}
	ns = normHost(ns)
	for _, svc := range []string{"source-controller", "source-watcher"} {
		for _, suffix := range []string{"", ".svc", ".svc.cluster.local"} {
			f.anyPort[svc+"."+ns+suffix] = true
		}
	}
	for _, e := range f.AllowedHosts {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if h, p, err := net.SplitHostPort(e); err == nil {
			if p == "" {
				f.anyPort[normHost(h)] = true
			} else {
				f.withPort[net.JoinHostPort(normHost(h), p)] = true
			}
			continue
		}
		f.anyPort[normHost(e)] = true
	}
}

// hostAllowed says whether the URL's host (and port, its scheme's when the
// URL has none) is allowed.
func (f *Fetcher) hostAllowed(u *url.URL) bool {
	h := normHost(u.Hostname())
	if h == "" {
		return false
	}
	if f.anyPort[h] {
		return true
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return f.withPort[net.JoinHostPort(h, port)]
}

// digestSpec is a parsed artifact digest.
type digestSpec struct {
	algo string
	hash func() hash.Hash
	sum  []byte
}

// parseDigest parses status.artifact.digest, "<algorithm>:<lowercase hex>"
// (opencontainers/go-digest's form, which source-controller writes).
func parseDigest(d string) (digestSpec, *FetchError) {
	if d == "" {
		return digestSpec{}, refuse(flux.RefuseNoDigest, "status.artifact.digest is empty")
	}
	algo, hexsum, ok := strings.Cut(d, ":")
	if !ok {
		return digestSpec{}, refuse(flux.RefuseNoDigest, "digest is not <algorithm>:<hex>")
	}
	var s digestSpec
	switch algo {
	case "sha256":
		s = digestSpec{algo: algo, hash: sha256.New}
	case "sha384":
		s = digestSpec{algo: algo, hash: sha512.New384}
	case "sha512":
		s = digestSpec{algo: algo, hash: sha512.New}
	default:
		return digestSpec{}, refuse(flux.RefuseNoDigest, "digest algorithm is not sha256, sha384 or sha512")
	}
	if len(hexsum) != 2*s.hash().Size() {
		return digestSpec{}, refuse(flux.RefuseNoDigest, "%s digest is not %d hex digits", algo, 2*s.hash().Size())
	}
	for i := 0; i < len(hexsum); i++ {
		if c := hexsum[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return digestSpec{}, refuse(flux.RefuseNoDigest, "%s digest is not lowercase hex", algo)
		}
	}
	s.sum, _ = hex.DecodeString(hexsum)
	return s, nil
}

// Fetch downloads the artifact a (its URL and Digest), verifies the digest
// before anything is parsed, and unpacks it into an FS of every regular file
// (ReadTarGz). Every error is a *FetchError. In order:
//
//   - a.URL must parse, be http or https and have a host: else RefuseNotHTTP;
//   - its host (and port) must be allowed (FluxNamespace, AllowedHosts):
//     else RefuseHostNotAllowed;
//   - a.Digest must be sha256, sha384 or sha512 in lowercase hex of the
//     right length: else RefuseNoDigest (an artifact without a digest is
//     never downloaded);
//   - then, and only then, a GET of the URL (host:port replaced by
//     SourceHost when set; any userinfo dropped), through the client built
//     on the first Fetch: no proxy, the dial-time address guard
//     (RefuseAddress), no redirect followed (RefuseRedirect), Timeout;
//     a network error or the context's end is FetchFailed;
//   - the status must be 200: else FetchFailed (the body is not read);
//   - at most Limits.Compressed bytes are read (a larger Content-Length, or
//     a longer body, is FetchLimit);
//   - the digest must match: else FetchFailed;
//   - ReadTarGz with ctx and the Limits.
//
// The downloaded tarball is zeroed before Fetch returns, on every path.
// The caller owns the FS and calls Wipe once done with it.
func (f *Fetcher) Fetch(ctx context.Context, a flux.Artifact) (build.FS, error) {
	u, dg, ferr := f.check(a)
	if ferr != nil {
		return nil, ferr
	}
	lim := f.Limits.withDefaults()

	target := *u
	target.User = nil
	if f.SourceHost != "" {
		target.Host = f.SourceHost
	}
	host := quote(target.Host, 100)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, failed("cannot build the request to host %s", host)
	}
	// Name the agent in the artifact server's logs (kustomize-controller's
	// requests carry Go's default).
	req.Header.Set("User-Agent", UserAgent)
	resp, err := f.client.Do(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		var ae *addressError
		switch {
		case errors.Is(err, errRedirect):
			return nil, refuse(flux.RefuseRedirect, "host %s answered with a redirect (not followed)", host)
		case errors.As(err, &ae):
			return nil, refuse(flux.RefuseAddress, "host %s: %s", host, ae.Error())
		}
		return nil, failed("GET from host %s: %s", host, netDetail(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, failed("HTTP status %d from host %s", resp.StatusCode, host)
	}
	if resp.ContentLength > lim.Compressed {
		return nil, limitErr("compressed size %d bytes is over the limit of %d bytes", resp.ContentLength, lim.Compressed)
	}
	body, err := readBody(resp.Body, resp.ContentLength, lim.Compressed)
	defer clear(body)
	if err != nil {
		return nil, failed("reading the body from host %s: %s", host, netDetail(ctx, err))
	}
	if int64(len(body)) > lim.Compressed {
		return nil, limitErr("compressed size is over the limit of %d bytes", lim.Compressed)
	}
	h := dg.hash()
	h.Write(body)
	if subtle.ConstantTimeCompare(h.Sum(nil), dg.sum) != 1 {
		return nil, failed("%s digest mismatch", dg.algo)
	}
	return ReadTarGz(ctx, body, lim)
}

// readBody reads r up to max+1 bytes (so the caller sees a body over max),
// zeroing every buffer it outgrows; on an error it zeroes what it read and
// returns nil.
func readBody(r io.Reader, size, max int64) ([]byte, error) {
	n := int64(64 << 10)
	if size >= 0 {
		n = size + 1 // room to see the end without growing
	}
	n = min(n, max+1)
	buf := make([]byte, 0, n)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return buf, nil
			}
			nb := make([]byte, len(buf), min(2*int64(cap(buf)), max+1))
			copy(nb, buf)
			clear(buf)
			buf = nb
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			clear(buf)
			return nil, err
		}
	}
}

// netDetail describes a network error in a fixed vocabulary (a net error's
// own text would carry addresses and free text).
func netDetail(ctx context.Context, err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var unkAuth x509.UnknownAuthorityError
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return "context canceled"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "context deadline exceeded"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host not found"
		}
		return "DNS lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &unkAuth):
		return "TLS error"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed early"
	}
	return "network error"
}

// ctxCheckEvery: the inflating reader checks the context at least this often
// (bytes inflated).
const ctxCheckEvery = 64 << 10

// inflateCounter counts every byte the gzip reader yields, fails with
// FetchLimit once more than max were inflated, and checks ctx every
// ctxCheckEvery bytes. Its error sticks.
type inflateCounter struct {
	r         io.Reader
	ctx       context.Context
	n, max    int64
	nextCheck int64
	err       *FetchError
}

func (c *inflateCounter) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.n >= c.nextCheck {
		if err := c.ctx.Err(); err != nil {
			c.err = failed("inflating: %s", contextDetail(err))
			return 0, c.err
		}
		c.nextCheck = c.n + ctxCheckEvery
	}
	// Never more than one byte past the limit, nor past the next check.
	if rem := min(c.max-c.n+1, c.nextCheck-c.n); int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		clear(p[:n])
		c.err = limitErr("inflated size is over the limit of %d bytes", c.max)
		return 0, c.err
	}
	return n, err
}

func contextDetail(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "context deadline exceeded"
	}
	return "context canceled"
}

// cleanPath returns the FS path of a tar entry's name: a leading "./" (any
// number) dropped, path.Clean'ed. ok is false (the entry is skipped) for an
// absolute name ("/..."), an empty name or one that cleans to "." (the
// root), and a name that cleans to ".." or under "../" (outside the root).
func cleanPath(name string) (string, bool) {
	for strings.HasPrefix(name, "./") {
		name = strings.TrimLeft(name[2:], "/")
	}
	if name == "" || strings.HasPrefix(name, "/") {
		return "", false
	}
	p := path.Clean(name)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// sparse says whether a regular file's header is a GNU sparse file in PAX
// form: its holes are not in the stream, so it is skipped (the inflation
// count would not see them).
func sparse(h *tar.Header) bool {
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// ReadTarGz unpacks a gzipped tarball into an FS of every regular file
// (cleaned slash-separated paths relative to the root; see cleanPath),
// within the limits l (zero fields take the defaults). It honours ctx while
// inflating (checked every 64 KiB inflated). Every error is a *FetchError;
// on an error the files read so far are wiped and the FS is nil. It keeps no
// reference to b.
//
// Skipped (not errors): directories, symlinks, hard links, character and
// block devices, FIFOs, PAX global headers and any other non-regular type,
// sparse files (old GNU 'S' type or PAX GNU.sparse records), absolute names
// ("/x"), names that clean to the root, and names outside the root (".." or
// under "../" once cleaned: "a/../../x"). A skipped entry's data still
// passes through the inflation count. A regular file that appears twice:
// the last one wins (as tar extraction does).
//
// Errors: len(b) over l.Compressed, more than l.Inflated bytes inflated
// (counted while inflating, headers and skipped entries included; the kept
// files' total is held to it as well), a regular file over l.File, more
// than l.Entries entries: FetchLimit. Not gzip, a corrupt or truncated gzip
// stream, an empty stream, a bad tar header, a truncated entry, ctx done:
// FetchFailed. Data after the tar's end-of-archive blocks (or after the
// last complete entry) is not read.
func ReadTarGz(ctx context.Context, b []byte, l Limits) (build.FS, error) {
	l = l.withDefaults()
	if int64(len(b)) > l.Compressed {
		return nil, limitErr("compressed size %d bytes is over the limit of %d bytes", len(b), l.Compressed)
	}
	if err := ctx.Err(); err != nil {
		return nil, failed("%s", contextDetail(err))
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, failed("not gzip")
	}
	defer zr.Close()
	cr := &inflateCounter{r: zr, ctx: ctx, max: l.Inflated}
	tr := tar.NewReader(cr)
	fs := build.FS{}
	fail := func(e *FetchError) (build.FS, error) {
		fs.Wipe()
		return nil, e
	}
	var entries int
	var kept int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF && cr.err == nil {
			if entries == 0 && cr.n == 0 {
				return fail(failed("not a tarball (empty stream)"))
			}
			return fs, nil
		}
		if err != nil {
			if cr.err != nil {
				return fail(cr.err)
			}
			return fail(streamErr(err, "entry %d header", entries+1))
		}
		entries++
		if entries > l.Entries {
			return fail(limitErr("more than %d entries", l.Entries))
		}
		if hdr.Typeflag != tar.TypeReg || sparse(hdr) {
			continue
		}
		p, ok := cleanPath(hdr.Name)
		if !ok {
			continue
		}
		if hdr.Size > l.File {
			return fail(limitErr("entry %d (%s): %d bytes, over the per-file limit of %d bytes", entries, quote(p, 200), hdr.Size, l.File))
		}
		if hdr.Size > l.Inflated-kept {
			return fail(limitErr("inflated size is over the limit of %d bytes", l.Inflated))
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			clear(data)
			if cr.err != nil {
				return fail(cr.err)
			}
			return fail(streamErr(err, "entry %d data", entries))
		}
		kept += hdr.Size
		if old, ok := fs[p]; ok {
			clear(old)
		}
		fs[p] = data
	}
}

// streamErr describes an error of the gzip or tar reader, value-free.
func streamErr(err error, format string, args ...any) *FetchError {
	where := fmt.Sprintf(format, args...)
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return failed("truncated stream (%s)", where)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.As(err, &corrupt):
		return failed("corrupt gzip stream (%s)", where)
	}
	return failed("not a valid tarball (%s)", where)
}
