package model

import (
	"iter"
	"math"
	"slices"
	"strings"
	"unique"
)

// KeyEntry is one key and its summary, the input of NewKeySetOf.
type KeyEntry struct {
	Name string
	KeyInfo
}

// KeySet is a Secret's keys, sorted by name, in 24 bytes a key where a map cost
// about 90: the name is an interned handle, the length a uint32 (a Secret holds
// at most 1 MiB), and TrimFP is stored apart, after the keys, only for the rare
// value whose white-space-normalised form differs. Build one with NewKeySet,
// NewKeySetOf or Set. The zero value is an empty set.
type KeySet struct {
	e []keyEntry
}

// keyEntry is a key (name set) or, after all keys, a TrimFP that differs from its
// key's FP (name zero, n the key's index).
type keyEntry struct {
	name unique.Handle[string]
	fp   Fingerprint
	n    uint32
}

// NewKeySet builds a KeySet from a map (for tests and literals).
func NewKeySet(m map[string]KeyInfo) KeySet {
	es := make([]KeyEntry, 0, len(m))
	for k, v := range m {
		es = append(es, KeyEntry{Name: k, KeyInfo: v})
	}
	return NewKeySetOf(es)
}

// NewKeySetOf builds a KeySet from entries in any order; of two entries with the
// same name the later wins. It sorts es in place.
func NewKeySetOf(es []KeyEntry) KeySet {
	if len(es) == 0 {
		return KeySet{}
	}
	slices.SortStableFunc(es, func(a, b KeyEntry) int { return strings.Compare(a.Name, b.Name) })
	// Keep the last of equal names.
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && es[i+1].Name == e.Name {
			continue
		}
		out = append(out, e)
	}
	es = out
	trims := 0
	for _, e := range es {
		if e.TrimFP != e.FP {
			trims++
		}
	}
	ks := KeySet{e: make([]keyEntry, len(es), len(es)+trims)}
	for i, e := range es {
		ks.e[i] = keyEntry{name: unique.Make(e.Name), fp: e.FP, n: clampLen(e.Len)}
		if e.TrimFP != e.FP {
			ks.e = append(ks.e, keyEntry{fp: e.TrimFP, n: uint32(i)})
		}
	}
	return ks
}

func clampLen(n int) uint32 {
	if n < 0 {
		return 0
	}
	if n > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

// keys is the sorted key part of the entries.
func (ks KeySet) keys() []keyEntry {
	n := len(ks.e)
	for n > 0 && ks.e[n-1].name == (unique.Handle[string]{}) {
		n--
	}
	return ks.e[:n]
}

func (ks KeySet) info(i int) KeyInfo {
	e := ks.e[i]
	ki := KeyInfo{Len: int(e.n), FP: e.fp, TrimFP: e.fp}
	for _, t := range ks.e[len(ks.keys()):] {
		if int(t.n) == i {
			ki.TrimFP = t.fp
		}
	}
	return ki
}

func (ks KeySet) find(name string) (int, bool) {
	return slices.BinarySearchFunc(ks.keys(), name, func(e keyEntry, n string) int { return strings.Compare(e.name.Value(), n) })
}

// Get returns the key's summary.
func (ks KeySet) Get(name string) (KeyInfo, bool) {
	if i, ok := ks.find(name); ok {
		return ks.info(i), true
	}
	return KeyInfo{}, false
}

// Has reports whether the key exists.
func (ks KeySet) Has(name string) bool {
	_, ok := ks.find(name)
	return ok
}

// Len is the number of keys.
func (ks KeySet) Len() int { return len(ks.keys()) }

// Names returns the key names, sorted.
func (ks KeySet) Names() []string {
	keys := ks.keys()
	out := make([]string, len(keys))
	for i, e := range keys {
		out[i] = e.name.Value()
	}
	return out
}

// All yields every key and its summary in name order.
func (ks KeySet) All() iter.Seq2[string, KeyInfo] {
	return func(yield func(string, KeyInfo) bool) {
		for i, e := range ks.keys() {
			if !yield(e.name.Value(), ks.info(i)) {
				return
			}
		}
	}
}

// Set adds or replaces a key while a record is being built.
func (ks *KeySet) Set(name string, ki KeyInfo) {
	es := make([]KeyEntry, 0, ks.Len()+1)
	for k, v := range ks.All() {
		es = append(es, KeyEntry{Name: k, KeyInfo: v})
	}
	*ks = NewKeySetOf(append(es, KeyEntry{Name: name, KeyInfo: ki}))
}

// String lists the key names (never anything of a value).
func (ks KeySet) String() string { return "[" + strings.Join(ks.Names(), " ") + "]" }

// NamedFP is one entry of an FPList.
type NamedFP struct {
	Name string
	FP   Fingerprint
}

// FPList maps key names to fingerprints, sorted by name (32 bytes an entry where a
// map cost about 60). Build one with NewFPList or Set.
type FPList []NamedFP

// NewFPList builds an FPList from a map (for tests and literals).
func NewFPList(m map[string]Fingerprint) FPList {
	if len(m) == 0 {
		return nil
	}
	l := make(FPList, 0, len(m))
	for k, v := range m {
		l = append(l, NamedFP{Name: k, FP: v})
	}
	slices.SortFunc(l, func(a, b NamedFP) int { return strings.Compare(a.Name, b.Name) })
	return l
}

func (l FPList) find(name string) (int, bool) {
	return slices.BinarySearchFunc(l, name, func(e NamedFP, n string) int { return strings.Compare(e.Name, n) })
}

// Get returns the fingerprint of a key.
func (l FPList) Get(name string) (Fingerprint, bool) {
	if i, ok := l.find(name); ok {
		return l[i].FP, true
	}
	return Fingerprint{}, false
}

// All yields every key and its fingerprint in name order.
func (l FPList) All() iter.Seq2[string, Fingerprint] {
	return func(yield func(string, Fingerprint) bool) {
		for _, e := range l {
			if !yield(e.Name, e.FP) {
				return
			}
		}
	}
}

// Set adds or replaces a key's fingerprint.
func (l *FPList) Set(name string, fp Fingerprint) {
	i, ok := l.find(name)
	if ok {
		(*l)[i].FP = fp
		return
	}
	*l = slices.Insert(*l, i, NamedFP{Name: name, FP: fp})
}
