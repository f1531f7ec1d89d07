package kube

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

// The typed Secret informer of --typed-decode (no wire connection): through
// the wiping client made from the typed clientset's connection, it lists and
// watches the namespace's Secrets at the clientset's URL and its cache holds
// records; the access probe goes through the same client. A fake clientset
// has no connection: no wiping client, the clientset is used.
func TestTypedSecretClientFromClientset(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false) // a LIST, then a watch
	secret := func(name, rv string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", ResourceVersion: rv},
			Data: map[string][]byte{"password": []byte("s3cr3t-" + name)}}
	}
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path+"?watch="+r.URL.Query().Get("watch")+"&limit="+r.URL.Query().Get("limit"))
		mu.Unlock()
		if r.URL.Path != "/prefix/api/v1/namespaces/app/secrets" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
			_, _ = w.Write(encodePB(t, &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "10"},
				Items: []corev1.Secret{*secret("a", "5")}}))
			return
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		w.WriteHeader(http.StatusOK)
		ev := &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encodePB(t, secret("b", "11"))}}
		b, _ := ev.Marshal()
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		_, _ = w.Write(append(n[:], b...))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()

	cs, err := kubernetes.NewForConfig(ProtobufConfig(&rest.Config{Host: srv.URL + "/prefix"}))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransformer()
	c, err := typedSecretClient(cs, nil, tr.TypedSecretSerializer())
	if err != nil || c == nil {
		t.Fatalf("client %v, err %v", c, err)
	}
	inf := newWireInformer(c, "secrets", "app", &corev1.Secret{}, nil)
	if err := inf.SetTransform(tr.Secret); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(inf.GetStore().List()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var names []string
	for _, o := range inf.GetStore().List() {
		s, ok := o.(*model.Secret)
		if !ok {
			t.Fatalf("cache holds %T", o)
		}
		if !s.Keys.Has("password") {
			t.Fatalf("%s: keys %v", s.Name, s.Keys)
		}
		names = append(names, s.Name)
	}
	if got := strings.Join(slices.Sorted(slices.Values(names)), ","); got != "a,b" {
		t.Fatalf("cache holds %s, want a,b", got)
	}
	m := &Manager{cs: cs, typedSecrets: c}
	if err := probeSecrets(ctx, m, "app"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := paths[len(paths)-1]
	mu.Unlock()
	if last != "/prefix/api/v1/namespaces/app/secrets?watch=&limit=1" {
		t.Fatalf("probe asked %s", last)
	}

	if c, err := typedSecretClient(fake.NewClientset(), nil, tr.TypedSecretSerializer()); c != nil || err != nil {
		t.Fatalf("fake clientset: client %v, err %v", c, err)
	}
}
