package parse

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Limits of HelmRelease.
const (
	// MaxHelmPayloadBytes caps the payload as stored in the release Secret's data
	// (base64 text). A Secret cannot exceed 1 MiB, so this is generous.
	MaxHelmPayloadBytes = 8 << 20
	// MaxHelmDecompressedBytes caps the release JSON after gunzip: a gzip bomb
	// stops here.
	MaxHelmDecompressedBytes = 32 << 20
	// MaxHelmDocuments caps the YAML documents of a manifest.
	MaxHelmDocuments = 10000
	// MaxHelmDocumentBytes caps one manifest document that may be a Secret or an
	// ExternalSecret (others are skipped unparsed, whatever their size). Nothing
	// this large can be stored by the API server.
	MaxHelmDocumentBytes = 4 << 20
)

// HelmReleaseField is the data field of a Helm v3 release Secret that holds the
// payload.
const HelmReleaseField = "release"

const inputHelm = "helm release"

// HelmReleaseInfo identifies a decoded release revision. Which revision counts
// (the latest deployed one) is the caller's business.
type HelmReleaseInfo struct {
	Name      string
	Namespace string
	Revision  int    // the release JSON's "version"
	Status    string // info.status: deployed, superseded, failed, pending-upgrade, ...
	Documents int    // manifest documents seen
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// HelmReleaseFromSecretData decodes data["release"] of a Helm v3 release Secret
// (type helm.sh/release.v1). See HelmRelease.
func HelmReleaseFromSecretData(data map[string][]byte) (HelmReleaseInfo, []model.Declared, error) {
	payload, ok := data[HelmReleaseField]
	if !ok {
		e := newErr(inputHelm, "", ErrMalformed)
		e.Field, e.Detail = HelmReleaseField, "field missing"
		return HelmReleaseInfo{}, nil, e
	}
	return HelmRelease(payload)
}

// HelmRelease decodes one Helm v3 release payload: the value of the release
// Secret's data field "release", which is base64 text of gzip of JSON (payloads
// that are not gzipped, or not base64-wrapped, are accepted too). From the JSON it
// reads name, namespace, version, info.status and manifest, and from every
// manifest document:
//
//   - kind Secret (apiVersion v1): the key names of data and stringData as an
//     expectation {Kind: "Secret", Namespace: metadata.namespace or the release's
//     namespace, Name, Keys};
//   - kind ExternalSecret (apiVersion external-secrets.io/*): ES = what it
//     writes, read by the decoder live ExternalSecrets use (eso.DecodeJSON,
//     eso.Writes).
//
// Values are never kept; the buffers that held the decoded payload are zeroed.
// rel and exps are filled as far as decoding got: when err is not nil they may be
// incomplete (err says which stage or document failed; a failing document does
// not stop the others). err is always an *Error.
func HelmRelease(payload []byte) (rel HelmReleaseInfo, exps []model.Declared, err error) {
	if len(payload) > MaxHelmPayloadBytes {
		e := newErr(inputHelm, "", ErrTooLarge)
		e.Limit = MaxHelmPayloadBytes
		return rel, nil, e
	}
	var wipe [][]byte
	defer func() {
		for _, b := range wipe {
			clear(b[:cap(b)])
		}
	}()

	data := payload
	if !bytes.HasPrefix(data, gzipMagic) && !startsJSON(data) {
		d := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
		wipe = append(wipe, d)
		n, berr := base64.StdEncoding.Decode(d, data)
		if berr != nil {
			e := newErr(inputHelm, "base64", ErrMalformed)
			var ce base64.CorruptInputError
			if errors.As(berr, &ce) {
				e.Offset = int64(ce)
			}
			return rel, nil, e
		}
		data = d[:n]
	}
	if bytes.HasPrefix(data, gzipMagic) {
		j, gerr := gunzip(data, MaxHelmDecompressedBytes)
		wipe = append(wipe, j)
		if gerr != nil {
			return rel, nil, gerr
		}
		data = j
	}
	if len(data) > MaxHelmDecompressedBytes {
		e := newErr(inputHelm, "json", ErrTooLarge)
		e.Limit = MaxHelmDecompressedBytes
		return rel, nil, e
	}
	manifest, merr := decodeReleaseJSON(data, &rel)
	wipe = append(wipe, manifest)
	if merr != nil {
		return rel, nil, merr
	}
	exps, err = manifestExpectations(manifest, rel.Namespace, &rel.Documents)
	return rel, exps, err
}

func startsJSON(b []byte) bool {
	i := skipSpace(b, 0)
	return i < len(b) && b[i] == '{'
}

// gunzip decompresses at most limit bytes. The output buffer is sized from the
// gzip trailer (capped by limit) and, when it must grow, the old one is zeroed.
func gunzip(data []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, gzipErr(err)
	}
	defer zr.Close()
	// The trailer's size is a hint only (it is mod 2^32 and may lie): too small
	// and the buffer grows, too large and it is capped by limit. Without a trailer,
	// start at 64 KiB. (A 64 KiB floor cost most releases — a few KiB of JSON —
	// an oversized allocation each.)
	hint := 64 << 10
	if len(data) >= 18 {
		if isize := int64(binary.LittleEndian.Uint32(data[len(data)-4:])); isize < int64(limit) {
			hint = int(isize) + 512
		} else {
			hint = limit + 1
		}
	}
	buf := make([]byte, 0, hint)
	lr := io.LimitReader(zr, int64(limit)+1)
	for {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(2*cap(buf)+512, limit+1))
			copy(nb, buf)
			clear(buf)
			buf = nb
		}
		n, rerr := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			e := newErr(inputHelm, "gzip", ErrTooLarge)
			e.Limit = int64(limit)
			return buf, e
		}
		if rerr == io.EOF {
			return buf, nil
		}
		if rerr != nil {
			return buf, gzipErr(rerr)
		}
	}
}

