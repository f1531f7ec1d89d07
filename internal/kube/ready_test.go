package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Ready must mean "the model holds the initial list", not "the informer's cache
// does": the event handlers that fill the model run asynchronously behind the
// cache, and a scrape in between would report every Secret not yet delivered as
// absent. Found by the scrape benchmark (thousands of false absent series right
// after sync); this test fails when readiness looks only at the informers.
func TestReadyOnlyOnceTheModelHoldsTheInitialList(t *testing.T) {
	const n = 3000
	objs := make([]runtime.Object, 0, 2*n)
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i%20)
		objs = append(objs,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s-%d", i)}, Data: map[string][]byte{"K": []byte("v")}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%d", i)}})
	}
	for round := 0; round < 3; round++ {
		store := model.NewStore(model.NewHistory(model.HistoryOptions{}))
		m := NewManager(fake.NewClientset(objs...), nil, nil, store, newTransformer(),
			Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		deadline := time.Now().Add(30 * time.Second)
		for !m.Ready() {
			if time.Now().After(deadline) {
				t.Fatal("not ready")
			}
			time.Sleep(time.Millisecond)
		}
		var pods, secrets int
		store.Read(func(v model.View) { pods, secrets, _ = v.Sizes() })
		cancel()
		<-done
		if secrets != n || pods != n {
			t.Fatalf("round %d: ready while the model held %d of %d Secrets and %d of %d Pods", round, secrets, n, pods, n)
		}
	}
}

// A context cancelled while the informers start (SIGTERM during start-up):
// Run returns, every group stopped, and no informer starts racing the group's
// stopper (go test -race caught that WaitGroup misuse in the agent's tests).
func TestRunCancelledDuringStart(t *testing.T) {
	for round := 0; round < 20; round++ {
		m := NewManager(fake.NewClientset(), nil, nil, model.NewStore(nil), newTransformer(),
			Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		if round%2 == 0 {
			cancel() // before Run
		}
		done := make(chan struct{})
		go func() { m.Run(ctx); close(done) }()
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: Run did not return after cancel", round)
		}
	}
}
