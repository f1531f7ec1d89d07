// Package parse holds driftwatch's parsers of untrusted text: the
// kubectl.kubernetes.io/last-applied-configuration annotation, Helm v3 release
// payloads, the driftwatch.io/expected-keys annotation and metadata.managedFields.
//
// Every function here is pure (no I/O, no globals, no logging) and value-free: a
// Secret value may pass through a parser's scratch buffers, but it is never kept
// in a result and never put into an error. Errors say where (a byte offset, a
// document or entry index) and what kind of problem (too large, malformed,
// invalid), never what the input held. Scratch buffers that held values are zeroed
// before they are dropped where the standard library lets us (it does not for the
// gzip window or the YAML parser's intermediate tree).
//
// No input makes a parser panic or use memory beyond a fixed multiple of its
// limits. The limits:
//
//	MaxLastAppliedBytes        1 MiB    last-applied annotation (over it: Err set, no keys)
//	MaxHelmPayloadBytes        8 MiB    Helm release payload as stored (base64 text)
//	MaxHelmDecompressedBytes  32 MiB    release JSON after gunzip (a gzip bomb stops here)
//	MaxHelmDocuments          10000     YAML documents in a release manifest
//	MaxHelmDocumentBytes       4 MiB    one manifest document that may be a Secret/ExternalSecret
//	MaxExpectedKeysBytes      256 KiB   expected-keys annotation
//	MaxExpectedKeys            1000     entries of the expected-keys annotation
//	MaxSecretKeyLen             253     one Secret key name (Kubernetes' own limit)
//	MaxManagedFieldsEntries     256     managedFields entries summarised per object
//	MaxFieldsV1Bytes          512 KiB   one managedFields entry's fieldsV1 JSON
//
// JSON nesting is bounded by encoding/json (10000 levels) and YAML nesting by the
// YAML parser (10000 levels); the scanners in this package are iterative.
//
// Fuzz targets (FuzzLastApplied, FuzzHelmRelease, FuzzExpectedKeys,
// FuzzManagedFields, FuzzJSONScan) run with, e.g.:
//
//	go test -run='^$' -fuzz=FuzzHelmRelease -fuzztime=10m -fuzzminimizetime=5s ./internal/parse
//
// The seed corpora hold 1 MiB inputs; with the default -fuzzminimizetime (60s)
// the engine spends short runs minimising them, so keep it small.
package parse
