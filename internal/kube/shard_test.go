package kube

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/helmpayload"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
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

// Cross-namespace resources are kept by every shard, whatever their namespace,
// reduced to what concerns the shard's namespaces: a Helm release of another
// shard's namespace keeps the expectations about this shard's namespaces (an
// expectation without a namespace is about the release's own), and an
// Application of another shard's namespace keeps its identity and the
// resources it manages here, without their churning sync status.
func TestShardKeepsCrossNamespaceRecordsReduced(t *testing.T) {
	mine := func(ns string) bool { return ns == "mine" }
	m := NewManager(fake.NewClientset(), nil, nil, model.NewStore(nil), newTransformer(), Options{NamespaceFilter: mine})
	manifest := `---
apiVersion: v1
kind: Secret
metadata: {name: here, namespace: mine}
stringData: {A: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: home}
stringData: {B: "2"}
---
apiVersion: v1
kind: Secret
metadata: {name: elsewhere, namespace: third}
stringData: {C: "3"}
`
	rel := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.rel.v3",
			Labels: map[string]string{"owner": "helm", "name": "rel", "status": "deployed", "version": "3"}},
			Type: transform.HelmReleaseType, Data: map[string][]byte{"release": helmPayloadIn(ns, manifest)}}
	}
	names := func(h *model.HelmRelease) []string {
		var out []string
		for _, x := range h.Expectations {
			out = append(out, x.Namespace+"/"+x.Name)
		}
		return out
	}
	for _, c := range []struct {
		ns   string
		want []string
	}{
		{"theirs", []string{"mine/here"}},            // stored elsewhere: only what it renders here
		{"mine", []string{"mine/here", "mine/home"}}, // stored here: its own namespace's too
	} {
		out, err := m.transformFor(model.ResHelmReleases)(rel(c.ns))
		if err != nil {
			t.Fatal(err)
		}
		h, ok := out.(*model.HelmRelease)
		if !ok {
			t.Fatalf("release in %s: got %T, want a record", c.ns, out)
		}
		if got := names(h); !reflect.DeepEqual(got, c.want) || h.Revision != 3 {
			t.Errorf("release in %s: expectations %v revision %d, want %v and 3", c.ns, got, h.Revision, c.want)
		}
	}

	// status: the Application's sync status and its ConfigMap's (churn the
	// owner reports); secretStatus: its Secret's, which this shard reads to
	// judge delivery.
	app := func(ns, status, secretStatus string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "shop", "namespace": ns, "uid": "u1", "resourceVersion": status},
			"spec": map[string]any{"destination": map[string]any{"namespace": "mine"},
				"ignoreDifferences": []any{map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret", "jsonPointers": []any{"/spec/data"}}}},
			"status": map[string]any{"sync": map[string]any{"status": status, "revision": "r2"},
				"resources": []any{
					map[string]any{"kind": "Secret", "namespace": "mine", "name": "db", "status": secretStatus},
					map[string]any{"kind": "ConfigMap", "namespace": "mine", "name": "cfg", "status": status},
					map[string]any{"kind": "Secret", "namespace": "third", "name": "db", "status": status},
				},
				"operationState": map[string]any{"phase": "Succeeded", "syncResult": map[string]any{"revision": "r2", "resources": []any{
					map[string]any{"kind": "Secret", "namespace": "mine", "name": "db", "status": "Synced"},
					map[string]any{"kind": "Secret", "namespace": "third", "name": "db", "status": "Synced"},
				}}}},
		}}
	}
	tf := m.transformFor(model.ResApplications)
	full, _ := tf(app("mine", "Synced", "Synced"))
	if a := full.(*model.ArgoApp); len(a.Resources) != 3 || len(a.IgnoreDifferences) != 1 || a.SyncStatus != "Synced" || len(a.OperationSynced) != 2 {
		t.Errorf("an Application of this shard's namespace must stay whole: %+v", a)
	}
	r1, _ := tf(app("theirs", "Synced", "Synced"))
	r2, _ := tf(app("theirs", "OutOfSync", "Synced"))
	a := r1.(*model.ArgoApp)
	want := []model.ArgoResource{{Kind: "Secret", Namespace: "mine", Name: "db", Status: "Synced"}, {Kind: "ConfigMap", Namespace: "mine", Name: "cfg"}}
	if !reflect.DeepEqual(a.Resources, want) || a.IgnoreDifferences != nil || a.SyncStatus != "" {
		t.Errorf("an Application of another shard's namespace: got %+v, want only the resources here %v", a, want)
	}
	// What judges delivery here (detect.GitOpsDesired) is kept.
	if a.SyncRevision != "r2" || a.OperationPhase != "Succeeded" || a.OperationRevision != "r2" ||
		!reflect.DeepEqual(a.OperationSynced, []model.ArgoObject{{Kind: "Secret", Namespace: "mine", Name: "db"}}) {
		t.Errorf("delivery state of another shard's Application: %+v", a)
	}
	if !sameReducedApplication(r1, r2) {
		t.Error("a sync status change of another shard's Application must not count as a change here")
	}
	r3, _ := tf(func() *unstructured.Unstructured {
		u := app("theirs", "Synced", "Synced")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"kind": "Secret", "namespace": "mine", "name": "other"}}, "status", "resources")
		return u
	}())
	if sameReducedApplication(r1, r3) {
		t.Error("a change of the resources it manages here is a change")
	}
	if r4, _ := tf(app("theirs", "Synced", "OutOfSync")); sameReducedApplication(r1, r4) {
		t.Error("a change of a Secret's sync status here is a change")
	}
	// Being deleted: the shards that hold its Secrets must know (issue 22:
	// every shard but the owner brought back secret_absent{source="argocd"}).
	del := app("theirs", "Synced", "Synced")
	del.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
	r5, _ := tf(del)
	if !r5.(*model.ArgoApp).Deleting || sameReducedApplication(r1, r5) {
		t.Errorf("an Application being deleted, reduced: %+v", r5)
	}
}

