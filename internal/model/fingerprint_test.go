package model

import (
	"crypto/hmac"
	"crypto/sha256"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestFingerprintIsTruncatedHMAC(t *testing.T) {
	key := []byte("k")
	f := NewFingerprinterWithKey(key)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ { // pooled state shared between goroutines
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, v := range []string{"", "a", "value-two", " padded\r\n"} {
				m := hmac.New(sha256.New, key)
				m.Write([]byte(v))
				var want Fingerprint
				copy(want[:], m.Sum(nil))
				if got := f.Sum([]byte(v)); got != want {
					t.Errorf("Sum(%q) = %x, want %x", v, got, want)
				}
			}
		}()
	}
	wg.Wait()
	if k := f.Key([]byte("x")); k.TrimFP != k.FP || k.Len != 1 {
		t.Fatalf("normalised form equal to the value: %+v", k)
	}
	if k := f.Key([]byte(" x\r\ny\n")); k.TrimFP != f.Sum([]byte("x\ny")) || k.FP == k.TrimFP {
		t.Fatalf("normalised form differs: %+v", k)
	}
}

func BenchmarkFingerprintKey(b *testing.B) {
	f := NewFingerprinterWithKey([]byte("bench"))
	v := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") // 64 B, the bench's value size
	b.ReportAllocs()
	for b.Loop() {
		f.Key(v)
	}
}

// WrittenKeys sorts and deduplicates in one allocation what unionSorted did
// with a map: the same keys for any spec.data and template keys.
func TestWrittenKeysEqualsUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	pick := func() []string {
		var out []string
		for range r.IntN(6) {
			out = append(out, []string{"", "a", "b", "c", "user", "password"}[r.IntN(6)])
		}
		return out
	}
	for range 2000 {
		w := ESWrites{DataKeys: pick(), TemplateKeys: pick()}
		if w.RendersOnly() {
			continue
		}
		var data []string
		for _, k := range w.DataKeys {
			if k != "" {
				data = append(data, k)
			}
		}
		if got, want := w.WrittenKeys(), unionSorted(data, w.TemplateKeys); !slices.Equal(got, want) {
			t.Fatalf("%+v: WrittenKeys %q, want %q", w, got, want)
		}
	}
}
