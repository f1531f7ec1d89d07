package model

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// churn drives updates Secret updates across n Secrets into h: each update sets
// one of a Secret's keys to one of a few fingerprints (so values keep returning:
// flips) and names one of a few data writers. Simulated time advances by step per
// update. It returns the current records.
func churn(h *History, n, updates int, step time.Duration, seed uint64) []*Secret {
	const nKeys, nFPs = 4, 3
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("KEY_%d", i)
	}
	writers := []string{"externalsecrets.external-secrets.io/app", "kubectl-client-side-apply", "helm"}
	rng := rand.New(rand.NewPCG(seed, 7))
	cur := make([]*Secret, n)
	refs := make([]Ref, n)
	now := t0
	for i := range cur {
		refs[i] = Ref{Namespace: fmt.Sprintf("ns-%d", i%100), Name: fmt.Sprintf("secret-%d", i)}
		s := &Secret{ObjectMeta: ObjectMeta{Namespace: refs[i].Namespace, Name: refs[i].Name,
			UID: types.UID(fmt.Sprintf("uid-%d", i))}, Keys: KeySet{}}
		for _, k := range keys {
			s.Keys.Set(k, KeyInfo{Len: 16, FP: fp("v0")})
		}
		h.Observe(refs[i], nil, s, now)
		cur[i] = s
	}
	for u := 0; u < updates; u++ {
		i := rng.IntN(n)
		old := cur[i]
		next := &Secret{ObjectMeta: old.ObjectMeta, Keys: KeySet{}}
		for k, v := range old.Keys.All() {
			next.Keys.Set(k, v)
		}
		k := keys[rng.IntN(nKeys)]
		prev, _ := old.Keys.Get(k)
		v := prev
		for v.FP == prev.FP {
			v.FP = fp(fmt.Sprintf("v%d", rng.IntN(nFPs)))
		}
		next.Keys.Set(k, v)
		now = now.Add(step)
		next.Managers = []ManagedField{{Manager: writers[rng.IntN(len(writers))], Operation: "Update", Time: now, OwnsData: true}}
		h.Observe(refs[i], old, next, now)
		cur[i] = next
	}
	return cur
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkHistoryMemory measures the heap the history holds after many updates
// across 10k Secrets: the figure per Secret must not grow with the number of
// updates once the per-key, per-Secret and window bounds are reached.
//
//	go test ./internal/model/ -run '^$' -bench HistoryMemory -benchtime 1x
func BenchmarkHistoryMemory(b *testing.B) {
	const secrets = 10_000
	for _, updates := range []int{100_000, 1_000_000, 2_000_000} {
		b.Run(fmt.Sprintf("secrets=10k/updates=%d", updates), func(b *testing.B) {
			var histBytes, withHist uint64
			var flipped int
			for i := 0; i < b.N; i++ {
				base := heapInUse()
				h := NewHistory(HistoryOptions{})
				// 100 ms of simulated time per update: 100k updates span 2.8 h and 1M
				// span 28 h, both beyond the 1 h window.
				cur := churn(h, secrets, updates, 100*time.Millisecond, uint64(i+1))
				withHist = heapInUse()
				flipped = len(h.Flipped())
				runtime.KeepAlive(h)
				h = nil
				without := heapInUse()
				runtime.KeepAlive(cur)
				if withHist > without {
					histBytes = withHist - without
				}
				_ = base
			}
			b.ReportMetric(float64(histBytes)/secrets, "hist-B/secret")
			b.ReportMetric(float64(histBytes)/(1<<20), "hist-MiB")
			b.ReportMetric(float64(withHist)/(1<<20), "heap-inuse-MiB")
			b.ReportMetric(float64(flipped), "flipped-secrets")
		})
	}
}

// TestHistoryBounded checks the structural bounds under churn (no timing or heap
// assertions): entries per key, keys per Secret, and events per Secret.
func TestHistoryBounded(t *testing.T) {
	opts := HistoryOptions{EntriesPerKey: 3, KeysPerSecret: 2, EventsPerSecret: 5}
	h := NewHistory(opts)
	churn(h, 50, 20_000, time.Second, 1)
	if h.Len() != 50 {
		t.Fatalf("history of %d Secrets, want 50", h.Len())
	}
	for r, sh := range h.secrets {
		if len(sh.keys) > opts.KeysPerSecret {
			t.Errorf("%v: %d keys tracked", r, len(sh.keys))
		}
		for k, e := range sh.keys {
			if len(e) > opts.EntriesPerKey || cap(e) > 2*opts.EntriesPerKey {
				t.Errorf("%v/%s: %d entries (cap %d)", r, k, len(e), cap(e))
			}
		}
		if len(sh.flips) > opts.EventsPerSecret || len(sh.writers) > opts.EventsPerSecret {
			t.Errorf("%v: %d flips, %d writers kept", r, len(sh.flips), len(sh.writers))
		}
		if sh.flipsTotal == 0 || !sh.untracked {
			t.Errorf("%v: total %d untracked %v", r, sh.flipsTotal, sh.untracked)
		}
	}
}
