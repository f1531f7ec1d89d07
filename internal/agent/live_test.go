package agent_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/internal/agent"
)

// A restarted agent serves no finding until every resource it watches has
// synced (what /readyz waits for): here its Secrets and Pods are listed at
// once and would already show a pod reading a key its Secret lacks, while the
// ExternalSecrets' list is held back. Seen on the real node (test/e2e/node,
// agent_killed): a scrape between the two syncs carried findings while
// /readyz answered 503. Once everything synced, the finding is served.
func TestNoFindingBeforeEveryResourceSynced(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", UID: "s1"}, Data: map[string][]byte{"user": []byte("u")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", UID: "p1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "PW",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	)
	fd := cs.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "secrets", Namespaced: true, Kind: "Secret"},
			{Name: "pods", Namespaced: true, Kind: "Pod"}}},
		{GroupVersion: "external-secrets.io/v1", APIResources: []metav1.APIResource{
			{Name: "externalsecrets", Namespaced: true, Kind: "ExternalSecret"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}: "ExternalSecretList",
	})
	release := make(chan struct{})
	listed := make(chan struct{}, 1)
	dyn.PrependReactor("list", "externalsecrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case listed <- struct{}{}:
		default:
		}
		<-release
		return false, nil, nil // the tracker answers
	})
	a := agent.New(agent.Clients{Core: cs, Dynamic: dyn, Discovery: cs.Discovery()},
		agent.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoveryInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	h := a.Handler()
	metrics := func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET /metrics: %d", w.Code)
		}
		return w.Body.String()
	}
	const finding = `driftwatch_secret_missing_key{key="password",namespace="app"`
	synced := func(text, res string) bool {
		return strings.Contains(text, `driftwatch_informer_synced{resource="`+res+`"} 1`)
	}
	select {
	case <-listed:
	case <-time.After(time.Minute):
		t.Fatal("the ExternalSecrets were never listed")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		text := metrics()
		if a.Manager.Ready() {
			t.Fatal("Ready while the ExternalSecrets' list is held back")
		}
		if strings.Contains(text, finding) {
			t.Fatalf("a finding served before every resource synced:\n%s", grepFinding(text))
		}
		if synced(text, "secrets") && synced(text, "pods") {
			break // the finding's own resources synced: it would show now
		}
		if time.Now().After(deadline) {
			t.Fatal("Secrets and Pods never synced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 5 { // and stays held back
		if text := metrics(); strings.Contains(text, finding) {
			t.Fatalf("a finding served before every resource synced:\n%s", grepFinding(text))
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	for !strings.Contains(metrics(), finding) {
		if time.Now().After(deadline) {
			t.Fatalf("no finding once every resource synced (ready %v)", a.Manager.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func grepFinding(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "driftwatch_secret_missing") || strings.HasPrefix(l, "driftwatch_informer_synced") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
