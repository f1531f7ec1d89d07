package kube

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

// A restarted kube-apiserver answers 403 to everything until its RBAC caches
// load (seen in test/e2e/faults: 1.6 s of "clusterrole not found" after the
// restart). A synced resource is paused only once the denial has lasted
// DenialGrace; a probe inside the grace that is still denied changes nothing,
// and a successful one clears the suspicion.
func TestDenialPausesOnlyAfterTheGrace(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }

	cs := fake.NewClientset()
	var deny atomic.Bool
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if deny.Load() {
			return true, nil, forbidden
		}
		return false, nil, nil
	})
	m := NewManager(cs, nil, nil, model.NewStore(nil), newTransformer(), Options{
		DiscoveryInterval: time.Hour, // the test drives the rechecks
		DenialGrace:       10 * time.Second,
		Now:               now,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for !m.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready")
		}
		time.Sleep(time.Millisecond)
	}
	m.mu.Lock()
	g := m.groups[model.ResPods]
	m.mu.Unlock()
	if g == nil {
		t.Fatal("no pods group")
	}
	onWatchError := m.watchErrorHandler(g)

	// The restart: one denied watch, a denied probe a moment later, then
	// the RBAC caches load.
	deny.Store(true)
	onWatchError(ctx, nil, forbidden)
	advance(200 * time.Millisecond)
	m.recheckDegraded(ctx)
	if g.degraded.Load() {
		t.Fatal("paused 200ms after the first 403: a restarting apiserver would drop every pod finding")
	}
	advance(2 * time.Second)
	deny.Store(false)
	m.recheckDegraded(ctx)
	if g.degraded.Load() || g.suspect.Load() {
		t.Fatalf("after access came back: degraded %v, suspect %v; want neither", g.degraded.Load(), g.suspect.Load())
	}

	// A real revocation: still denied after the grace, so paused.
	deny.Store(true)
	onWatchError(ctx, nil, forbidden)
	for i := 0; i < 4; i++ {
		advance(3 * time.Second)
		m.recheckDegraded(ctx)
		if want := i == 3; g.degraded.Load() != want {
			t.Fatalf("%v after the first 403: degraded %v, want %v", time.Duration(i+1)*3*time.Second, g.degraded.Load(), want)
		}
	}
	// Restored.
	deny.Store(false)
	m.recheckDegraded(ctx)
	if g.degraded.Load() {
		t.Fatal("still paused after access was restored")
	}
}