// helmPayloadIn is a release payload of namespace ns (Helm writes the release's
// namespace into it: manifests without one are rendered there).
func helmPayloadIn(ns, manifest string) []byte {
	return helmpayload.Release{Name: "rel", Namespace: ns, Version: 3, Manifest: manifest}.Payload()
}

// With ScopedWatches a shard watches Secrets (and the other namespaced
// resources) per namespace it owns: other shards' objects never reach it, not
// even as stubs; a namespace created later gets its watch and is reported as
// synced once listed; a deleted namespace's watch stops and its records leave
// the model.
func TestScopedWatchesFollowTheNamespaces(t *testing.T) {
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	sec := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"K": []byte("v")}}
	}
	cs := fake.NewClientset(ns("mine-a"), ns("mine-b"), ns("theirs"),
		sec("mine-a", "s"), sec("mine-b", "s"), sec("theirs", "s"))
	store := model.NewStore(nil)
	m := NewManager(cs, nil, nil, store, newTransformer(), Options{
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		NamespaceFilter: func(ns string) bool { return strings.HasPrefix(ns, "mine-") },
		ScopedWatches:   true,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("ready", m.Ready)
	secrets := func() []string {
		var out []string
		store.Read(func(v model.View) {
			for _, s := range v.Secrets() {
				out = append(out, s.Namespace+"/"+s.Name)
			}
		})
		return out
	}
	// Ready means the initial namespaces' watches have listed them.
	if got := secrets(); !reflect.DeepEqual(got, []string{"mine-a/s", "mine-b/s"}) {
		t.Fatalf("model after ready: %v", got)
	}
	watched := func(res model.Resource) []string {
		m.mu.Lock()
		g := m.groups[res]
		m.mu.Unlock()
		g.smu.Lock()
		defer g.smu.Unlock()
		var out []string
		for ns := range g.scoped {
			out = append(out, ns)
		}
		sort.Strings(out)
		return out
	}
	for _, res := range []model.Resource{model.ResSecrets, model.ResPods, model.ResServiceAccounts} {
		if got := watched(res); !reflect.DeepEqual(got, []string{"mine-a", "mine-b"}) {
			t.Errorf("%s watched in %v, want this shard's namespaces", res, got)
		}
	}
	m.mu.Lock()
	hg := m.groups[model.ResHelmReleases]
	m.mu.Unlock()
	if hg.perNS != nil || len(hg.informers) != 1 {
		t.Error("Helm releases (a cross-namespace source) must stay one cluster-wide watch")
	}

	// A namespace appears with a Secret: watched, listed, then synced.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns("mine-c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("mine-c").Create(ctx, sec("mine-c", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns("theirs-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("mine-c's Secret in the model", func() bool { return slices.Contains(secrets(), "mine-c/new") })
	waitFor("mine-c synced", func() bool { return m.NamespaceSynced("mine-c") })
	if got := watched(model.ResSecrets); !reflect.DeepEqual(got, []string{"mine-a", "mine-b", "mine-c"}) {
		t.Errorf("Secrets watched in %v after mine-c and theirs-2 appeared", got)
	}
	if !m.Ready() {
		t.Error("a new namespace must not make the agent unready")
	}

	// A namespace goes: its watches stop and its records leave the model.
	if err := cs.CoreV1().Namespaces().Delete(ctx, "mine-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("mine-a's records gone", func() bool { return !slices.Contains(secrets(), "mine-a/s") })
	if got := watched(model.ResSecrets); !reflect.DeepEqual(got, []string{"mine-b", "mine-c"}) {
		t.Errorf("Secrets watched in %v after mine-a was deleted", got)
	}
	if got := secrets(); !reflect.DeepEqual(got, []string{"mine-b/s", "mine-c/new"}) {
		t.Errorf("model: %v", got)
	}
}
