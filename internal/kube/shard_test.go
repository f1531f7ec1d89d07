package kube

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/model"
)

// With a NamespaceFilter, objects of rejected namespaces reach neither the model
// nor, as records, the informer cache: the cache holds a name-only stub and the
// transform never summarises (fingerprints, decodes) them.
func TestShardFilterAppliesBeforeTheCache(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: "a"}, Data: map[string][]byte{"K": []byte("v")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "theirs", Name: "b"}, Data: map[string][]byte{"K": []byte("v")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: "p"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "theirs", Name: "q"}},
	)
	store := model.NewStore(model.NewHistory(model.HistoryOptions{}))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := NewManager(cs, nil, nil, store, newTransformer(), Options{
		Logger:          log,
		NamespaceFilter: func(ns string) bool { return ns == "mine" },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !m.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Handlers run after the cache: wait for the kept objects to reach the model.
	for {
		var secrets, pods int
		store.Read(func(v model.View) { pods, secrets, _ = v.Sizes() })
		if secrets == 1 && pods == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("model holds %d secrets and %d pods, want 1 and 1", secrets, pods)
		}
		time.Sleep(10 * time.Millisecond)
	}
	store.Read(func(v model.View) {
		if _, ok := v.Secret("theirs", "b"); ok {
			t.Error("a Secret of another shard reached the model")
		}
		if _, ok := v.Pod("theirs", "q"); ok {
			t.Error("a Pod of another shard reached the model")
		}
	})
	m.mu.Lock()
	groups := map[model.Resource]*group{model.ResSecrets: m.groups[model.ResSecrets], model.ResPods: m.groups[model.ResPods]}
	m.mu.Unlock()
	for res, g := range groups {
		for _, obj := range g.informers[0].GetStore().List() {
			o := obj.(metav1.Object)
			_, stub := obj.(*metav1.PartialObjectMetadata)
			if want := o.GetNamespace() == "theirs"; stub != want {
				t.Errorf("%s cache: %s/%s is %T; want a stub only for other shards' namespaces", res, o.GetNamespace(), o.GetName(), obj)
			}
		}
	}
}

// Without a filter every object is transformed into its record.
func TestNoShardFilterKeepsRecords(t *testing.T) {
	m := NewManager(fake.NewClientset(), nil, nil, model.NewStore(model.NewHistory(model.HistoryOptions{})), newTransformer(), Options{})
	out, err := m.transformFor(model.ResSecrets)(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "any", Name: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(*model.Secret); !ok {
		t.Fatalf("got %T, want *model.Secret", out)
	}
}
