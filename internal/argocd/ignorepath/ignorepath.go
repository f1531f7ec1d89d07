package ignorepath

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Syntax says how an ignoreDifferences path is written.
type Syntax int

const (
	JSONPointer Syntax = iota // RFC 6901, spec.ignoreDifferences[].jsonPointers
	JQ                        // jq path expression, spec.ignoreDifferences[].jqPathExpressions
)

// SegKind is what one path step does.
type SegKind int

const (
	SegField  SegKind = iota // an object member: Name
	SegIndex                 // one list element: Index (jq allows negative indexes)
	SegIter                  // every list element: jq [] (also .[])
	SegSlice                 // a range of list elements: jq [N:M]
	SegAppend                // the JSON-pointer "-" (past the last element)
	SegFilter                // jq select(...): narrows, does not move
)

// Segment is one step of a path.
type Segment struct {
	Kind SegKind
	// Name is the member name of a SegField, the raw condition of a SegFilter, or
	// the bounds of a SegSlice ("1:3", ":2").
	Name  string
	Index int
	// Optional is jq's trailing '?' (errors suppressed).
	Optional bool
}

// IsList reports whether the step selects elements of a list.
func (s Segment) IsList() bool {
	switch s.Kind {
	case SegIndex, SegIter, SegSlice, SegAppend:
		return true
	}
	return false
}

// Path is a parsed ignoreDifferences path.
type Path struct {
	Syntax   Syntax
	Segments []Segment
	// IntoList is true when the path reaches into the elements of a list: it has a
	// list step (index, [], [N:M], "-").
	IntoList bool
}

// Fields returns the member names up to the first non-field step, e.g.
// [spec data] for /spec/data/0/remoteRef.
func (p Path) Fields() []string {
	var out []string
	for _, s := range p.Segments {
		switch s.Kind {
		case SegField:
			out = append(out, s.Name)
		case SegFilter:
			// a filter on the object itself does not move
		default:
			return out
		}
	}
	return out
}

// ListField returns the member names leading to the first list step, and whether
// there is one.
func (p Path) ListField() ([]string, bool) {
	var out []string
	for _, s := range p.Segments {
		switch {
		case s.Kind == SegField:
			out = append(out, s.Name)
		case s.IsList():
			return out, true
		}
	}
	return nil, false
}

// HasFilter reports whether a jq select(...) is part of the path.
func (p Path) HasFilter() bool {
	for _, s := range p.Segments {
		if s.Kind == SegFilter {
			return true
		}
	}
	return false
}

// Reach says how an ignored path relates to the lists of an object.
type Reach int

const (
	ReachNone        Reach = iota // no list involved
	ReachWholeList                // the path is a whole list field (e.g. ExternalSecret /spec/data)
	ReachIntoElement              // the path reaches into list elements
)

func (r Reach) String() string {
	switch r {
	case ReachWholeList:
		return "whole_list"
	case ReachIntoElement:
		return "into_element"
	}
	return "none"
}

// knownLists are the list fields of kinds driftwatch knows, by group/kind. They
// matter for JSON pointers and jq paths that name the list without stepping into it.
var knownLists = []struct {
	group, kind string
	fields      [][]string
}{
	{"external-secrets.io", "ExternalSecret", [][]string{{"spec", "data"}, {"spec", "dataFrom"}}},
}

// Reach classifies the path for objects of group/kind, which may be Argo CD globs
// ("*"). A list step anywhere is ReachIntoElement. A path that is exactly one of
// the known list fields of the kind (ExternalSecret spec.data / spec.dataFrom) is
// ReachWholeList. Anything else, including an ancestor such as /spec, is
// ReachNone: ignoring a whole spec is a deliberate freeze, not the list trap.
func (p Path) Reach(group, kind string) Reach {
	if p.IntoList {
		return ReachIntoElement
	}
	f := p.Fields()
	if len(f) != countFields(p.Segments) {
		return ReachNone
	}
	for _, kl := range knownLists {
		if !globMatch(group, kl.group) || !globMatch(kind, kl.kind) {
			continue
		}
		for _, lf := range kl.fields {
			if equalStrings(f, lf) {
				return ReachWholeList
			}
		}
	}
	return ReachNone
}

func countFields(segs []Segment) int {
	n := 0
	for _, s := range segs {
		if s.Kind == SegField {
			n++
		}
	}
	return n
}

