package desired

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
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/build"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// secretMarker is in every test file's content: no error may carry it.
const secretMarker = "hunter2-SECRET-VALUE"

type entry struct {
	name string
	typ  byte // 0: regular
	body string
	link string
}

func reg(name, body string) entry { return entry{name: name, typ: tar.TypeReg, body: body} }

// tarGz builds a gzipped tarball of the entries in memory.
func tarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.link, ModTime: time.Unix(0, 0)}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return gz(t, tb.Bytes())
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rawTarHeader is one 512-byte tar header block of any type flag, for
// entries tar.Writer will not write (PAX records of GNU sparse files).
func rawTarHeader(name string, typ byte, size int64) []byte {
	blk := make([]byte, 512)
	copy(blk[0:100], name)
	copy(blk[100:108], "0000644\x00")
	copy(blk[108:116], "0000000\x00")
	copy(blk[116:124], "0000000\x00")
	copy(blk[124:136], fmt.Sprintf("%011o\x00", size))
	copy(blk[136:148], "00000000000\x00")
	blk[156] = typ
	if typ == tar.TypeGNUSparse {
		copy(blk[257:265], "ustar  \x00") // GNU format, as the old sparse type requires
	} else {
		copy(blk[257:265], "ustar\x0000")
	}
	copy(blk[148:156], "        ")
	sum := 0
	for _, c := range blk {
		sum += int(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return blk
}

func pad512(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

func paxRecord(k, v string) string {
	rec := " " + k + "=" + v + "\n"
	n := len(rec)
	for {
		s := strconv.Itoa(n) + rec
		if len(s) == n {
			return s
		}
		n = len(s)
	}
}

func sha(algo string, b []byte) string {
	switch algo {
	case "sha384":
		s := sha512.Sum384(b)
		return "sha384:" + hex.EncodeToString(s[:])
	case "sha512":
		s := sha512.Sum512(b)
		return "sha512:" + hex.EncodeToString(s[:])
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

var bombs sync.Map

// zerosTarGz builds, streaming (never holding the inflated bytes), a
// gzipped tarball of files entries of size zero bytes each, named by name.
// Cached per key.
func zerosTarGz(t testing.TB, key string, files int, name func(int) string, size int64) []byte {
	t.Helper()
	if b, ok := bombs.Load(key); ok {
		return b.([]byte)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	zero := make([]byte, 1<<20)
	for i := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name(i), Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
			t.Fatal(err)
		}
		for left := size; left > 0; {
			n := min(left, int64(len(zero)))
			if _, err := tw.Write(zero[:n]); err != nil {
				t.Fatal(err)
			}
			left -= n
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	bombs.Store(key, buf.Bytes())
	return buf.Bytes()
}

func oneName(n string) func(int) string { return func(int) string { return n } }

// wantReason asserts err is a *FetchError of the reason, value-free.
func wantReason(t testing.TB, err error, reason string) *FetchError {
	t.Helper()
	var fe *FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T), want a *FetchError %q", err, err, reason)
	}
	if fe.Reason != reason {
		t.Fatalf("reason %q (%v), want %q", fe.Reason, err, reason)
	}
	if strings.Contains(err.Error(), secretMarker) {
		t.Fatalf("error carries file content: %v", err)
	}
	return fe
}

// server serves body at every path and counts its requests.
type server struct {
	*httptest.Server
	requests atomic.Int64
	hosts    chan string
}

func serve(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{hosts: make(chan string, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		select {
		case s.hosts <- r.Host:
		default:
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func serveBytes(t *testing.T, body []byte) *server {
	return serve(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
}

func (s *server) hostPort() string { return strings.TrimPrefix(s.URL, "http://") }

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// goodFiles: several extensions, a .env, a file without extension, nested
// directories.
var goodFiles = map[string]string{
	"kustomization.yaml":         "resources: [base]\n",
	"base/app.yml":               "kind: ConfigMap\n",
	"base/cfg.json":              `{"kind":"Secret"}`,
	"base/secrets/app.env":       "TOKEN=" + secretMarker + "\n",
	"base/secrets/.env":          "A=" + secretMarker + "\n",
	"base/certs/tls.crt":         "-----BEGIN CERTIFICATE-----\n" + secretMarker,
	"conf/app.properties":        "k=" + secretMarker,
	"README":                     "no extension",
	"deep/a/b/c/d/Kustomization": "resources: []\n",
	"empty.yaml":                 "",
}

func goodTarball(t testing.TB) []byte {
	es := []entry{{name: "base/", typ: tar.TypeDir}, {name: "./deep/a/b/", typ: tar.TypeDir}}
	for _, n := range sortedKeys(goodFiles) {
		name := n
		if n == "README" {
			name = "./README" // a leading ./ is dropped
		}
		es = append(es, reg(name, goodFiles[n]))
	}
	return tarGz(t, es...)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func asStrings(fs build.FS) map[string]string {
	out := map[string]string{}
	for k, v := range fs {
		out[k] = string(v)
	}
	return out
}

func TestFetchRoundTrip(t *testing.T) {
	tgz := goodTarball(t)
	srv := serveBytes(t, tgz)
	for _, algo := range []string{"sha256", "sha384", "sha512"} {
		t.Run(algo, func(t *testing.T) {
			f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}
			fs, err := f.Fetch(context.Background(), flux.Artifact{URL: srv.URL + "/gitrepository/ns/repo/abc.tar.gz", Digest: sha(algo, tgz)})
			if err != nil {
				t.Fatal(err)
			}
			if got := asStrings(fs); !reflect.DeepEqual(got, goodFiles) {
				t.Fatalf("FS = %v\nwant %v", got, goodFiles)
			}
		})
	}
}

// rewriteTransport sends every request to the test server, recording the
// host the request was made for.
type rewriteTransport struct {
	to    string
	hosts []string
	mu    sync.Mutex
}

func (rt *rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.hosts = append(rt.hosts, r.URL.Host)
	rt.mu.Unlock()
	r2 := r.Clone(r.Context())
	r2.URL.Host = rt.to
	return http.DefaultTransport.RoundTrip(r2)
}

func TestFetchHostAllowlist(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x: 1\n"))
	srv := serveBytes(t, tgz)
	_, port, _ := net.SplitHostPort(srv.hostPort())
	d := sha("sha256", tgz)
	for _, tc := range []struct {
		name   string
		f      *Fetcher
		url    string
		reason string // "" = fetched
	}{
		{"test server without AllowedHosts", &Fetcher{AllowedCIDRs: loopback}, srv.URL + "/a.tar.gz", flux.RefuseHostNotAllowed},
		{"AllowedHosts host", &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}, srv.URL + "/a.tar.gz", ""},
		{"AllowedHosts host:port", &Fetcher{AllowedHosts: []string{"127.0.0.1:" + port}, AllowedCIDRs: loopback}, srv.URL + "/a.tar.gz", ""},
		{"AllowedHosts other port", &Fetcher{AllowedHosts: []string{"127.0.0.1:1"}, AllowedCIDRs: loopback}, srv.URL + "/a.tar.gz", flux.RefuseHostNotAllowed},
		{"AllowedHosts other host", &Fetcher{AllowedHosts: []string{"127.0.0.2"}, AllowedCIDRs: loopback}, srv.URL + "/a.tar.gz", flux.RefuseHostNotAllowed},
		{"default source-controller FQDN, trailing dot", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-controller.flux-system.svc.cluster.local./gitrepository/a/b/c.tar.gz", ""},
		{"default source-controller short, upper case, a port", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://Source-Controller.FLUX-SYSTEM:9090/c.tar.gz", ""},
		{"default source-watcher .svc", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-watcher.flux-system.svc/externalartifact/a/b/c.tar.gz", ""},
		{"FluxNamespace", &Fetcher{FluxNamespace: "flux", SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-controller.flux.svc/c.tar.gz", ""},
		{"FluxNamespace replaces the default", &Fetcher{FluxNamespace: "flux", SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-controller.flux-system.svc/c.tar.gz", flux.RefuseHostNotAllowed},
		{"suffix trick", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-controller.flux-system.svc.evil.example/c.tar.gz", flux.RefuseHostNotAllowed},
		{"suffix trick after cluster.local", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-controller.flux-system.svc.cluster.local.evil/c.tar.gz", flux.RefuseHostNotAllowed},
		{"prefix trick", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://evil-source-controller.flux-system/c.tar.gz", flux.RefuseHostNotAllowed},
		{"other service of flux-system", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://notification-controller.flux-system/c.tar.gz", flux.RefuseHostNotAllowed},
		{"userinfo host trick", &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback},
			"http://source-controller.flux-system@169.254.169.254/c.tar.gz", flux.RefuseHostNotAllowed},
		{"ftp", &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}, "ftp://127.0.0.1/a.tar.gz", flux.RefuseNotHTTP},
		{"file", &Fetcher{}, "file:///etc/passwd", flux.RefuseNotHTTP},
		{"no host", &Fetcher{}, "http:///a.tar.gz", flux.RefuseNotHTTP},
		{"opaque", &Fetcher{}, "http:source-controller.flux-system", flux.RefuseNotHTTP},
		{"unparsable", &Fetcher{}, "http://[::1/a", flux.RefuseNotHTTP},
		{"empty", &Fetcher{}, "", flux.RefuseNotHTTP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.requests.Load()
			fs, err := tc.f.Fetch(context.Background(), flux.Artifact{URL: tc.url, Digest: d})
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if string(fs["a.yaml"]) != "x: 1\n" {
					t.Fatalf("FS = %v", asStrings(fs))
				}
				if got := srv.requests.Load() - before; got != 1 {
					t.Fatalf("server saw %d requests, want 1", got)
				}
				return
			}
			fe := wantReason(t, err, tc.reason)
			if !fe.Refused() {
				t.Fatalf("%v: Refused() = false", err)
			}
			if got := srv.requests.Load() - before; got != 0 {
				t.Fatalf("server saw %d requests, want 0", got)
			}
		})
	}
}

func TestFetchDefaultHostsThroughTransport(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x: 1\n"))
	srv := serveBytes(t, tgz)
	rt := &rewriteTransport{to: srv.hostPort()}
	f := &Fetcher{Transport: rt} // no AllowedCIDRs: the guard is the transport's business
	for _, u := range []string{
		"http://source-controller.flux-system.svc.cluster.local./gitrepository/a/b/c.tar.gz",
		"http://source-watcher.flux-system/externalartifact/a/b/c.tar.gz",
	} {
		if _, err := f.Fetch(context.Background(), flux.Artifact{URL: u, Digest: sha("sha256", tgz)}); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	_, err := f.Fetch(context.Background(), flux.Artifact{URL: "http://source-controller.flux-system.svc.evil.example/c.tar.gz", Digest: sha("sha256", tgz)})
	_ = wantReason(t, err, flux.RefuseHostNotAllowed)
	want := []string{"source-controller.flux-system.svc.cluster.local.", "source-watcher.flux-system"}
	if !reflect.DeepEqual(rt.hosts, want) {
		t.Fatalf("transport saw hosts %q, want %q", rt.hosts, want)
	}
}

func TestFetchSourceHost(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x: 1\n"))
	var gotPath, gotAuth string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		_, _ = w.Write(tgz)
	})
	f := &Fetcher{SourceHost: srv.hostPort(), AllowedCIDRs: loopback}
	_, err := f.Fetch(context.Background(), flux.Artifact{
		URL: "http://user:pw@source-controller.flux-system.svc.cluster.local:80/gitrepository/ns/name/rev.tar.gz", Digest: sha("sha256", tgz)})
	if err != nil {
		t.Fatal(err)
	}
	if host := <-srv.hosts; host != srv.hostPort() {
		t.Fatalf("request Host %q, want SourceHost %q", host, srv.hostPort())
	}
	if gotPath != "/gitrepository/ns/name/rev.tar.gz" {
		t.Fatalf("path %q", gotPath)
	}
	if gotAuth != "" {
		t.Fatalf("the URL's userinfo was sent: %q", gotAuth)
	}
}

func TestFetchRedirectRefused(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x: 1\n"))
	target := serveBytes(t, tgz)
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			redir := serve(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/a.tar.gz", code)
			})
			f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}
			_, err := f.Fetch(context.Background(), flux.Artifact{URL: redir.URL + "/a.tar.gz", Digest: sha("sha256", tgz)})
			_ = wantReason(t, err, flux.RefuseRedirect)
			if n := redir.requests.Load(); n != 1 {
				t.Fatalf("redirecting server saw %d requests", n)
			}
			if n := target.requests.Load(); n != 0 {
				t.Fatalf("redirect target saw %d requests, want 0", n)
			}
		})
	}
}

func TestFetchDialGuard(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x: 1\n"))
	srv := serveBytes(t, tgz)
	d := sha("sha256", tgz)
	for _, tc := range []struct {
		name   string
		cidrs  []netip.Prefix
		reason string
	}{
		{"loopback refused", nil, flux.RefuseAddress},
		{"loopback, AllowedCIDRs elsewhere", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, flux.RefuseAddress},
		{"loopback allowed by AllowedCIDRs", loopback, ""},
		{"one address allowed", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.requests.Load()
			f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: tc.cidrs}
			_, err := f.Fetch(context.Background(), flux.Artifact{URL: srv.URL + "/a.tar.gz", Digest: d})
			n := srv.requests.Load() - before
			if tc.reason == "" {
				if err != nil || n != 1 {
					t.Fatalf("err %v, %d requests; want a fetch", err, n)
				}
				return
			}
			fe := wantReason(t, err, tc.reason)
			if !strings.Contains(fe.Detail, "loopback") {
				t.Fatalf("detail %q does not say loopback", fe.Detail)
			}
			if n != 0 {
				t.Fatalf("server saw %d requests, want 0", n)
			}
		})
	}
	// Names and addresses refused before a connection is opened (Control
	// runs before connect: no network needed).
	for _, h := range []string{"169.254.169.254", "169.254.170.2", "100.100.100.200", "0.0.0.0", "224.0.0.1", "localhost"} {
		t.Run(h, func(t *testing.T) {
			f := &Fetcher{AllowedHosts: []string{h}, Timeout: 5 * time.Second}
			_, err := f.Fetch(context.Background(), flux.Artifact{URL: "http://" + h + ":" + "8080/a.tar.gz", Digest: d})
			if h == "localhost" && ReasonOf(err) == flux.FetchFailed {
				t.Skipf("localhost does not resolve here: %v", err)
			}
			_ = wantReason(t, err, flux.RefuseAddress)
		})
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		f := &Fetcher{AllowedHosts: []string{"::1", "fe80::1"}}
		for _, u := range []string{"http://[::1]:8080/a.tar.gz", "http://[fe80::1]:8080/a.tar.gz"} {
			_, err := f.Fetch(context.Background(), flux.Artifact{URL: u, Digest: d})
			_ = wantReason(t, err, flux.RefuseAddress)
		}
	}
}

func TestAddressClass(t *testing.T) {
	allowed := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00:ec2::/64")}
	for _, tc := range []struct {
		addr       string
		class      string // with no AllowedCIDRs
		allowedToo bool   // still refused with allowed
	}{
		{"169.254.169.254", "metadata", true},
		{"169.254.170.2", "metadata", true},
		{"100.100.100.200", "metadata", true},
		{"fd00:ec2::254", "metadata", false},
		{"169.254.1.1", "link-local", true},
		{"fe80::1", "link-local", true},
		{"127.0.0.1", "loopback", false},
		{"127.1.2.3", "loopback", false},
		{"::1", "loopback", true},
		{"::ffff:127.0.0.1", "loopback", false},
		{"::ffff:169.254.169.254", "metadata", true},
		{"0.0.0.0", "unspecified", true},
		{"0.1.2.3", "unspecified", true},
		{"::", "unspecified", true},
		{"224.0.0.1", "multicast", true},
		{"239.1.1.1", "multicast", true},
		{"ff02::1", "multicast", true},
		{"ff01::1", "multicast", true},
		{"ff0e::1", "multicast", true},
		{"10.0.0.1", "", false},
		{"192.168.1.1", "", false},
		{"172.16.0.1", "", false},
		{"100.100.100.201", "", false},
		{"8.8.8.8", "", false},
		{"2001:db8::1", "", false},
		{"fd00::1", "", false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := addressClass(a, nil); got != tc.class {
			t.Errorf("%s: class %q, want %q", tc.addr, got, tc.class)
		}
		if got := addressClass(a, allowed) != ""; got != tc.allowedToo {
			t.Errorf("%s with AllowedCIDRs %v: refused %v, want %v", tc.addr, allowed, got, tc.allowedToo)
		}
	}
	ctl := dialControl(nil)
	for addr, refused := range map[string]bool{"169.254.169.254:80": true, "[fe80::1]:80": true, "[::1]:443": true,
		"10.0.0.1:80": false, "[2001:db8::1]:80": false, "not-an-address": true} {
		err := ctl("tcp", addr, nil)
		var ae *addressError
		if refused != errors.As(err, &ae) {
			t.Errorf("Control(%s) = %v, want refused %v", addr, err, refused)
		}
	}
}

func TestFetchDigest(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x: "+secretMarker+"\n"))
	srv := serveBytes(t, tgz)
	good := sha("sha256", tgz)
	other := sha("sha256", []byte("other"))
	hexPart := strings.TrimPrefix(good, "sha256:")
	for _, tc := range []struct {
		name, digest, reason string
		requests             int64
	}{
		{"missing", "", flux.RefuseNoDigest, 0},
		{"no algorithm", hexPart, flux.RefuseNoDigest, 0},
		{"md5", "md5:" + hexPart[:32], flux.RefuseNoDigest, 0},
		{"sha1", "sha1:" + hexPart[:40], flux.RefuseNoDigest, 0},
		{"upper-case algorithm", "SHA256:" + hexPart, flux.RefuseNoDigest, 0},
		{"upper-case hex", "sha256:" + strings.ToUpper(hexPart), flux.RefuseNoDigest, 0},
		{"short", "sha256:" + hexPart[:63], flux.RefuseNoDigest, 0},
		{"long", "sha256:" + hexPart + "0", flux.RefuseNoDigest, 0},
		{"sha512 length for sha256", "sha256:" + strings.TrimPrefix(sha("sha512", tgz), "sha512:"), flux.RefuseNoDigest, 0},
		{"not hex", "sha256:" + strings.Repeat("zz", 32), flux.RefuseNoDigest, 0},
		{"wrong digest", other, flux.FetchFailed, 1},
		{"wrong algorithm's digest", "sha384:" + strings.TrimPrefix(sha("sha384", []byte("x")), "sha384:"), flux.FetchFailed, 1},
		{"good", good, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.requests.Load()
			f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}
			_, err := f.Fetch(context.Background(), flux.Artifact{URL: srv.URL + "/a.tar.gz", Digest: tc.digest})
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				fe := wantReason(t, err, tc.reason)
				if tc.reason == flux.FetchFailed && !strings.Contains(fe.Detail, "digest mismatch") {
					t.Fatalf("detail %q", fe.Detail)
				}
			}
			if n := srv.requests.Load() - before; n != tc.requests {
				t.Fatalf("server saw %d requests, want %d", n, tc.requests)
			}
		})
	}
}

func TestFetchHTTPStatusAndSize(t *testing.T) {
	tgz := goodTarball(t)
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		limits  Limits
		reason  string
		detail  string
	}{
		{"404", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, secretMarker, http.StatusNotFound)
		}, Limits{}, flux.FetchFailed, "HTTP status 404 from host"},
		{"500", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, secretMarker, http.StatusInternalServerError)
		}, Limits{}, flux.FetchFailed, "HTTP status 500 from host"},
		{"203 with the artifact", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNonAuthoritativeInfo)
			_, _ = w.Write(tgz)
		}, Limits{}, flux.FetchFailed, "HTTP status 203 from host"},
		{"Content-Length over Compressed", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(tgz)))
			_, _ = w.Write(tgz)
		}, Limits{Compressed: int64(len(tgz)) - 1}, flux.FetchLimit, fmt.Sprintf("compressed size %d bytes is over the limit of %d bytes", len(tgz), len(tgz)-1)},
		{"chunked body over Compressed", func(w http.ResponseWriter, _ *http.Request) {
			for _, c := range tgz {
				_, _ = w.Write([]byte{c})
				w.(http.Flusher).Flush()
			}
		}, Limits{Compressed: int64(len(tgz)) - 1}, flux.FetchLimit, fmt.Sprintf("compressed size is over the limit of %d bytes", len(tgz)-1)},
		{"chunked body at Compressed", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(tgz[:10])
			w.(http.Flusher).Flush()
			_, _ = w.Write(tgz[10:])
		}, Limits{Compressed: int64(len(tgz))}, "", ""},
		{"body shorter than Content-Length", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(tgz)))
			_, _ = w.Write(tgz[:len(tgz)/2])
		}, Limits{}, flux.FetchFailed, "connection closed early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.handler)
			f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback, Limits: tc.limits}
			fs, err := f.Fetch(context.Background(), flux.Artifact{URL: srv.URL + "/a.tar.gz", Digest: sha("sha256", tgz)})
			if tc.reason == "" {
				if err != nil || !reflect.DeepEqual(asStrings(fs), goodFiles) {
					t.Fatalf("err %v, FS %v", err, asStrings(fs))
				}
				return
			}
			fe := wantReason(t, err, tc.reason)
			if !strings.Contains(fe.Detail, tc.detail) {
				t.Fatalf("detail %q, want %q", fe.Detail, tc.detail)
			}
			if fs != nil {
				t.Fatalf("FS %v with an error", fs)
			}
		})
	}
}

