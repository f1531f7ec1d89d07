package transform

// Protocol Buffers primitives of the wire decoder (wire*.go): a reader over one
// message's bytes that never allocates. It follows the checks of the
// gogo-generated Unmarshal methods of k8s.io/api (the typed path), so a message
// both accept decodes to the same values: varints of at most 10 bytes, lengths
// that stay inside the message, unknown fields skipped as skipGenerated does
// (groups included), a known field with the wrong wire type an error.

import (
	"errors"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	errPBOverflow = errors.New("wire: varint overflow")
	errPBEOF      = errors.New("wire: unexpected end of message")
	errPBLength   = errors.New("wire: negative length")
	errPBWireType = errors.New("wire: wrong wire type")
	errPBTag      = errors.New("wire: illegal tag")
	errPBGroup    = errors.New("wire: unexpected end of group")
	errPBRepeated = errors.New("wire: singular message field repeated") // the typed path merges; we fall back
)

// pbuf reads one message: b is the message, i the read position.
type pbuf struct {
	b []byte
	i int
}

func (p *pbuf) more() bool { return p.i < len(p.b) }

// varint reads a varint as the generated code does (at most 64 bits of shift).
func (p *pbuf) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errPBOverflow
		}
		if p.i >= len(p.b) {
			return 0, errPBEOF
		}
		c := p.b[p.i]
		p.i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// tag reads a field's key: its number and wire type. A wire type 4 (end group)
// or a field number ≤ 0 is an error, as in the generated code.
func (p *pbuf) tag() (num int32, wt int, err error) {
	start := p.i
	w, err := p.varint()
	if err != nil {
		return 0, 0, err
	}
	num, wt = int32(w>>3), int(w&7)
	if wt == 4 {
		return 0, 0, errPBGroup
	}
	if num <= 0 {
		p.i = start
		return 0, 0, errPBTag
	}
	return num, wt, nil
}

// bytes reads a length-delimited field's content (aliasing the input).
func (p *pbuf) bytes() ([]byte, error) {
	n, err := p.varint()
	if err != nil {
		return nil, err
	}
	l := int(n)
	if l < 0 {
		return nil, errPBLength
	}
	end := p.i + l
	if end < 0 {
		return nil, errPBLength
	}
	if end > len(p.b) {
		return nil, errPBEOF
	}
	out := p.b[p.i:end:end]
	p.i = end
	return out, nil
}

// field reads a length-delimited known field (wire type 2 required).
func (p *pbuf) field(wt int) ([]byte, error) {
	if wt != 2 {
		return nil, errPBWireType
	}
	return p.bytes()
}

// boolean reads a varint known field as a bool.
func (p *pbuf) boolean(wt int) (bool, error) {
	if wt != 0 {
		return false, errPBWireType
	}
	v, err := p.varint()
	return v != 0, err
}

// skip skips the rest of an unknown field whose tag was read at start (the
// reader is positioned after the tag), as skipGenerated does from start.
func (p *pbuf) skip(start int) error {
	p.i = start
	depth := 0
	for p.i < len(p.b) {
		w, err := p.varint()
		if err != nil {
			return err
		}
		switch w & 7 {
		case 0:
			if _, err := p.varint(); err != nil {
				return err
			}
		case 1:
			p.i += 8
		case 2:
			n, err := p.varint()
			if err != nil {
				return err
			}
			if int(n) < 0 {
				return errPBLength
			}
			p.i += int(n)
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return errPBGroup
			}
			depth--
		case 5:
			p.i += 4
		default:
			return errPBWireType
		}
		if p.i < 0 {
			return errPBLength
		}
		if depth == 0 {
			if p.i > len(p.b) {
				return errPBEOF
			}
			return nil
		}
	}
	return errPBEOF
}

// mapEntry reads one map<string, T> entry whose bytes are p.b[start:end] (end
// is the entry's end): key (field 1) and value (field 2), the last occurrence of
// each winning. As in the generated code, the wire type of fields 1 and 2 is
// not checked and their lengths are bounded by the enclosing message, not by
// the entry; other fields are skipped within the entry.
func (p *pbuf) mapEntry(end int) (key, val []byte, hasVal bool, err error) {
	for p.i < end {
		pre := p.i
		w, err := p.varint()
		if err != nil {
			return nil, nil, false, err
		}
		switch int32(w >> 3) {
		case 1:
			if key, err = p.bytes(); err != nil {
				return nil, nil, false, err
			}
		case 2:
			if val, err = p.bytes(); err != nil {
				return nil, nil, false, err
			}
			hasVal = true
		default:
			sub := pbuf{b: p.b[:end], i: pre}
			if err := sub.skip(pre); err != nil {
				return nil, nil, false, err
			}
			p.i = sub.i
		}
	}
	p.i = end
	return key, val, hasVal, nil
}

// entry reads a map field: the entry's length, then the entry.
func (p *pbuf) entry(wt int) (key, val []byte, hasVal bool, err error) {
	if wt != 2 {
		return nil, nil, false, errPBWireType
	}
	n, err := p.varint()
	if err != nil {
		return nil, nil, false, err
	}
	l := int(n)
	if l < 0 {
		return nil, nil, false, errPBLength
	}
	end := p.i + l
	if end < 0 {
		return nil, nil, false, errPBLength
	}
	if end > len(p.b) {
		return nil, nil, false, errPBEOF
	}
	return p.mapEntry(end)
}

// pbTime decodes a metav1.Time as its Unmarshal does (seconds only, Local).
func pbTime(b []byte) (time.Time, error) {
	var t metav1.Time
	if err := t.Unmarshal(b); err != nil {
		return time.Time{}, err
	}
	return t.Time, nil
}

// view is a string aliasing b: only for a lookup or for model.Intern, which
// keeps a copy (unique.Make clones strings), never to be stored.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// intern is the canonical copy of the string b holds, without allocating when
// it is known already.
func intern(b []byte) string { return model.Intern(view(b)) }

// once marks a singular message field as seen and errors on a second
// occurrence: the generated code merges the two, which the wire decoder does not
// reproduce; the typed path decodes such a message instead.
func once(seen *uint64, bit uint) error {
	if *seen&(1<<bit) != 0 {
		return errPBRepeated
	}
	*seen |= 1 << bit
	return nil
}
