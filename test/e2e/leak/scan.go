// Package leak holds the end-to-end leak test of issue 10: Secrets with
// random values on the real stack, every output of the agent, its
// subcommands and its demo scanned for any value or any 6-byte substring of
// one (and of its base64 form).
package leak

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// Window is the length of the substrings searched for.
const Window = 6

// lowEntropyMin is the match length a window drawn only from [0-9] or
// [0-9a-f] must reach to count: six such characters carry 20–24 bits, and
// the agent's outputs legitimately hold many digit and lowercase-hex runs
// (timestamps, memory statistics, resourceVersions, code addresses in pprof
// pages), so a 6-character coincidence is expected now and then. Ten
// characters (≥ 33 bits) is not a coincidence. Windows with any other
// character count at 6 bytes.
const lowEntropyMin = 10

// Value is one secret value to look for.
type Value struct {
	Kind  string // what it looks like (base64, hex, key-like, number, short...)
	Bytes []byte
	// Fixed marks the bytes of a template around the random parts (nil: all
	// random). A window must hold at least MinRandom random bytes to be
	// searched: `r":"pk` from {"user":"pk..."} carries two random letters,
	// and JSON logs print `"reflector":"pkg/...` all day.
	Fixed []bool
}

// MinRandom is how many random bytes a window must hold to be searched.
const MinRandom = 4

// templated builds a value from parts: even-indexed parts are a fixed frame,
// odd-indexed ones random.
func templated(kind string, parts ...string) Value {
	v := Value{Kind: kind}
	for i, p := range parts {
		v.Bytes = append(v.Bytes, p...)
		for range len(p) {
			v.Fixed = append(v.Fixed, i%2 == 0)
		}
	}
	return v
}

// randomIn counts the random bytes of text[o:o+Window] in a form of v; in the
// base64 form a character is random when any byte it encodes is.
func (v Value) randomIn(formName string, o int) int {
	if v.Fixed == nil {
		return Window
	}
	n := 0
	for i := o; i < o+Window; i++ {
		lo, hi := i, i
		if formName == "base64" {
			lo, hi = i*3/4, (i*6+5)/8
		}
		for j := lo; j <= hi && j < len(v.Fixed); j++ {
			if !v.Fixed[j] {
				n++
				break
			}
		}
	}
	return n
}

type form struct {
	value int    // index into the values
	name  string // "raw" or "base64"
	text  []byte
}

type occurrence struct {
	form   int
	offset int
}

// Scanner finds windows of the values in emitted text.
type Scanner struct {
	values  []Value
	forms   []form
	windows map[string][]occurrence
	// public windows also appear in data that is not secret (object names,
	// key names, labels); they cannot tell a leak from a legitimate name.
	public map[string]bool
	// Skipped counts value windows ignored because they are public.
	Skipped int
	// Framed counts windows not searched because they are mostly a value's
	// fixed frame (see Value.Fixed).
	Framed int
	// TooShort counts values shorter than a window (not searched).
	TooShort int
}

// NewScanner indexes every window of every value and of its base64 form.
// Windows found in publicVocabulary are not searched (see Scanner.public).
func NewScanner(values []Value, publicVocabulary string) *Scanner {
	s := &Scanner{values: values, windows: map[string][]occurrence{}, public: map[string]bool{}}
	for i, v := range values {
		if len(v.Bytes) < Window {
			s.TooShort++ // nothing shorter than a window is searched
			continue
		}
		for _, f := range []form{
			{i, "raw", v.Bytes},
			{i, "base64", []byte(base64.StdEncoding.EncodeToString(v.Bytes))},
		} {
			fi := len(s.forms)
			s.forms = append(s.forms, f)
			for o := 0; o+Window <= len(f.text); o++ {
				w := string(f.text[o : o+Window])
				if v.randomIn(f.name, o) < MinRandom {
					s.Framed++
					continue
				}
				if publicVocabulary != "" && strings.Contains(publicVocabulary, w) {
					if !s.public[w] {
						s.public[w] = true
						s.Skipped++
					}
					continue
				}
				s.windows[w] = append(s.windows[w], occurrence{fi, o})
			}
		}
	}
	return s
}

// Hit is one leak, described without the value.
type Hit struct {
	Source   string // which output
	Pos      int    // byte offset in it
	Value    int    // index of the value
	Kind     string
	Form     string // raw or base64
	Offset   int    // offset of the window in the form
	MatchLen int    // how many bytes of the form match around the window
}