func gzipErr(err error) error {
	e := newErr(inputHelm, "gzip", ErrMalformed)
	var ce flate.CorruptInputError
	switch {
	case errors.As(err, &ce):
		e.Detail, e.Offset = "corrupt deflate data", int64(ce)
	case errors.Is(err, gzip.ErrHeader):
		e.Detail = "bad header"
	case errors.Is(err, gzip.ErrChecksum):
		e.Detail = "checksum mismatch"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e.Detail = "truncated"
	default:
		e.Detail = "unreadable"
	}
	return e
}

var relTop = []string{"name", "namespace", "version", "info", "manifest"}

// decodeReleaseJSON reads the fields of the release JSON and returns the manifest
// unescaped into a fresh buffer (the caller zeroes it).
func decodeReleaseJSON(j []byte, rel *HelmReleaseInfo) ([]byte, error) {
	bad := func(field, detail string) error {
		e := newErr(inputHelm, "json", ErrMalformed)
		e.Field, e.Detail = field, detail
		return e
	}
	if !json.Valid(j) {
		e := newErr(inputHelm, "json", ErrMalformed)
		e.Offset = syntaxOffset(j)
		return nil, e
	}
	if jsonType(j) != '{' {
		return nil, bad("", "not an object")
	}
	top := make([][]byte, len(relTop))
	fields(j, relTop, top)
	var ok bool
	if rel.Name, ok = optString(top[0]); !ok {
		return nil, bad("name", "not a string")
	}
	if rel.Namespace, ok = optString(top[1]); !ok {
		return nil, bad("namespace", "not a string")
	}
	if v := top[2]; present(v) {
		n, err := strconv.Atoi(string(trimJSON(v)))
		if jsonType(v) != '0' || err != nil {
			return nil, bad("version", "not an integer")
		}
		rel.Revision = n
	}
	if info := top[3]; present(info) {
		if jsonType(info) != '{' {
			return nil, bad("info", "not an object")
		}
		st := make([][]byte, 1)
		fields(info, []string{"status"}, st)
		if rel.Status, ok = optString(st[0]); !ok {
			return nil, bad("info.status", "not a string")
		}
	}
	m := top[4]
	switch jsonType(m) {
	case 0, 'n':
		return nil, nil
	case '"':
	default:
		return nil, bad("manifest", "not a string")
	}
	m = trimJSON(m)
	n, ok := unquote(nil, m)
	if !ok {
		return nil, bad("manifest", "bad string")
	}
	out := make([]byte, n)
	unquote(out, m)
	return out, nil
}

