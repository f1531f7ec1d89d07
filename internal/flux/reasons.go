package flux

// The vocabulary shared by the Flux poller and build (internal/flux/desired)
// and the detectors and collectors that read their results: why a
// Kustomization is not judged, why a download is refused, revisions.

import "strings"

// Reasons a Kustomization is not judged, as the reason label of
// driftwatch_flux_kustomizations_unjudged spells them.
const (
	// UnjudgedNoArtifact: the source does not exist or serves no artifact yet.
	UnjudgedNoArtifact = "no_artifact"
	// UnjudgedSourceKind: the sourceRef names a kind driftwatch does not read.
	UnjudgedSourceKind = "source_kind_unknown"
	// UnjudgedSourceUnavailable: the source's resource is not listed (its CRD
	// is not served, or listing it is forbidden).
	UnjudgedSourceUnavailable = "source_unavailable"
	// UnjudgedSourceSuspended: the source is suspended and its artifact
	// changed since the last build: a suspended source's status is written by
	// nobody but whoever may edit it, so it is not fetched.
	UnjudgedSourceSuspended = "source_suspended"
	// UnjudgedFetchRefused: the artifact URL, a redirect or the address it
	// resolves to is not allowed, or the artifact has no digest: nothing was
	// fetched.
	UnjudgedFetchRefused = "fetch_refused"
	// UnjudgedFetchFailed: the download failed (retried with backoff).
	UnjudgedFetchFailed = "fetch_failed"
	// UnjudgedLimit: the artifact or its build broke a limit (size, files,
	// objects, build time); not fetched again for that digest.
	UnjudgedLimit = "limit"
	// UnjudgedRemoteBase: the build reads a remote base or file, which
	// driftwatch never fetches.
	UnjudgedRemoteBase = "remote_base"
	// UnjudgedBuildFailed: Flux's build (kustomize, postBuild substitution)
	// fails on the artifact: kustomize-controller fails the same way.
	UnjudgedBuildFailed = "build_failed"
	// UnjudgedSpecUnreadable: the Kustomization could not be read from the
	// apiserver at build time.
	UnjudgedSpecUnreadable = "spec_unreadable"
)

// UnjudgedReasons lists every reason, in the order the docs give them.
var UnjudgedReasons = []string{UnjudgedNoArtifact, UnjudgedSourceKind, UnjudgedSourceUnavailable, UnjudgedSourceSuspended,
	UnjudgedFetchRefused, UnjudgedFetchFailed, UnjudgedLimit, UnjudgedRemoteBase, UnjudgedBuildFailed, UnjudgedSpecUnreadable}

// Reasons of a FetchError: a fixed, value-free vocabulary (they become
// metric label values).
const (
	// Refusals: nothing was sent to the host (or the response was not used).

	// RefuseNotHTTP: the URL is unparsable, not http(s), or has no host.
	RefuseNotHTTP = "not_http"
	// RefuseHostNotAllowed: the URL's host is not in the allowed set (see
	// Fetcher.FluxNamespace and Fetcher.AllowedHosts).
	RefuseHostNotAllowed = "host_not_allowed"
	// RefuseAddress: refused at dial time, after DNS resolution: a loopback,
	// link-local (unicast or multicast), unspecified (0.0.0.0/8, ::),
	// multicast or cloud metadata address not inside Fetcher.AllowedCIDRs.
	// The connection was never opened.
	RefuseAddress = "address_not_allowed"
	// RefuseRedirect: the server answered with a redirect (3xx with a
	// Location); it is never followed.
	RefuseRedirect = "redirect"
	// RefuseNoDigest: status.artifact.digest is empty or malformed, or its
	// algorithm is not sha256, sha384 or sha512. Nothing was requested.
	RefuseNoDigest = "no_digest"

	// FetchLimit: a limit was broken (compressed size, inflated total, one
	// file, or the number of entries). The artifact will not get smaller:
	// the caller remembers the digest and never retries it.
	FetchLimit = "limit"

	// FetchFailed: a failure that may be transient or a bad artifact
	// (network error, HTTP status other than 200, digest mismatch, not gzip,
	// not a tarball, truncated, context done): the caller retries with
	// backoff.
	FetchFailed = "failed"
)

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