func TestReadBody(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 30000) // 300 kB: grows past 64 KiB
	for _, tc := range []struct {
		name    string
		size    int64
		max     int64
		wantLen int
	}{
		{"unknown length", -1, 1 << 20, len(data)},
		{"known length", int64(len(data)), 1 << 20, len(data)},
		{"wrong known length", 10, 1 << 20, len(data)},
		{"at max", -1, int64(len(data)), len(data)},
		{"over max", -1, 1000, 1001},
	} {
		got, err := readBody(io.LimitReader(bytes.NewReader(data), int64(len(data))), tc.size, tc.max)
		if err != nil || len(got) != tc.wantLen || !bytes.Equal(got, data[:tc.wantLen]) {
			t.Errorf("%s: %d bytes, %v; want %d", tc.name, len(got), err, tc.wantLen)
		}
	}
	if got, err := readBody(io.MultiReader(bytes.NewReader(data[:100]), iotest{}), -1, 1<<20); got != nil || err == nil {
		t.Errorf("a read error: %d bytes, %v", len(got), err)
	}
}

type iotest struct{}

func (iotest) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestReadTarGzBadStreams(t *testing.T) {
	tgz := goodTarball(t)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: "a.yaml", Typeflag: tar.TypeReg, Size: 2000, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bytes.Repeat([]byte(secretMarker), 100)[:2000]); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	tarball := tb.Bytes()
	corrupt := bytes.Clone(tgz)
	for i := 20; i < len(corrupt)-20; i += 7 {
		corrupt[i] ^= 0x5a
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		detail string
	}{
		{"empty", nil, "not gzip"},
		{"not gzip", []byte("PK\x03\x04 a zip, " + secretMarker), "not gzip"},
		{"plain tar", tarball, "not gzip"},
		{"gzip header only", gz(t, tarball)[:10], "truncated"},
		{"truncated gzip", gz(t, tarball)[:len(gz(t, tarball))/2], "truncated"},
		{"truncated good artifact", tgz[:len(tgz)-40], "truncated"},
		{"truncated tar in whole gzip", gz(t, tarball[:1000]), "truncated"},
		{"corrupt deflate", corrupt, ""},
		{"gzip of text", gz(t, bytes.Repeat([]byte(secretMarker+" not a tar\n"), 100)), "not a valid tarball"},
		{"gzip of short text", gz(t, []byte(secretMarker)), "truncated"},
		{"gzip of nothing", gz(t, nil), "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := ReadTarGz(context.Background(), tc.b, Limits{})
			fe := wantReason(t, err, flux.FetchFailed)
			if !strings.Contains(fe.Detail, tc.detail) {
				t.Fatalf("detail %q, want it to contain %q", fe.Detail, tc.detail)
			}
			if fs != nil {
				t.Fatalf("FS %v with an error", fs)
			}
		})
	}
	// Through Fetch: the digest matches, the content is not a tarball.
	notGz := []byte("not gzip " + secretMarker)
	srv := serveBytes(t, notGz)
	f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}
	_, err := f.Fetch(context.Background(), flux.Artifact{URL: srv.URL + "/a.tar.gz", Digest: sha("sha256", notGz)})
	_ = wantReason(t, err, flux.FetchFailed)
}