func (h Hit) String() string {
	return fmt.Sprintf("%s @%d: value #%d (%s, %s form) window at offset %d, %d bytes matching",
		h.Source, h.Pos, h.Value, h.Kind, h.Form, h.Offset, h.MatchLen)
}

// Scan returns the hits in one output, and how many low-entropy
// coincidences (shorter than lowEntropyMin) it ignored.
func (s *Scanner) Scan(source string, text []byte) (hits []Hit, coincidences int) {
	seen := map[[2]int]bool{} // (form, position of the match start) reported once
	{
		l := Window
		for p := 0; p+l <= len(text); p++ {
			occs, ok := s.windows[string(text[p:p+l])]
			if !ok {
				continue
			}
			for _, oc := range occs {
				f := s.forms[oc.form]
				// Extend the match both ways.
				a, b := 0, 0
				for oc.offset-a-1 >= 0 && p-a-1 >= 0 && f.text[oc.offset-a-1] == text[p-a-1] {
					a++
				}
				end := oc.offset + l
				for end+b < len(f.text) && p+l+b < len(text) && f.text[end+b] == text[p+l+b] {
					b++
				}
				matchLen := a + l + b
				if lowEntropy(text[p:p+l]) && matchLen < lowEntropyMin && matchLen < len(f.text) {
					coincidences++
					continue
				}
				k := [2]int{oc.form, p - a}
				if seen[k] {
					continue
				}
				seen[k] = true
				hits = append(hits, Hit{Source: source, Pos: p, Value: f.value, Kind: s.values[f.value].Kind,
					Form: f.name, Offset: oc.offset, MatchLen: matchLen})
			}
		}
	}
	return hits, coincidences
}

// Windows is the number of distinct windows searched.
func (s *Scanner) Windows() int { return len(s.windows) }

func lowEntropy(w []byte) bool {
	for _, c := range w {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Code-derived text in the outputs is public: it is the same whatever the
// cluster holds. These patterns pick it out: /metrics HELP and TYPE lines,
// the function names and source paths of pprof stack frames, and on the
// findings page its stylesheet and the anchors it derives from the catalog's
// failure classes (id="class-flipping-values").
var (
	pageStyle  = regexp.MustCompile(`(?s)<style>.*?</style>`)
	classAnchr = regexp.MustCompile(`(?:id|href)="#?(class-[a-z0-9-]+)"`)
	// data-object="Kind/namespace/name": names joined by the page.
	dataObject = regexp.MustCompile(`data-object="([^"]+)"`)
	helpLine   = regexp.MustCompile(`(?m)^# (HELP|TYPE) .*$`)
	frameDbg1  = regexp.MustCompile(`(?m)^#\t0x[0-9a-f]+\t(\S+)\+0x[0-9a-f]+\t(\S+)$`)
	frameDbg2  = regexp.MustCompile(`(?m)^(\S+)\(.*\)$`)
	frameFile  = regexp.MustCompile(`(?m)^\t(\S+\.go):\d+`)
	createdBy  = regexp.MustCompile(`(?m)^created by (\S+)`)
	pprofNames = []*regexp.Regexp{frameDbg1, frameDbg2, frameFile, createdBy}
)

// CodeVocabulary returns the code-derived parts of one output (see above).
func CodeVocabulary(source string, text []byte) string {
	var b strings.Builder
	if strings.Contains(source, "metrics") {
		for _, m := range helpLine.FindAll(text, -1) {
			b.Write(m)
			b.WriteByte('\n')
		}
	}
	for _, m := range pageStyle.FindAll(text, -1) {
		b.Write(m)
		b.WriteByte('\n')
	}
	for _, m := range dataObject.FindAllSubmatch(text, -1) {
		b.Write(m[1])
		b.WriteByte('\n')
	}
	for _, m := range classAnchr.FindAllSubmatch(text, -1) {
		b.Write(m[1])
		b.WriteByte('\n')
	}
	if strings.Contains(source, "pprof") {
		for _, re := range pprofNames {
			for _, m := range re.FindAllSubmatch(text, -1) {
				for _, g := range m[1:] {
					b.Write(g)
					b.WriteByte('\n')
				}
			}
		}
	}
	return b.String()
}
