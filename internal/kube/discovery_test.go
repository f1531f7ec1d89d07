package kube

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/model"
)

// An API that reads as not served once (a kube-apiserver that has just
// restarted answers discovery before its CRDs are registered) keeps its
// informer and records; only a second round in a row stops it.
func TestDiscoveryConfirmsAVanishedAPI(t *testing.T) {
	cs := fake.NewClientset()
	fd := cs.Discovery().(*fakediscovery.FakeDiscovery)
	eso := &metav1.APIResourceList{GroupVersion: "external-secrets.io/v1", APIResources: []metav1.APIResource{
		{Name: "externalsecrets", Namespaced: true, Kind: "ExternalSecret"},
		{Name: "secretstores", Namespaced: true, Kind: "SecretStore"},
		{Name: "clustersecretstores", Namespaced: false, Kind: "ClusterSecretStore"}}}
	fd.Resources = []*metav1.APIResourceList{eso}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}:     "ExternalSecretList",
		{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}:        "SecretStoreList",
		{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}: "ClusterSecretStoreList",
	})
	m := NewManager(cs, dyn, cs.Discovery(), model.NewStore(nil), newTransformer(),
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoveryInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); m.stopAll() }()
	m.discover(ctx)
	enabled := func() bool {
		for _, st := range m.States() {
			if st.Resource == model.ResExternalSecrets {
				return st.Enabled
			}
		}
		return false
	}
	if !enabled() {
		t.Fatal("ExternalSecrets not watched while served")
	}
	fd.Resources = nil // the group is gone from discovery
	m.discover(ctx)
	if !enabled() {
		t.Fatal("one round without the API stopped its informer")
	}
	fd.Resources = []*metav1.APIResourceList{eso} // back: the count starts over
	m.discover(ctx)
	fd.Resources = nil
	m.discover(ctx)
	if !enabled() {
		t.Fatal("the count of rounds without the API did not start over")
	}
	m.discover(ctx)
	if enabled() {
		t.Fatal("two rounds in a row without the API did not stop its informer")
	}
}
