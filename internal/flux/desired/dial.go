package desired

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// The cloud metadata addresses the dial-time guard refuses besides the
// loopback, link-local, unspecified and multicast ranges: AWS/GCP/Azure/
// OpenStack (169.254.169.254), AWS over IPv6 (fd00:ec2::254), Alibaba Cloud
// (100.100.100.200) and the ECS task metadata endpoint (169.254.170.2).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("169.254.170.2"),
}

// thisNetwork is 0.0.0.0/8 ("this network", RFC 791): Linux connects 0.0.0.0
// to the local host, so the whole range counts as unspecified.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// addressClass says why the dial-time guard refuses a (resolved) address, ""
// when it does not. An IPv4-mapped IPv6 address is judged as its IPv4
// address. An address inside one of allowed is never refused (give IPv4
// ranges as IPv4 prefixes).
func addressClass(a netip.Addr, allowed []netip.Prefix) string {
	a = a.Unmap()
	for _, p := range allowed {
		if p.Contains(a) {
			return ""
		}
	}
	for _, m := range metadataAddrs {
		if a == m {
			return "metadata"
		}
	}
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast():
		return "multicast"
	case a.IsUnspecified(), a.Is4() && thisNetwork.Contains(a):
		return "unspecified"
	}
	return ""
}

// addressError is the dial-time guard's refusal: the address and its class,
// no more (the dialer wraps it in a *net.OpError, the client in a
// *url.Error; Fetch finds it with errors.As).
type addressError struct {
	addr  netip.Addr
	class string
}

func (e *addressError) Error() string {
	if !e.addr.IsValid() {
		return "address refused (" + e.class + ")"
	}
	return fmt.Sprintf("address %s refused (%s)", e.addr, e.class)
}

// dialControl returns the net.Dialer Control func of the guard: it runs after
// DNS resolution, on the address about to be connected (so a name that
// resolves, or rebinds, to a refused address is refused too).
func dialControl(allowed []netip.Prefix) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			// Not an IP:port (a Unix socket, which the transport never
			// dials): refuse rather than guess.
			return &addressError{class: "unparsable"}
		}
		if class := addressClass(ap.Addr(), allowed); class != "" {
			return &addressError{addr: ap.Addr().Unmap(), class: class}
		}
		return nil
	}
}

// errRedirect is CheckRedirect's answer: a redirect is never followed.
var errRedirect = errors.New("redirect refused")

// newClient builds the Fetcher's HTTP client: its own transport (no
// environment proxy, which would bypass the address guard; no transparent
// gzip decoding, so the bytes counted and hashed are the ones served), the
// dial-time guard, no redirects, the timeout of one download.
func (f *Fetcher) newClient() *http.Client {
	rt := f.Transport
	if rt == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: dialControl(f.AllowedCIDRs)}
		rt = &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSHandshakeTimeout:    10 * time.Second,
			DisableCompression:     true,
			MaxIdleConns:           4,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return &http.Client{
		Transport:     rt,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}
