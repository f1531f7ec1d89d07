package agent

import (
	"context"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSteadyGCPercentAfterSync: Config.SteadyGCPercent is set once the caches
// have synced, not before (the sync keeps the runtime's setting).
func TestSteadyGCPercentAfterSync(t *testing.T) {
	gcPercent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	orig := gcPercent()
	defer debug.SetGCPercent(orig)
	const steady = 37
	if orig == steady {
		t.Fatalf("the test binary already runs at GOGC %d", steady)
	}
	cs := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", UID: "s1"},
		Data: map[string][]byte{"k": []byte("v")}})
	fd := cs.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "secrets", Namespaced: true, Kind: "Secret"}}}}
	a := New(Clients{Core: cs, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Discovery: cs.Discovery()},
		Config{Logger: slog.New(slog.DiscardHandler), DiscoveryInterval: time.Hour})
	logs := &logRecords{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); a.logWhenReady(ctx, slog.New(logs), false, steady) }()
	time.Sleep(500 * time.Millisecond) // logWhenReady polls every 200 ms
	if got := gcPercent(); got != orig {
		t.Fatalf("GC percent %d before the caches synced, want the runtime's %d", got, orig)
	}
	wg.Add(1)
	go func() { defer wg.Done(); a.Manager.Run(ctx) }()
	for deadline := time.Now().Add(time.Minute); !logs.has("caches synced: garbage collection"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no log line of the GC percent after the sync")
		}
	}
	if got := gcPercent(); got != steady {
		t.Fatalf("GC percent %d after the sync, want %d", got, steady)
	}
}

func (l *logRecords) has(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if strings.HasPrefix(r.Message, prefix) {
			return true
		}
	}
	return false
}