func globMatch(pattern, s string) bool {
	if pattern == s || pattern == "*" {
		return true
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// String renders the path canonically: JSON pointers re-escaped; jq with
// identifier members as .name, other members quoted, list steps bracketed (a
// and select(...) conditions as written.
func (p Path) String() string {
	var b strings.Builder
	if p.Syntax == JSONPointer {
		for _, s := range p.Segments {
			b.WriteByte('/')
			switch s.Kind {
			case SegField:
				b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Name))
			case SegIndex:
				b.WriteString(strconv.Itoa(s.Index))
			case SegAppend:
				b.WriteByte('-')
			}
		}
		return b.String()
	}
	frag := true // at the start of a pipeline term
	for _, s := range p.Segments {
		if s.Kind == SegFilter {
			if b.Len() > 0 {
				b.WriteString(" | ")
			}
			b.WriteString("select(" + s.Name + ")")
			frag = true
			continue
		}
		if frag && b.Len() > 0 {
			b.WriteString(" | ")
		}
		lead := ""
		if frag {
			lead = "."
		}
		switch s.Kind {
		case SegField:
			if isIdentName(s.Name) {
				b.WriteString("." + s.Name)
			} else {
				b.WriteString("." + strconv.Quote(s.Name))
			}
		case SegIndex:
			b.WriteString(lead + "[" + strconv.Itoa(s.Index) + "]")
		case SegIter:
			b.WriteString(lead + "[]")
		case SegSlice:
			b.WriteString(lead + "[" + s.Name + "]")
		}
		if s.Optional {
			b.WriteByte('?')
		}
		frag = false
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

func isIdentName(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdent(s[i]) {
			return false
		}
	}
	return true
}

// ErrPath is wrapped by every parse error.
var ErrPath = errors.New("invalid ignoreDifferences path")

// MaxPathLen bounds the paths parsed.
const MaxPathLen = 4096

func pathErr(syntax string, pos int, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s", ErrPath, syntax, pos, fmt.Sprintf(format, args...))
}

// isMapParent: the children of the last segment are map keys even when numeric:
// top-level data/stringData/binaryData, and labels, annotations, matchLabels,
// nodeSelector anywhere.
func isMapParent(segs []Segment) bool {
	n := len(segs)
	if n == 0 || segs[n-1].Kind != SegField {
		return false
	}
	switch name := segs[n-1].Name; name {
	case "labels", "annotations", "matchLabels", "nodeSelector":
		return true
	case "data", "stringData", "binaryData":
		return n == 1
	}
	return false
}

// ParseJSONPointer parses an RFC 6901 JSON pointer ("" or "/a/b~1c/0"). A segment
// that is an array index ("0" or a number without leading zero) or "-" is a list
// step when it follows another segment, unless the parent is a known map field
// (top-level data/stringData/binaryData, or labels, annotations, matchLabels,
// nodeSelector): Kubernetes objects are objects at the root, and map keys may be
// numeric.
func ParseJSONPointer(s string) (Path, error) {
	p := Path{Syntax: JSONPointer}
	if len(s) > MaxPathLen {
		return p, pathErr("jsonPointer", MaxPathLen, "longer than %d bytes", MaxPathLen)
	}
	if !utf8.ValidString(s) {
		return p, pathErr("jsonPointer", 0, "not valid UTF-8")
	}
	if s == "" {
		return p, nil
	}
	if s[0] != '/' {
		return p, pathErr("jsonPointer", 0, "must start with '/'")
	}
	pos := 1
	for _, raw := range strings.Split(s[1:], "/") {
		tok, err := unescapePointer(raw, pos)
		if err != nil {
			return Path{Syntax: JSONPointer}, err
		}
		n := len(p.Segments)
		list := n > 0 && (p.Segments[n-1].IsList() || !isMapParent(p.Segments))
		switch {
		case list && tok == "-":
			p.Segments = append(p.Segments, Segment{Kind: SegAppend})
			p.IntoList = true
		case list && isArrayIndex(tok):
			idx, err := strconv.Atoi(tok)
			if err != nil {
				return Path{Syntax: JSONPointer}, pathErr("jsonPointer", pos, "index out of range")
			}
			p.Segments = append(p.Segments, Segment{Kind: SegIndex, Index: idx})
			p.IntoList = true
		default:
			p.Segments = append(p.Segments, Segment{Kind: SegField, Name: tok})
		}
		pos += len(raw) + 1
	}
	return p, nil
}

// isArrayIndex: RFC 6901 array-index = %x30 / ( %x31-39 *(%x30-39) ), checked on
// the raw (unescaped) token, which for digits is the same.
func isArrayIndex(tok string) bool {
	if tok == "" || len(tok) > 9 {
		return false
	}
	if tok == "0" {
		return true
	}
	if tok[0] < '1' || tok[0] > '9' {
		return false
	}
	for i := 1; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

func unescapePointer(tok string, pos int) (string, error) {
	if !strings.Contains(tok, "~") {
		return tok, nil
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c != '~' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(tok) {
			return "", pathErr("jsonPointer", pos+i, "'~' must be followed by 0 or 1")
		}
		switch tok[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", pathErr("jsonPointer", pos+i, "'~' must be followed by 0 or 1")
		}
		i++
	}
	return b.String(), nil
}

// ParseJQ parses the jq path expressions Argo CD users write in
// jqPathExpressions: a path of member accesses (.a, ."a-b", .["a/b"], .a.b),
// list steps ([], [N], [-N], [N:M], each optionally followed by '?'), pipes
// between path fragments (`... | .b`) and select(<condition>) filters. The
// condition is checked for balanced parentheses, brackets and well-formed strings
// and kept as written, not interpreted. Anything else (other functions, recursive
// descent "..", arithmetic, alternatives) is an error: a path driftwatch cannot
// read is reported, not guessed at.
func ParseJQ(s string) (Path, error) {
	p := Path{Syntax: JQ}
	if len(s) > MaxPathLen {
		return p, pathErr("jq", MaxPathLen, "longer than %d bytes", MaxPathLen)
	}
	if !utf8.ValidString(s) {
		return p, pathErr("jq", 0, "not valid UTF-8")
	}
	q := &jqParser{s: s}
	if err := q.parse(); err != nil {
		return Path{Syntax: JQ}, err
	}
	p.Segments = q.segs
	for _, sg := range p.Segments {
		if sg.IsList() {
			p.IntoList = true
		}
	}
	return p, nil
}

type jqParser struct {
	s    string
	i    int
	segs []Segment
}

func (q *jqParser) err(format string, args ...any) error {
	return pathErr("jq", q.i, format, args...)
}

func (q *jqParser) skipSpace() {
	for q.i < len(q.s) {
		switch q.s[q.i] {
		case ' ', '\t', '\n', '\r':
			q.i++
		default:
			return
		}
	}
}

func (q *jqParser) eof() bool { return q.i >= len(q.s) }

// parse: pipeline := term ('|' term)*; term := path | select(...)
func (q *jqParser) parse() error {
	q.skipSpace()
	if q.eof() {
		return q.err("empty expression")
	}
	for {
		if err := q.term(); err != nil {
			return err
		}
		q.skipSpace()
		if q.eof() {
			return nil
		}
		if q.s[q.i] != '|' {
			return q.err("unexpected %q", q.s[q.i])
		}
		q.i++
		q.skipSpace()
		if q.eof() {
			return q.err("expression expected after '|'")
		}
	}
}

func (q *jqParser) term() error {
	if strings.HasPrefix(q.s[q.i:], "select") {
		return q.selectFilter()
	}
	if q.s[q.i] != '.' {
		return q.err("a path must start with '.'")
	}
	return q.path()
}

// path := '.' ( ident | string | '[' ... ']' )? step*
// step := '.' (ident | string) | '[' ... ']' | '.[' ... ']' , each with optional '?'
func (q *jqParser) path() error {
	q.i++ // leading '.'
	if q.i < len(q.s) && q.s[q.i] == '.' {
		return q.err("recursive descent '..' is not supported")
	}
	first := true
	for {
		if q.eof() {
			return nil
		}
		c := q.s[q.i]
		switch {
		case first && (isIdentStart(c) || c == '"'):
			if err := q.member(); err != nil {
				return err
			}
		case c == '[':
			if err := q.bracket(); err != nil {
				return err
			}
		case c == '.':
			q.i++
			if q.eof() {
				return q.err("member name expected after '.'")
			}
			switch c2 := q.s[q.i]; {
			case c2 == '[':
				if err := q.bracket(); err != nil {
					return err
				}
			case isIdentStart(c2) || c2 == '"':
				if err := q.member(); err != nil {
					return err
				}
			default:
				return q.err("member name expected after '.'")
			}
		default:
			return nil // end of this path fragment; the caller checks what follows
		}
		first = false
		q.optional()
	}
}

func (q *jqParser) optional() {
	if q.i < len(q.s) && q.s[q.i] == '?' {
		q.i++
		if n := len(q.segs); n > 0 {
			q.segs[n-1].Optional = true
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func (q *jqParser) member() error {
	if q.s[q.i] == '"' {
		name, err := q.str()
		if err != nil {
			return err
		}
		q.segs = append(q.segs, Segment{Kind: SegField, Name: name})
		return nil
	}
	start := q.i
	for q.i < len(q.s) && isIdent(q.s[q.i]) {
		q.i++
	}
	q.segs = append(q.segs, Segment{Kind: SegField, Name: q.s[start:q.i]})
	return nil
}

// str reads a JSON-style double-quoted string (jq string literals without
// interpolation).
func (q *jqParser) str() (string, error) {
	start := q.i
	q.i++ // opening quote
	for q.i < len(q.s) {
		switch q.s[q.i] {
		case '\\':
			if q.i+1 < len(q.s) && q.s[q.i+1] == '(' {
				return "", q.err("string interpolation is not supported")
			}
			q.i += 2
		case '"':
			q.i++
			v, err := strconv.Unquote(q.s[start:q.i])
			if err != nil {
				q.i = start
				return "", q.err("malformed string literal")
			}
			return v, nil
		default:
			q.i++
		}
	}
	q.i = start
	return "", q.err("unterminated string")
}

// bracket := '[' ws ( ']' | string ws ']' | int ws ']' | int? ws ':' ws int? ws ']' )
func (q *jqParser) bracket() error {
	q.i++ // '['
	q.skipSpace()
	if q.eof() {
		return q.err("unterminated '['")
	}
	switch c := q.s[q.i]; {
	case c == ']':
		q.i++
		q.segs = append(q.segs, Segment{Kind: SegIter})
		return nil
	case c == '"':
		name, err := q.str()
		if err != nil {
			return err
		}
		q.segs = append(q.segs, Segment{Kind: SegField, Name: name})
		return q.close()
	}
	lo, hasLo, err := q.int()
	if err != nil {
		return err
	}
	q.skipSpace()
	if !q.eof() && q.s[q.i] == ':' {
		q.i++
		q.skipSpace()
		hi, hasHi, err := q.int()
		if err != nil {
			return err
		}
		if !hasLo && !hasHi {
			return q.err("slice needs a bound")
		}
		bounds := ":"
		if hasLo {
			bounds = strconv.Itoa(lo) + bounds
		}
		if hasHi {
			bounds += strconv.Itoa(hi)
		}
		q.segs = append(q.segs, Segment{Kind: SegSlice, Name: bounds})
		return q.close()
	}
	if !hasLo {
		return q.err("index, string or ']' expected")
	}
	q.segs = append(q.segs, Segment{Kind: SegIndex, Index: lo})
	return q.close()
}

func (q *jqParser) close() error {
	q.skipSpace()
	if q.eof() || q.s[q.i] != ']' {
		return q.err("']' expected")
	}
	q.i++
	return nil
}

// int reads an optional decimal integer, possibly negative.
func (q *jqParser) int() (int, bool, error) {
	start := q.i
	if q.i < len(q.s) && q.s[q.i] == '-' {
		q.i++
	}
	d := q.i
	for q.i < len(q.s) && q.s[q.i] >= '0' && q.s[q.i] <= '9' {
		q.i++
	}
	if q.i == d {
		if q.i != start {
			return 0, false, q.err("digit expected")
		}
		return 0, false, nil
	}
	n, err := strconv.Atoi(q.s[start:q.i])
	if err != nil || n > 1<<30 || n < -(1<<30) {
		return 0, false, q.err("index out of range")
	}
	return n, true, nil
}

// selectFilter := 'select' ws '(' balanced ')'
func (q *jqParser) selectFilter() error {
	q.i += len("select")
	q.skipSpace()
	if q.eof() || q.s[q.i] != '(' {
		return q.err("'(' expected after select")
	}
	open := q.i
	q.i++
	depth := []byte{')'}
	for q.i < len(q.s) {
		c := q.s[q.i]
		switch c {
		case '"':
			if _, err := q.str(); err != nil {
				return err
			}
			continue
		case '(':
			depth = append(depth, ')')
		case '[':
			depth = append(depth, ']')
		case '{':
			depth = append(depth, '}')
		case ')', ']', '}':
			if depth[len(depth)-1] != c {
				return q.err("unbalanced %q", c)
			}
			depth = depth[:len(depth)-1]
			if len(depth) == 0 {
				cond := strings.TrimSpace(q.s[open+1 : q.i])
				q.i++
				if cond == "" {
					return q.err("empty select condition")
				}
				q.segs = append(q.segs, Segment{Kind: SegFilter, Name: cond})
				return nil
			}
		}
		q.i++
	}
	return q.err("unterminated select(")
}
