package parse

// Zero-copy walking of JSON text that json.Valid has accepted. Values are handed
// out as sub-slices of the caller's buffer, so a Secret value is never copied by
// the walk itself; the only copies are the ones a caller makes (and zeroes).
// Every function is iterative and bounds-checked: on input json.Valid rejected
// they return "not ok" rather than panic.

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// trimJSON drops surrounding white space from one JSON value.
func trimJSON(b []byte) []byte {
	i := skipSpace(b, 0)
	j := len(b)
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// stringEnd returns the index just past the string literal starting at b[i] ('"'),
// or -1.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e := stringEnd(b, i)
				if e < 0 {
					return -1
				}
				i = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	case '}', ']', ',', ':':
		return -1
	default: // number, true, false, null
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ':' || c == '"' || isSpace(c) {
				break
			}
			j++
		}
		return j
	}
}

// jsonType is the first byte of a trimmed value: '{', '[', '"', 'n' (null), 't',
// 'f', or '0' for numbers; 0 when v is empty (absent).
func jsonType(v []byte) byte {
	v = trimJSON(v)
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; c {
	case '{', '[', '"', 'n', 't', 'f':
		return c
	}
	return '0'
}

// present reports whether a member was present with a non-null value.
func present(v []byte) bool { t := jsonType(v); return t != 0 && t != 'n' }

// eachMember calls fn with the raw (quoted) key and the raw value of every member
// of the JSON object b, in order, until fn returns false. It returns false when b
// is not an object.
func eachMember(b []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		ke := stringEnd(b, i)
		if ke < 0 {
			return false
		}
		key := b[i:ke]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		ve := valueEnd(b, i)
		if ve < 0 {
			return false
		}
		if !fn(key, b[i:ve]) {
			return true
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// eachElement calls fn with every element of the JSON array b until fn returns
// false. It returns false when b is not an array.
func eachElement(b []byte, fn func(val []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		ve := valueEnd(b, i)
		if ve < 0 {
			return false
		}
		if !fn(b[i:ve]) {
			return true
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}

// fields picks the named members of object b: out[i] is the raw value of the
// last member called names[i] (nil when absent). Names are compared exactly
// (case-sensitively, as the Kubernetes API server does), after unescaping.
func fields(b []byte, names []string, out [][]byte) bool {
	return eachMember(b, func(k, v []byte) bool {
		for i, n := range names {
			if keyIs(k, n) {
				out[i] = v
				break
			}
		}
		return true
	})
}

// keyIs compares a raw quoted key with name.
func keyIs(raw []byte, name string) bool {
	if len(raw) < 2 {
		return false
	}
	inner := raw[1 : len(raw)-1]
	if !needsUnquote(inner) {
		return string(inner) == name
	}
	s, ok := unquoteString(raw)
	return ok && s == name
}

// needsUnquote: the string body has escapes or bytes that decode differently.
func needsUnquote(inner []byte) bool {
	ascii := true
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 {
			return true
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return !ascii && !utf8.Valid(inner)
}

// unquoteString decodes a raw JSON string literal into a Go string. Only for key
// names and other non-secret fields.
func unquoteString(raw []byte) (string, bool) {
	raw = trimJSON(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; !needsUnquote(inner) {
		return string(inner), true
	}
	n, ok := unquote(nil, raw)
	if !ok {
		return "", false
	}
	buf := make([]byte, n)
	unquote(buf, raw)
	return string(buf), true
}

// unquoteBytes decodes a raw JSON string literal that may hold a Secret value.
// When the literal has no escapes the result is a sub-slice of raw (no copy);
// otherwise it is written into *scratch, which is grown (the old array zeroed)
// as needed. The caller zeroes *scratch when done.
func unquoteBytes(raw []byte, scratch *[]byte) ([]byte, bool) {
	raw = trimJSON(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	if inner := raw[1 : len(raw)-1]; !needsUnquote(inner) {
		return inner, true
	}
	n, ok := unquote(nil, raw)
	if !ok {
		return nil, false
	}
	buf := growWiped(scratch, n)
	unquote(buf, raw)
	return buf, true
}

// growWiped returns (*buf)[:n], reallocating when too small; an array it drops is
// zeroed first.
func growWiped(buf *[]byte, n int) []byte {
	if cap(*buf) < n {
		clear((*buf)[:cap(*buf)])
		*buf = make([]byte, n, n+n/4)
	}
	*buf = (*buf)[:n]
	return *buf
}

// unquote decodes the JSON string literal raw (quotes included) exactly as
// encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD). With dst
// nil it only measures; otherwise dst must have the measured length. It returns
// the decoded length.
func unquote(dst, raw []byte) (int, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return 0, false
	}
	s := raw[1 : len(raw)-1]
	w := 0
	put := func(p []byte) {
		if dst != nil {
			copy(dst[w:], p)
		}
		w += len(p)
	}
	var rb [utf8.UTFMax]byte
	putRune := func(r rune) {
		n := utf8.EncodeRune(rb[:], r)
		put(rb[:n])
	}
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			r++
			if r >= len(s) {
				return 0, false
			}
			switch s[r] {
			case '"', '\\', '/':
				put(s[r : r+1])
				r++
			case 'b':
				put([]byte{'\b'})
				r++
			case 'f':
				put([]byte{'\f'})
				r++
			case 'n':
				put([]byte{'\n'})
				r++
			case 'r':
				put([]byte{'\r'})
				r++
			case 't':
				put([]byte{'\t'})
				r++
			case 'u':
				r--
				rr := getu4(s[r:])
				if rr < 0 {
					return 0, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						putRune(dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				putRune(rr)
			default:
				return 0, false
			}
		case c == '"' || c < ' ':
			return 0, false
		case c < utf8.RuneSelf:
			// A run of plain ASCII is copied at once (manifests are mostly that).
			j := r + 1
			for j < len(s) && s[j] >= ' ' && s[j] < utf8.RuneSelf && s[j] != '\\' && s[j] != '"' {
				j++
			}
			put(s[r:j])
			r = j
		default:
			rr, size := utf8.DecodeRune(s[r:])
			if rr == utf8.RuneError && size == 1 {
				putRune(unicode.ReplacementChar)
			} else {
				put(s[r : r+size])
			}
			r += size
		}
	}
	return w, true
}

// getu4 decodes \uXXXX from the beginning of s, returning the hex value, or -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// syntaxOffset finds where json.Valid failed, for an error message.
func syntaxOffset(b []byte) int64 {
	var se *json.SyntaxError
	var v noopValue
	if err := json.Unmarshal(b, &v); err != nil && asSyntax(err, &se) {
		return se.Offset
	}
	return -1
}

type noopValue struct{}

func (*noopValue) UnmarshalJSON([]byte) error { return nil }

func asSyntax(err error, se **json.SyntaxError) bool {
	s, ok := err.(*json.SyntaxError)
	if ok {
		*se = s
	}
	return ok
}