// manifestExpectations splits the manifest into YAML documents and extracts the
// expectations of Secrets and ExternalSecrets.
func manifestExpectations(manifest []byte, relNS string, ndocs *int) ([]model.Declared, error) {
	var exps []model.Declared
	var first *Error
	more := 0
	fail := func(e *Error) {
		if first == nil {
			first = e
		} else {
			more++
		}
	}
	idx := 0
	splitDocuments(manifest, func(doc []byte, offset int) bool {
		if idx >= MaxHelmDocuments {
			e := newErr(inputHelm, "manifest", ErrTooLarge)
			e.Detail, e.Limit, e.Offset = "too many documents", MaxHelmDocuments, int64(offset)
			fail(e)
			return false
		}
		i := idx
		idx++
		if !mayBeSecretLike(doc) {
			return true
		}
		if len(doc) > MaxHelmDocumentBytes {
			e := newErr(inputHelm, "manifest", ErrTooLarge)
			e.Index, e.Limit, e.Offset = i, MaxHelmDocumentBytes, int64(offset)
			fail(e)
			return true
		}
		exp, ok, e := declared(doc, Input{What: inputHelm, Namespace: relNS})
		if e != nil {
			e.Index, e.Offset = i, int64(offset)
			fail(e)
			return true
		}
		if ok {
			exps = append(exps, exp)
		}
		return true
	})
	*ndocs = idx
	if first != nil {
		first.More = more
		return exps, first
	}
	return exps, nil
}

// splitDocuments calls fn for every YAML document of a multi-document stream,
// with its byte offset. A separator is a line starting with "---" followed by
// nothing, white space or a comment, as in the Kubernetes YAML reader; the
// separator line itself is not part of a document.
func splitDocuments(m []byte, fn func(doc []byte, offset int) bool) {
	start := 0
	for i := 0; i <= len(m); {
		end := bytes.IndexByte(m[i:], '\n')
		var line []byte
		next := 0
		if end < 0 {
			line, next = m[i:], len(m)+1
		} else {
			line, next = m[i:i+end], i+end+1
		}
		if isSeparator(line) {
			if !fn(m[start:i], start) {
				return
			}
			start = min(next, len(m))
		}
		i = next
	}
	fn(m[start:], start)
}

func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(line[3:])
	if len(rest) == 0 || rest[0] == '#' {
		return len(line) == 3 || isSpace(line[3]) || line[3] == '#'
	}
	return false
}

// mayBeSecretLike is a cheap filter that never rejects a Secret or an
// ExternalSecret: its kind must be spelled out, unless hidden behind a
// double-quoted escape or a binary tag (!!binary, !<tag:yaml.org,2002:binary>),
// which keep the document in.
func mayBeSecretLike(doc []byte) bool {
	return bytes.Contains(doc, []byte("Secret")) ||
		bytes.IndexByte(doc, '\\') >= 0 ||
		bytes.Contains(doc, []byte("binary"))
}

// objectKeys lists the member names of an optional JSON object.
func objectKeys(obj []byte) ([]string, bool) {
	switch jsonType(obj) {
	case 0, 'n':
		return nil, true
	case '{':
	default:
		return nil, false
	}
	var keys []string
	eachMember(obj, func(k, _ []byte) bool {
		s, _ := unquoteString(k)
		keys = append(keys, s)
		return true
	})
	return keys, true
}

// yamlToJSON converts with sigs.k8s.io/yaml, the converter kubectl and Helm use.
// It reports failure as a bool: YAML errors quote the input.
func yamlToJSON(doc []byte) (j []byte, failed bool) {
	defer func() {
		if recover() != nil {
			j, failed = nil, true
		}
	}()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, true
	}
	return j, false
}
