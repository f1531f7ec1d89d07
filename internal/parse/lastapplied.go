package parse

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/driftwatch/driftwatch/internal/model"
)

// MaxLastAppliedBytes is the largest last-applied-configuration annotation
// LastApplied parses. The API server caps all annotations of an object at 256 KiB,
// so only a corrupt or hostile source reaches it.
const MaxLastAppliedBytes = 1 << 20

// LastAppliedAnnotation is the annotation LastApplied summarises.
const LastAppliedAnnotation = model.AnnLastApplied

const inputLastApplied = "last-applied"

// LastApplied summarises a kubectl.kubernetes.io/last-applied-configuration
// annotation without keeping any value. It never returns nil: the result always
// has Size, and Err is set (with no keys) when the annotation is larger than
// MaxLastAppliedBytes, is not a well-formed JSON object (an empty string is not),
// or a field read here has the wrong type. Callers pass the annotation only when
// it is present.
//
// What is read: apiVersion, kind, metadata.name; for a Secret (kind Secret,
// apiVersion v1) the key names of data and stringData (sorted, deduplicated) and,
// when fp is not nil, DataFPs: data values are base64-decoded before
// fingerprinting (a value that is not valid base64 is fingerprinted as written),
// stringData values are fingerprinted as written, and stringData wins over data
// for the same key, as in the API server; keys whose value is not a string are
// listed without a fingerprint. For an ExternalSecret (kind ExternalSecret,
// apiVersion external-secrets.io/*): spec.data[].secretKey in order (one entry per
// element, "" when an element has none), HasSpecData when spec.data is present and
// not null, CreationPolicySet when spec.target.creationPolicy is present and not
// null. Member names match exactly; when a name repeats, the last one wins.
func LastApplied(annotation string, fp *model.Fingerprinter) *model.LastApplied {
	return lastApplied(annotation, nil, fp)
}

// LastAppliedBytes is LastApplied of the annotation's bytes (the wire decoder
// reads them from the response without making a string of them). The bytes are
// only read.
func LastAppliedBytes(annotation []byte, fp *model.Fingerprinter) *model.LastApplied {
	return lastApplied("", annotation, fp)
}

func lastApplied(s string, b []byte, fp *model.Fingerprinter) *model.LastApplied {
	n := len(s) + len(b)
	la := &model.LastApplied{Size: n}
	if n > MaxLastAppliedBytes {
		e := newErr(inputLastApplied, "", ErrTooLarge)
		e.Limit = MaxLastAppliedBytes
		la.Err = e.Error()
		return la
	}
	buf := make([]byte, 0, n)
	buf = append(append(buf, s...), b...)
	var st laScratch
	defer func() {
		clear(buf)
		st.wipe()
	}()
	if err := summariseLastApplied(buf, fp, &st, la); err != nil {
		*la = model.LastApplied{Size: n, Err: err.Error()}
	}
	return la
}

type laScratch struct {
	unq, dec []byte
}

func (s *laScratch) wipe() {
	clear(s.unq[:cap(s.unq)])
	clear(s.dec[:cap(s.dec)])
}

var laTop = []string{"apiVersion", "kind", "metadata", "data", "stringData", "spec"}

const (
	laAPIVersion = iota
	laKind
	laMetadata
	laData
	laStringData
	laSpec
)

