package parse

import (
	"strings"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Limits of ExpectedKeys.
const (
	// MaxExpectedKeysBytes caps the annotation (over it: an error and no keys).
	MaxExpectedKeysBytes = 256 << 10
	// MaxExpectedKeys caps the distinct valid entries returned.
	MaxExpectedKeys = 1000
	// MaxSecretKeyLen is Kubernetes' limit on a Secret key name.
	MaxSecretKeyLen = 253
)

// ExpectedKeysAnnotation lists the keys a Secret (or an ExternalSecret's target)
// must hold.
const ExpectedKeysAnnotation = model.AnnExpectedKeys

const inputExpectedKeys = "expected-keys"

// ExpectedKeys parses a driftwatch.io/expected-keys annotation such as "A,B,C":
// entries are separated by commas and/or white space (spaces, tabs, newlines),
// empty entries are dropped, and the result is sorted and deduplicated. Each entry
// must be a valid Secret key name (characters -._a-zA-Z0-9, at most
// MaxSecretKeyLen bytes, not "." or ".."). An invalid entry makes an error (an
// *Error wrapping ErrInvalid that names its index and offset, never its text) but
// the valid entries are still returned. More than MaxExpectedKeys distinct entries
// keeps the first MaxExpectedKeys and returns an ErrTooLarge error; an annotation
// longer than MaxExpectedKeysBytes returns no keys and ErrTooLarge.
func ExpectedKeys(annotation string) ([]string, error) {
	if len(annotation) > MaxExpectedKeysBytes {
		e := newErr(inputExpectedKeys, "", ErrTooLarge)
		e.Limit = MaxExpectedKeysBytes
		return nil, e
	}
	var keys []string
	seen := map[string]struct{}{}
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
	for i := 0; i < len(annotation); {
		if isKeySep(annotation[i]) {
			i++
			continue
		}
		j := i
		for j < len(annotation) && !isKeySep(annotation[j]) {
			j++
		}
		entry, at := annotation[i:j], i
		n := idx
		idx++
		i = j
		if detail, pos := checkSecretKey(entry); detail != "" {
			e := newErr(inputExpectedKeys, "", ErrInvalid)
			e.Index, e.Detail = n, detail
			e.Offset = int64(at + pos)
			fail(e)
			continue
		}
		if _, dup := seen[entry]; dup {
			continue
		}
		if len(keys) >= MaxExpectedKeys {
			e := newErr(inputExpectedKeys, "", ErrTooLarge)
			e.Index, e.Detail, e.Limit, e.Offset = n, "too many entries", MaxExpectedKeys, int64(at)
			fail(e)
			break
		}
		seen[entry] = struct{}{}
		keys = append(keys, strings.Clone(entry))
	}
	keys = sortDedupe(keys)
	if first != nil {
		first.More = more
		return keys, first
	}
	return keys, nil
}

func isKeySep(c byte) bool {
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// checkSecretKey applies the Kubernetes rule for Secret/ConfigMap keys
// (IsConfigMapKey): [-._a-zA-Z0-9]+, at most 253 bytes, not "." or "..", and not
// starting with "..". It returns a fixed description and the offending byte's
// position within the entry, or "".
func checkSecretKey(k string) (string, int) {
	if len(k) > MaxSecretKeyLen {
		return "longer than 253 bytes", MaxSecretKeyLen
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '-' || c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return "character not allowed in a key", i
		}
	}
	if k == "." || k == ".." || strings.HasPrefix(k, "..") {
		return "must not be '.' or start with '..'", 0
	}
	return "", 0
}
