package model

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sort"
	"sync"
)

// Fingerprint is the first 12 bytes of HMAC-SHA256(value) under a per-process random
// key. It tells two values apart without revealing either: it cannot be reversed,
// and the key changes at every start, so fingerprints mean nothing outside the
// process that made them.
type Fingerprint [12]byte

// IsZero reports whether f was never set.
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }

// Short renders a fingerprint for debug logs. It is safe to print: it is keyed and
// the key never leaves the process.
func (f Fingerprint) Short() string { return hex.EncodeToString(f[:4]) }

// Fingerprinter computes keyed fingerprints.
type Fingerprinter struct {
	pool sync.Pool
}

// NewFingerprinter draws a random key. It panics only if the system's random source
// fails, which Go treats as fatal anyway.
func NewFingerprinter() *Fingerprinter {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("driftwatch: cannot draw fingerprint key: " + err.Error())
	}
	return NewFingerprinterWithKey(key)
}

// NewFingerprinterWithKey is for tests that need stable fingerprints.
func NewFingerprinterWithKey(key []byte) *Fingerprinter {
	k := append([]byte(nil), key...)
	f := &Fingerprinter{}
	f.pool.New = func() any { return &macState{h: hmac.New(sha256.New, k)} }
	return f
}

// macState is a pooled HMAC with its output buffer (h.Sum into a local array
// would escape: one allocation per value).
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// Sum fingerprints one value.
func (f *Fingerprinter) Sum(value []byte) Fingerprint {
	st := f.pool.Get().(*macState)
	st.h.Reset()
	st.h.Write(value)
	out := st.h.Sum(st.sum[:0])
	var fp Fingerprint
	copy(fp[:], out)
	clear(st.sum[:])
	f.pool.Put(st)
	return fp
}

// Key summarises one Secret value: length, fingerprint, and fingerprint of its
// white-space-normalised form.
func (f *Fingerprinter) Key(value []byte) KeyInfo {
	ki := KeyInfo{Len: len(value), FP: f.Sum(value)}
	norm := normalise(value)
	if bytes.Equal(norm, value) {
		ki.TrimFP = ki.FP
	} else {
		ki.TrimFP = f.Sum(norm)
	}
	return ki
}

func normalise(v []byte) []byte {
	t := bytes.TrimSpace(v)
	if bytes.Contains(t, []byte("\r\n")) {
		t = bytes.ReplaceAll(t, []byte("\r\n"), []byte("\n"))
	}
	return t
}

func unionSorted(lists ...[]string) []string {
	seen := map[string]struct{}{}
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if _, ok := seen[s]; ok {
				continue
			}
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
