package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

// The JSON reader's informer (ExternalSecrets) against a server that answers
// as the apiserver does for custom resources (JSON lists, newline-delimited
// JSON watch events), in both of client-go's ways of syncing: the streaming
// list ended by the initial-events-end bookmark, and the paged LIST followed
// by a watch. The cache holds records; a 403 reads as Forbidden (the
// degraded-access check depends on it).
func TestCRDInformerSyncsBothWays(t *testing.T) {
	es := func(name, rv string) map[string]any {
		return map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"name": name, "namespace": "app", "resourceVersion": rv, "uid": "u-" + name},
			"spec": map[string]any{"secretStoreRef": map[string]any{"name": "vault"}, "target": map[string]any{"name": "t-" + name},
				"data": []any{map[string]any{"secretKey": "K_" + name, "remoteRef": map[string]any{"key": "x"}}}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	}
	for _, watchList := range []bool{true, false} {
		t.Run(map[bool]string{true: "watch-list", false: "list+watch"}[watchList], func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			frame := func(w http.ResponseWriter, typ string, obj map[string]any) {
				b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = w.Write(append(b, '\n'))
				w.(http.Flusher).Flush()
			}
			var lists, streams atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/apis/external-secrets.io/v1/externalsecrets":
				case "/apis/external-secrets.io/v1/namespaces/denied/externalsecrets":
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusForbidden)
					fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"externalsecrets.external-secrets.io is forbidden: User \"x\" cannot list resource","reason":"Forbidden","details":{"group":"external-secrets.io","kind":"externalsecrets"},"code":403}`)
					return
				default:
					http.NotFound(w, r)
					return
				}
				q := r.URL.Query()
				if q.Get("watch") != "true" {
					lists.Add(1)
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecretList",
						"metadata": map[string]any{"resourceVersion": "10"}, "items": []any{es("a", "5"), es("b", "6")}})
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				if q.Get("sendInitialEvents") == "true" {
					streams.Add(1)
					frame(w, "ADDED", es("a", "5"))
					frame(w, "ADDED", es("b", "6"))
					frame(w, "BOOKMARK", map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
						"metadata": map[string]any{"resourceVersion": "10", "annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}}})
				}
				frame(w, "ADDED", es("c", "11"))
				<-r.Context().Done()
			}))
			defer srv.Close()

			tr := newTransformer()
			gv := schema.GroupVersion{Group: "external-secrets.io", Version: "v1"}
			c, err := newCRDClient(&rest.Config{Host: srv.URL}, gv, tr.CRDSerializer(model.ResExternalSecrets, gv))
			if err != nil {
				t.Fatal(err)
			}
			inf := newWireInformer(c, "externalsecrets", "", &model.ExternalSecret{}, nil)
			if err := inf.SetTransform(tr.ExternalSecret); err != nil {
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
				e, ok := o.(*model.ExternalSecret)
				if !ok {
					t.Fatalf("cache holds %T", o)
				}
				if e.Target != "t-"+e.Name || !slices.Equal(e.DataKeys, []string{"K_" + e.Name}) || e.Ready.Status != "True" || e.StoreName != "vault" {
					t.Fatalf("%s: record %+v", e.Name, e)
				}
				names = append(names, e.Name)
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
			if n := tr.WireDecoded()[model.ResExternalSecrets]; n < 3 {
				t.Fatalf("%d objects read", n)
			}
			// A denied list is a Forbidden error, as through the dynamic client.
			_, err = c.Get().Namespace("denied").Resource("externalsecrets").
				VersionedParams(&metav1.ListOptions{Limit: 1}, metav1.ParameterCodec).Do(ctx).Get()
			if !apierrors.IsForbidden(err) {
				t.Fatalf("denied list: %v", err)
			}
		})
	}
}