func TestReadTarGzTrailingData(t *testing.T) {
	tgz := tarGz(t, reg("a.yaml", "x\n"))
	// Garbage after the gzip stream.
	fs, err := ReadTarGz(context.Background(), append(bytes.Clone(tgz), "garbage after the gzip stream"...), Limits{})
	if err != nil || string(fs["a.yaml"]) != "x\n" {
		t.Fatalf("garbage after gzip: %v, %v", err, asStrings(fs))
	}
	// Garbage after the tar's end, inside the gzip stream.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: "a.yaml", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	tb.WriteString("garbage after the end-of-archive blocks")
	fs, err = ReadTarGz(context.Background(), gz(t, tb.Bytes()), Limits{})
	if err != nil || string(fs["a.yaml"]) != "x\n" {
		t.Fatalf("garbage after tar: %v, %v", err, asStrings(fs))
	}
}

func TestReadTarGzPaths(t *testing.T) {
	tgz := tarGz(t,
		reg("../../etc/passwd", secretMarker),
		reg("/abs", secretMarker),
		reg("/etc/shadow", secretMarker),
		reg("a/../../escape", secretMarker),
		reg("..", secretMarker),
		reg("./ok.yaml", "ok"),
		reg("././/dot.yaml", "dot"),
		reg("a/./b/../c.yaml", "c"),
		reg("dir//x.yaml", "x"),
		reg("dup.yaml", "first"),
		entry{name: "link.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"},
		entry{name: "rel-link.yaml", typ: tar.TypeSymlink, link: "ok.yaml"},
		entry{name: "hard.yaml", typ: tar.TypeLink, link: "ok.yaml"},
		entry{name: "dev", typ: tar.TypeChar},
		entry{name: "blk", typ: tar.TypeBlock},
		entry{name: "fifo", typ: tar.TypeFifo},
		entry{name: "sub/", typ: tar.TypeDir},
		reg("dup.yaml", "second"),
	)
	fs, err := ReadTarGz(context.Background(), tgz, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ok.yaml": "ok", "dot.yaml": "dot", "a/c.yaml": "c", "dir/x.yaml": "x", "dup.yaml": "second"}
	if got := asStrings(fs); !reflect.DeepEqual(got, want) {
		t.Fatalf("FS = %v\nwant %v", got, want)
	}
}

func TestCleanPath(t *testing.T) {
	for name, want := range map[string]string{
		"a.yaml": "a.yaml", "./a.yaml": "a.yaml", "././a": "a", ".//a": "a", "a//b/./c": "a/b/c", "a/b/../c": "a/c",
		"a/": "a", "a/..": "", "./": "", ".": "", "": "", "..": "", "../x": "", "./../x": "", "a/../../x": "",
		"/abs": "", "//abs": "", "/": "", "..x": "..x", "x..": "x..", ".env": ".env",
	} {
		got, ok := cleanPath(name)
		if got != want || ok != (want != "") {
			t.Errorf("cleanPath(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestReadTarGzSparseSkipped(t *testing.T) {
	// A PAX header declaring a GNU sparse file: 5 bytes of data, 1 MiB
	// logical (holes read as zeros without being inflated).
	var raw []byte
	pax := paxRecord("GNU.sparse.map", "0,5") + paxRecord("GNU.sparse.numblocks", "1") + paxRecord("GNU.sparse.size", "1048576")
	raw = append(raw, rawTarHeader("PaxHeaders/sparse.yaml", tar.TypeXHeader, int64(len(pax)))...)
	raw = append(raw, pad512([]byte(pax))...)
	raw = append(raw, rawTarHeader("sparse.yaml", tar.TypeReg, 5)...)
	raw = append(raw, pad512([]byte("hello"))...)
	raw = append(raw, rawTarHeader("old-sparse.yaml", tar.TypeGNUSparse, 0)...)
	raw = append(raw, rawTarHeader("plain.yaml", tar.TypeReg, 2)...)
	raw = append(raw, pad512([]byte("ok"))...)
	raw = append(raw, make([]byte, 1024)...)
	// The sparse entry is really read as 1 MiB by archive/tar.
	tr := tar.NewReader(bytes.NewReader(raw))
	if h, err := tr.Next(); err != nil || h.Size != 1<<20 || h.Typeflag != tar.TypeReg {
		t.Fatalf("the crafted sparse entry: %v, %+v", err, h)
	}
	fs, err := ReadTarGz(context.Background(), gz(t, raw), Limits{Inflated: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := asStrings(fs); !reflect.DeepEqual(got, map[string]string{"plain.yaml": "ok"}) {
		t.Fatalf("FS = %v", got)
	}
}

func TestReadTarGzLimits(t *testing.T) {
	many := func(n int) []byte {
		es := make([]entry, n)
		for i := range es {
			if i%2 == 0 {
				es[i] = entry{name: fmt.Sprintf("d%d/", i), typ: tar.TypeDir}
			} else {
				es[i] = reg(fmt.Sprintf("f%d.yaml", i), "x")
			}
		}
		return tarGz(t, es...)
	}
	big := strings.Repeat(secretMarker, 1024/len(secretMarker)+1)[:1024]
	for _, tc := range []struct {
		name   string
		b      []byte
		l      Limits
		detail string // "" = no error
	}{
		{"file at the limit", tarGz(t, reg("a.env", big)), Limits{File: 1024}, ""},
		{"file over the limit", tarGz(t, reg("x.yaml", "x"), reg("./secrets/a.env", big+"!")), Limits{File: 1024},
			`entry 2 ("secrets/a.env"): 1025 bytes, over the per-file limit of 1024`},
		{"skipped file over the file limit", tarGz(t, reg("../a.env", big+"!")), Limits{File: 1024}, ""},
		{"entries at the limit", many(10), Limits{Entries: 10}, ""},
		{"entries over the limit", many(11), Limits{Entries: 10}, "more than 10 entries"},
		{"compressed over the limit", many(11), Limits{Compressed: 10}, "compressed size"},
		{"kept total over Inflated", tarGz(t, reg("a", big), reg("b", big), reg("c", big)), Limits{Inflated: 3000}, "inflated size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := ReadTarGz(context.Background(), tc.b, tc.l)
			if tc.detail == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkLimits(t, fs, tc.l.withDefaults())
				return
			}
			fe := wantReason(t, err, flux.FetchLimit)
			if !strings.Contains(fe.Detail, tc.detail) {
				t.Fatalf("detail %q, want %q", fe.Detail, tc.detail)
			}
			if fs != nil {
				t.Fatal("FS with an error")
			}
		})
	}
}

// checkLimits asserts an FS respects l and holds only clean relative paths.
func checkLimits(t testing.TB, fs build.FS, l Limits) {
	t.Helper()
	if len(fs) > l.Entries {
		t.Fatalf("%d files, limit %d entries", len(fs), l.Entries)
	}
	var total int64
	for p, b := range fs {
		if int64(len(b)) > l.File {
			t.Fatalf("file %q of %d bytes, limit %d", p, len(b), l.File)
		}
		total += int64(len(b))
		if p == "" || p != path.Clean(p) || path.IsAbs(p) || p == "." || p == ".." || strings.HasPrefix(p, "../") {
			t.Fatalf("path %q is not clean and relative", p)
		}
	}
	if total > l.Inflated {
		t.Fatalf("%d bytes of files, limit %d inflated", total, l.Inflated)
	}
}

func TestReadTarGzBomb(t *testing.T) {
	const size = 200 << 20
	l := Limits{Inflated: 8 << 20, File: 8 << 20}
	for _, tc := range []struct {
		name   string
		b      func() []byte
		detail string
	}{
		{"one 200 MiB file", func() []byte { return zerosTarGz(t, "one", 1, oneName("bomb.yaml"), size) }, "per-file limit"},
		{"200 MiB in a skipped entry", func() []byte { return zerosTarGz(t, "skipped", 1, oneName("../bomb.yaml"), size) }, "inflated size"},
		{"200 files of 1 MiB", func() []byte {
			return zerosTarGz(t, "many", 200, func(i int) string { return fmt.Sprintf("f%03d.env", i) }, 1<<20)
		}, "inflated size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			b := tc.b()
			built := time.Since(start)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			start = time.Now()
			fs, err := ReadTarGz(context.Background(), b, l)
			took := time.Since(start)
			runtime.ReadMemStats(&m1)
			fe := wantReason(t, err, flux.FetchLimit)
			if !strings.Contains(fe.Detail, tc.detail) || fs != nil {
				t.Fatalf("detail %q, want %q", fe.Detail, tc.detail)
			}
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%d bytes compressed (built in %v), refused in %v, %d bytes allocated, heap %d -> %d",
				len(b), built.Round(time.Millisecond), took.Round(time.Millisecond), alloc, m0.HeapAlloc, m1.HeapAlloc)
			if alloc > uint64(2*l.Inflated) {
				t.Fatalf("allocated %d bytes reading the bomb, want under %d", alloc, 2*l.Inflated)
			}
			if int64(m1.HeapAlloc)-int64(m0.HeapAlloc) > 2*l.Inflated {
				t.Fatalf("heap grew from %d to %d", m0.HeapAlloc, m1.HeapAlloc)
			}
		})
	}
	// Through Fetch.
	b := zerosTarGz(t, "skipped", 1, oneName("../bomb.yaml"), size)
	srv := serveBytes(t, b)
	f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback, Limits: l}
	_, err := f.Fetch(context.Background(), flux.Artifact{URL: srv.URL + "/a.tar.gz", Digest: sha("sha256", b)})
	_ = wantReason(t, err, flux.FetchLimit)
}

// cancelAfter is a context whose Err is nil for its first n calls, then
// Canceled: a cancellation at a known point of the inflation.
type cancelAfter struct {
	context.Context
	n, calls atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.n.Load() {
		return context.Canceled
	}
	return nil
}

func TestReadTarGzContext(t *testing.T) {
	b := zerosTarGz(t, "skipped", 1, oneName("../bomb.yaml"), 200<<20)
	l := Limits{Inflated: 1 << 30}

	// Cancelled after 3 checks: mid-inflate, at about 3 x 64 KiB of 200 MiB.
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(3)
	start := time.Now()
	_, err := ReadTarGz(ctx, b, l)
	took := time.Since(start)
	fe := wantReason(t, err, flux.FetchFailed)
	if fe.Detail != "inflating: context canceled" {
		t.Fatalf("detail %q", fe.Detail)
	}
	if ctx.calls.Load() != 4 {
		t.Fatalf("ctx.Err called %d times, want 4", ctx.calls.Load())
	}
	if took > time.Second {
		t.Fatalf("took %v after the cancellation", took)
	}

	// The whole bomb inflates under a large enough limit, checking ctx
	// about every 64 KiB.
	ctx = &cancelAfter{Context: context.Background()}
	ctx.n.Store(1 << 40)
	if _, err := ReadTarGz(ctx, b, l); err != nil {
		t.Fatal(err)
	}
	if c := ctx.calls.Load(); c < (200<<20)/ctxCheckEvery || c > (200<<20)/ctxCheckEvery+16 {
		t.Fatalf("ctx.Err called %d times for 200 MiB", c)
	}

	// A real cancellation while inflating (skipped if this machine inflates
	// the 200 MiB before the timer fires).
	rctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start = time.Now()
	_, err = ReadTarGz(rctx, b, l)
	took = time.Since(start)
	if err == nil {
		t.Logf("inflated 200 MiB in %v, before the cancellation", took)
	} else {
		_ = wantReason(t, err, flux.FetchFailed)
		if took > time.Second {
			t.Fatalf("cancellation honoured after %v", took)
		}
		t.Logf("cancelled after %v", took)
	}

	// Already done.
	rctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = ReadTarGz(rctx, goodTarball(t), Limits{})
	_ = wantReason(t, err, flux.FetchFailed)
}

func TestFetchContextAndTimeout(t *testing.T) {
	tgz := goodTarball(t)
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(tgz)))
		_, _ = w.Write(tgz[:100])
		w.(http.Flusher).Flush()
		<-release
	})
	t.Cleanup(func() { close(release) }) // before the server's Close (cleanups run last first)
	for _, tc := range []struct {
		name   string
		f      *Fetcher
		ctx    func() (context.Context, context.CancelFunc)
		detail string
	}{
		{"cancelled", &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, "context canceled"},
		{"Fetcher.Timeout", &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback, Timeout: 100 * time.Millisecond},
			func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			_, err := tc.f.Fetch(ctx, flux.Artifact{URL: srv.URL + "/a.tar.gz", Digest: sha("sha256", tgz)})
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("returned after %v", took)
			}
			fe := wantReason(t, err, flux.FetchFailed)
			if !strings.Contains(fe.Detail, tc.detail) {
				t.Fatalf("detail %q, want %q", fe.Detail, tc.detail)
			}
		})
	}
}

func TestFetchNetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	f := &Fetcher{AllowedHosts: []string{"127.0.0.1"}, AllowedCIDRs: loopback}
	_, err = f.Fetch(context.Background(), flux.Artifact{URL: "http://" + addr + "/a.tar.gz", Digest: sha("sha256", nil)})
	fe := wantReason(t, err, flux.FetchFailed)
	if fe.Detail != fmt.Sprintf("GET from host %q: connection refused", addr) {
		t.Fatalf("detail %q", fe.Detail)
	}
}

func TestWipe(t *testing.T) {
	fs, err := ReadTarGz(context.Background(), goodTarball(t), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	kept := fs["base/secrets/app.env"]
	if !bytes.Contains(kept, []byte(secretMarker)) {
		t.Fatalf("file %q", kept)
	}
	fs.Wipe()
	if len(fs) != 0 {
		t.Fatalf("%d entries after Wipe", len(fs))
	}
	if !bytes.Equal(kept, make([]byte, len(kept))) {
		t.Fatalf("bytes after Wipe: %q", kept)
	}
	build.FS(nil).Wipe() // no panic
}

func TestFetchErrorAPI(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		refused bool
		prefix  string
	}{
		{flux.RefuseNotHTTP, true, "artifact fetch refused (not_http): d"},
		{flux.RefuseHostNotAllowed, true, "artifact fetch refused (host_not_allowed): d"},
		{flux.RefuseAddress, true, "artifact fetch refused (address_not_allowed): d"},
		{flux.RefuseRedirect, true, "artifact fetch refused (redirect): d"},
		{flux.RefuseNoDigest, true, "artifact fetch refused (no_digest): d"},
		{flux.FetchLimit, false, "artifact over a limit: d"},
		{flux.FetchFailed, false, "artifact fetch failed: d"},
	} {
		e := &FetchError{Reason: tc.reason, Detail: "d"}
		if e.Refused() != tc.refused || e.Error() != tc.prefix {
			t.Errorf("%s: Refused %v, Error %q", tc.reason, e.Refused(), e.Error())
		}
		if got := ReasonOf(fmt.Errorf("wrapped: %w", e)); got != tc.reason {
			t.Errorf("ReasonOf(wrapped %s) = %q", tc.reason, got)
		}
	}
	if got := ReasonOf(errors.New("other")); got != flux.FetchFailed {
		t.Errorf("ReasonOf(other) = %q", got)
	}
	if got := ReasonOf(nil); got != "" {
		t.Errorf("ReasonOf(nil) = %q", got)
	}
	if got := (&FetchError{Reason: flux.FetchFailed}).Error(); got != "artifact fetch failed" {
		t.Errorf("no detail: %q", got)
	}
	if d := DefaultLimits(); d != (Limits{Compressed: 32 << 20, Inflated: 64 << 20, File: 8 << 20, Entries: 50000}) || (Limits{}).withDefaults() != d {
		t.Errorf("DefaultLimits %+v", d)
	}
}