func summariseLastApplied(buf []byte, fp *model.Fingerprinter, st *laScratch, la *model.LastApplied) error {
	if !json.Valid(buf) {
		e := newErr(inputLastApplied, "json", ErrMalformed)
		e.Offset = syntaxOffset(buf)
		return e
	}
	if jsonType(buf) != '{' {
		e := newErr(inputLastApplied, "json", ErrMalformed)
		e.Detail = "not an object"
		return e
	}
	top := make([][]byte, len(laTop))
	fields(buf, laTop, top)
	bad := func(field, detail string) error {
		e := newErr(inputLastApplied, "json", ErrMalformed)
		e.Field, e.Detail = field, detail
		return e
	}
	var ok bool
	if la.APIVersion, ok = optString(top[laAPIVersion]); !ok {
		return bad("apiVersion", "not a string")
	}
	if la.Kind, ok = optString(top[laKind]); !ok {
		return bad("kind", "not a string")
	}
	la.APIVersion, la.Kind = model.Intern(la.APIVersion), model.Intern(la.Kind)
	if m := top[laMetadata]; present(m) {
		if jsonType(m) != '{' {
			return bad("metadata", "not an object")
		}
		name := make([][]byte, 1)
		fields(m, []string{"name"}, name)
		if la.Name, ok = optString(name[0]); !ok {
			return bad("metadata.name", "not a string")
		}
	}
	switch {
	case isSecret(la.APIVersion, la.Kind):
		var keys []string
		var fps model.FPList
		// data first, then stringData: a stringData value replaces a data value.
		for _, f := range []struct {
			idx    int
			name   string
			base64 bool
		}{{laData, "data", true}, {laStringData, "stringData", false}} {
			obj := top[f.idx]
			if !present(obj) {
				continue
			}
			if jsonType(obj) != '{' {
				return bad(f.name, "not an object")
			}
			eachMember(obj, func(k, v []byte) bool {
				key, _ := unquoteString(k)
				key = model.Intern(key) // key names repeat across Secrets
				keys = append(keys, key)
				if fp == nil || jsonType(v) != '"' {
					return true
				}
				fps.Set(key, fingerprintValue(v, f.base64, fp, st))
				return true
			})
		}
		la.DataKeys = sortDedupe(keys)
		if len(fps) > 0 {
			if cap(fps) > len(fps) {
				fps = slices.Clone(fps) // drop the capacity Set's growth left
			}
			la.DataFPs = fps
		}
	case isExternalSecret(la.APIVersion, la.Kind):
		spec := top[laSpec]
		if !present(spec) {
			break
		}
		if jsonType(spec) != '{' {
			return bad("spec", "not an object")
		}
		sf := make([][]byte, 2)
		fields(spec, []string{"data", "target"}, sf)
		if d := sf[0]; present(d) {
			if jsonType(d) != '[' {
				return bad("spec.data", "not an array")
			}
			la.HasSpecData = true
			keys, ok := specDataKeys(d)
			if !ok {
				return bad("spec.data", "entry is not an object or secretKey is not a string")
			}
			la.SpecDataKeys = keys
		}
		if t := sf[1]; present(t) {
			if jsonType(t) != '{' {
				return bad("spec.target", "not an object")
			}
			cp := make([][]byte, 1)
			fields(t, []string{"creationPolicy"}, cp)
			la.CreationPolicySet = present(cp[0])
		}
	}
	return nil
}

// fingerprintValue fingerprints one raw JSON string value, base64-decoding it
// first when b64 is set and it is valid base64. Scratch bytes are zeroed before
// returning.
func fingerprintValue(raw []byte, b64 bool, fp *model.Fingerprinter, st *laScratch) model.Fingerprint {
	v, ok := unquoteBytes(raw, &st.unq)
	if !ok {
		return model.Fingerprint{}
	}
	defer clear(st.unq)
	if b64 {
		d := growWiped(&st.dec, base64.StdEncoding.DecodedLen(len(v)))
		n, err := base64.StdEncoding.Decode(d, v)
		if err == nil {
			sum := fp.Sum(d[:n])
			clear(d)
			return sum
		}
		clear(d)
	}
	return fp.Sum(v)
}

// specDataKeys reads secretKey of every element of an ExternalSecret's spec.data.
func specDataKeys(arr []byte) ([]string, bool) {
	keys := []string{}
	ok := true
	one := make([][]byte, 1)
	eachElement(arr, func(el []byte) bool {
		if jsonType(el) != '{' {
			ok = false
			return false
		}
		one[0] = nil
		fields(el, []string{"secretKey"}, one)
		s, good := optString(one[0])
		if !good {
			ok = false
			return false
		}
		keys = append(keys, model.Intern(s))
		return true
	})
	return keys, ok
}

// optString decodes an optional string member: absent or null gives "", true.
func optString(raw []byte) (string, bool) {
	switch jsonType(raw) {
	case 0, 'n':
		return "", true
	case '"':
		return unquoteString(raw)
	}
	return "", false
}

func isSecret(apiVersion, kind string) bool {
	return kind == "Secret" && (apiVersion == "v1" || apiVersion == "")
}

func isExternalSecret(apiVersion, kind string) bool {
	return kind == "ExternalSecret" && strings.HasPrefix(apiVersion, "external-secrets.io/")
}

// sortDedupe sorts in place and drops duplicates; nil stays nil.
func sortDedupe(s []string) []string {
	if len(s) == 0 {
		return s
	}
	sort.Strings(s)
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
