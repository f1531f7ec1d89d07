package model

import (
	"crypto/hmac"
	"crypto/sha256"
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
