package parse

import (
	"errors"
	"strconv"
	"strings"
)

// Kinds of parse failure. Every error this package returns wraps exactly one of
// them (test with errors.Is) and is an *Error.
var (
	// ErrTooLarge: the input or one of its parts exceeds a documented limit.
	ErrTooLarge = errors.New("exceeds size limit")
	// ErrMalformed: the input is not well-formed base64, gzip, JSON or YAML, or a
	// field has the wrong type.
	ErrMalformed = errors.New("malformed")
	// ErrInvalid: the input is well-formed but an entry breaks a rule (e.g. a
	// Secret key name with a forbidden character).
	ErrInvalid = errors.New("invalid")
)

// Error locates a parse failure without quoting the input: every string in it is a
// constant of this package, never input bytes.
type Error struct {
	Input  string // what was parsed: "last-applied", "helm release", "expected-keys", ...
	Stage  string // "base64", "gzip", "json", "yaml", "manifest", or ""
	Field  string // a fixed field path such as "spec.data", or ""
	Kind   error  // ErrTooLarge, ErrMalformed or ErrInvalid
	Detail string // a fixed description, or ""
	Offset int64  // byte offset of the problem within the stage's input; -1 when unknown
	Index  int    // document or entry index; -1 when not applicable
	Limit  int64  // the limit exceeded (ErrTooLarge), or 0
	More   int    // how many further problems of the same input were not described
}

func newErr(input, stage string, kind error) *Error {
	return &Error{Input: input, Stage: stage, Kind: kind, Offset: -1, Index: -1}
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Input)
	if e.Stage != "" {
		b.WriteString(": ")
		b.WriteString(e.Stage)
	}
	if e.Index >= 0 {
		b.WriteString(": ")
		if e.Stage == "manifest" || e.Stage == "yaml" {
			b.WriteString("document ")
		} else {
			b.WriteString("entry ")
		}
		b.WriteString(strconv.Itoa(e.Index))
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(" (")
		b.WriteString(e.Detail)
		b.WriteString(")")
	}
	if e.Offset >= 0 {
		b.WriteString(" at offset ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
	}
	if e.Limit > 0 {
		b.WriteString(", limit ")
		b.WriteString(strconv.FormatInt(e.Limit, 10))
	}
	if e.More > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(e.More))
		b.WriteString(" more")
	}
	return b.String()
}

// Unwrap returns the kind (ErrTooLarge, ErrMalformed, ErrInvalid).
func (e *Error) Unwrap() error { return e.Kind }