func TestFetchHostDetailQuoted(t *testing.T) {
	f := &Fetcher{}
	_, err := f.Fetch(context.Background(), flux.Artifact{URL: "http://" + strings.Repeat("a", 300) + ".example/x", Digest: sha("sha256", nil)})
	fe := wantReason(t, err, flux.RefuseHostNotAllowed)
	if len(fe.Detail) > 160 {
		t.Fatalf("detail of %d bytes: %q", len(fe.Detail), fe.Detail)
	}
	// A request URL's path is never put in a detail.
	_, err = (&Fetcher{AllowedHosts: []string{"127.0.0.1"}}).Fetch(context.Background(),
		flux.Artifact{URL: "http://127.0.0.1:1/" + secretMarker, Digest: sha("sha256", nil)})
	_ = wantReason(t, err, flux.RefuseAddress)
}

func FuzzReadTarGz(f *testing.F) {
	good := goodTarball(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(tarGz(f, reg("a.yaml", "x"), entry{name: "l", typ: tar.TypeSymlink, link: "../x"}, reg("../x", "y")))
	// A bomb header: one entry claiming 1 GiB, no data.
	f.Add(gz(f, rawTarHeader("bomb.yaml", tar.TypeReg, 1<<30)))
	f.Add(gz(f, rawTarHeader("../bomb", tar.TypeReg, 1<<30)))
	f.Add(zerosTarGz(f, "fuzz", 1, oneName("z.yaml"), 2<<20))
	f.Add(gz(f, nil))
	f.Add([]byte{})
	l := Limits{Compressed: 1 << 20, Inflated: 1 << 20, File: 64 << 10, Entries: 64}
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := ReadTarGz(context.Background(), b, l)
		if err != nil {
			var fe *FetchError
			if !errors.As(err, &fe) || (fe.Reason != flux.FetchLimit && fe.Reason != flux.FetchFailed) {
				t.Fatalf("error %v (%T)", err, err)
			}
			if fs != nil {
				t.Fatal("FS with an error")
			}
			return
		}
		checkLimits(t, fs, l)
	})
}
