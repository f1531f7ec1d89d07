package model

import (
	"iter"
	"slices"
	"strings"
)

// KeyEntry is one key of a KeySet.
type KeyEntry struct {
	Name string
	KeyInfo
}

// KeySet is a Secret's keys, sorted by name: a slice costs 48 bytes a key where a
// map cost about 90. Build one with NewKeySet or Set; never append to it directly.
type KeySet []KeyEntry

// NewKeySet builds a KeySet from a map (for tests and literals).
func NewKeySet(m map[string]KeyInfo) KeySet {
	if len(m) == 0 {
		return nil
	}
	ks := make(KeySet, 0, len(m))
	for k, v := range m {
		ks = append(ks, KeyEntry{Name: k, KeyInfo: v})
	}
	slices.SortFunc(ks, func(a, b KeyEntry) int { return strings.Compare(a.Name, b.Name) })
	return ks
}

func (ks KeySet) find(name string) (int, bool) {
	return slices.BinarySearchFunc(ks, name, func(e KeyEntry, n string) int { return strings.Compare(e.Name, n) })
}

// Get returns the key's summary.
func (ks KeySet) Get(name string) (KeyInfo, bool) {
	if i, ok := ks.find(name); ok {
		return ks[i].KeyInfo, true
	}
	return KeyInfo{}, false
}

// Has reports whether the key exists.
func (ks KeySet) Has(name string) bool {
	_, ok := ks.find(name)
	return ok
}

// Len is the number of keys.
func (ks KeySet) Len() int { return len(ks) }

// Names returns the key names, sorted.
func (ks KeySet) Names() []string {
	out := make([]string, len(ks))
	for i, e := range ks {
		out[i] = e.Name
	}
	return out
}

// All yields every key and its summary in name order.
func (ks KeySet) All() iter.Seq2[string, KeyInfo] {
	return func(yield func(string, KeyInfo) bool) {
		for _, e := range ks {
			if !yield(e.Name, e.KeyInfo) {
				return
			}
		}
	}
}

// Set adds or replaces a key while a record is being built.
func (ks *KeySet) Set(name string, ki KeyInfo) {
	i, ok := ks.find(name)
	if ok {
		(*ks)[i].KeyInfo = ki
		return
	}
	*ks = slices.Insert(*ks, i, KeyEntry{Name: name, KeyInfo: ki})
}

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
