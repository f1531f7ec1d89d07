package kube

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

// encodePB encodes obj as the apiserver does (protobuf, runtime.Unknown
// envelope).
func encodePB(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	obj = obj.DeepCopyObject()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The wire informer against a server that answers as the apiserver does
// (protobuf lists, length-delimited protobuf watch events), in both of
// client-go's ways of syncing: the streaming list (watch with initial events,
// ended by a bookmark carrying k8s.io/initial-events-end) and the paged LIST
// followed by a watch. The cache holds records, never typed objects.
func TestWireInformerSyncsBothWays(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(map[bool]string{true: "watch-list", false: "list+watch"}[watchList], func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			secret := func(name, rv string) *corev1.Secret {
				return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", ResourceVersion: rv, UID: types.UID("u-" + name)},
					Data: map[string][]byte{"password": []byte("s3cr3t-" + name)}}
			}
			frame := func(w http.ResponseWriter, typ string, obj runtime.Object) {
				ev := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: encodePB(t, obj)}}
				b, err := ev.Marshal()
				if err != nil {
					t.Error(err)
					return
				}
				var n [4]byte
				binary.BigEndian.PutUint32(n[:], uint32(len(b)))
				_, _ = w.Write(append(n[:], b...))
				w.(http.Flusher).Flush()
			}
			var lists, streams atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/secrets" {
					http.NotFound(w, r)
					return
				}
				q := r.URL.Query()
				if q.Get("watch") != "true" {
					lists.Add(1)
					w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
					l := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "10"},
						Items: []corev1.Secret{*secret("a", "5"), *secret("b", "6")}}
					_, _ = w.Write(encodePB(t, l))
					return
				}
				w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
				w.WriteHeader(http.StatusOK)
				if q.Get("sendInitialEvents") == "true" {
					streams.Add(1)
					frame(w, "ADDED", secret("a", "5"))
					frame(w, "ADDED", secret("b", "6"))
					frame(w, "BOOKMARK", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
						Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
				}
				frame(w, "ADDED", secret("c", "11"))
				<-r.Context().Done()
			}))
			defer srv.Close()

			tr := newTransformer()
			c, err := newWireClient(&rest.Config{Host: srv.URL}, tr.WireSerializer(model.ResSecrets))
			if err != nil {
				t.Fatal(err)
			}
			inf := newWireInformer(c, "secrets", "", &model.Secret{}, nil)
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
			for len(inf.GetStore().List()) < 3 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			var names []string
			for _, o := range inf.GetStore().List() {
				s, ok := o.(*model.Secret)
				if !ok {
					t.Fatalf("cache holds %T", o)
				}
				if s.Keys.Len() != 1 || !s.Keys.Has("password") {
					t.Fatalf("%s: keys %v", s.Name, s.Keys)
				}
				names = append(names, s.Name)
			}
			if got := strings.Join(slices.Sorted(slices.Values(names)), ","); got != "a,b,c" {
				t.Fatalf("cache holds %s, want a,b,c", got)
			}
			if watchList && (lists.Load() != 0 || streams.Load() != 1) || !watchList && (lists.Load() != 1 || streams.Load() != 0) {
				t.Fatalf("%d LISTs, %d streaming lists", lists.Load(), streams.Load())
			}
			if fb := tr.WireFallbacks(); len(fb) > 0 {
				t.Fatalf("fell back: %v", fb)
			}
			if n := tr.WireDecoded()[model.ResSecrets]; n < 3 {
				t.Fatalf("%d objects decoded from the wire", n)
			}
		})
	}
}
