package transform

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/internal/model"
)

var esGV = schema.GroupVersion{Group: "external-secrets.io", Version: "v1"}

func esJSONDecoder(t testing.TB, tr *Transformer) runtime.Decoder {
	t.Helper()
	ser := tr.CRDSerializer(model.ResExternalSecrets, esGV)
	if ser == nil {
		t.Fatal("no JSON reader for ExternalSecrets")
	}
	for _, info := range ser.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			return info.Serializer
		}
	}
	t.Fatal("no JSON serializer")
	return nil
}

// unstructuredRecord is the record of the dynamic informer's path: the
// dynamic client's decoder, then the transform.
func unstructuredRecord(t testing.TB, tr *Transformer, b []byte) *model.ExternalSecret {
	t.Helper()
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("unstructured decode: %v\n%s", err, b)
	}
	out, err := tr.ExternalSecret(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*model.ExternalSecret)
}

// genExternalSecret is an ExternalSecret as the apiserver would serve it, with
// the variations the record reads: annotations (last-applied, expected keys,
// others), labels, managedFields of both operations (an Apply owning
// creationPolicy or not), deletionTimestamp, templates, dataFrom, conditions,
// and now and then a field of the wrong JSON type or a null.
func genExternalSecret(r *rand.Rand, i int) map[string]any {
	pick := func(p float64) bool { return r.Float64() < p }
	name := fmt.Sprintf("es-%05d", i)
	md := map[string]any{"name": name, "namespace": fmt.Sprintf("ns-%d", r.IntN(7)), "uid": fmt.Sprintf("uid-%d", i),
		"resourceVersion": fmt.Sprint(1000 + i), "creationTimestamp": "2026-12-02T10:00:00Z", "generation": int64(1 + r.IntN(3))}
	ann := map[string]any{}
	if pick(0.3) {
		la := map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"name": name, "namespace": md["namespace"]},
			"spec":     map[string]any{"data": []any{map[string]any{"secretKey": "k0", "remoteRef": map[string]any{"key": "x"}}}}}
		b, _ := json.Marshal(la)
		ann[model.AnnLastApplied] = string(b)
	}
	if pick(0.2) {
		ann[model.AnnExpectedKeys] = []string{"A,B", "C", "bad key!", ""}[r.IntN(4)]
	}
	if pick(0.3) {
		ann["argocd.argoproj.io/tracking-id"] = "app:external-secrets.io/ExternalSecret:" + name
	}
	if pick(0.2) {
		ann["reloader.stakater.com/match"] = "true"
	}
	if pick(0.2) {
		ann[model.AnnIgnore] = "true"
	}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	if pick(0.4) {
		md["labels"] = map[string]any{"app.kubernetes.io/instance": "x", "team": fmt.Sprint(r.IntN(3)),
			model.LabelESOManaged: "true"}
	}
	if pick(0.1) {
		md["deletionTimestamp"] = "2026-12-03T10:00:00Z"
		md["finalizers"] = []any{"externalsecrets.external-secrets.io/externalsecret-cleanup"}
	}
	if pick(0.2) {
		md["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}}
	}
	var mf []any
	if pick(0.8) {
		mf = append(mf, map[string]any{"apiVersion": "external-secrets.io/v1", "fieldsType": "FieldsV1", "manager": "kubectl-client-side-apply",
			"operation": "Update", "time": "2026-12-02T10:00:00Z", "fieldsV1": map[string]any{"f:spec": map[string]any{
				".": map[string]any{}, "f:data": map[string]any{}, "f:target": map[string]any{"f:name": map[string]any{}}}}})
	}
	if pick(0.4) {
		target := map[string]any{"f:name": map[string]any{}}
		if pick(0.5) {
			target["f:creationPolicy"] = map[string]any{}
		}
		mf = append(mf, map[string]any{"apiVersion": "external-secrets.io/v1", "fieldsType": "FieldsV1", "manager": "argocd-controller",
			"operation": "Apply", "time": "2026-12-02T10:00:01Z", "fieldsV1": map[string]any{"f:spec": map[string]any{
				"f:data": map[string]any{}, "f:target": target}}})
	}
	if pick(0.7) {
		mf = append(mf, map[string]any{"apiVersion": "external-secrets.io/v1", "fieldsType": "FieldsV1", "manager": "external-secrets",
			"operation": "Update", "subresource": "status", "time": "2026-12-02T10:00:02Z", "fieldsV1": map[string]any{"f:status": map[string]any{
				".": map[string]any{}, "f:conditions": map[string]any{}, "f:refreshTime": map[string]any{}}}})
	}
	if mf != nil {
		md["managedFields"] = mf
	}
	var data []any
	for k := range r.IntN(6) {
		data = append(data, map[string]any{"secretKey": fmt.Sprintf("key-%d", k), "remoteRef": map[string]any{"key": fmt.Sprintf("p/%d", k)}})
	}
	spec := map[string]any{"secretStoreRef": map[string]any{"name": "vault", "kind": []string{"SecretStore", "ClusterSecretStore", ""}[r.IntN(3)]},
		"target": map[string]any{"name": name + "-target", "creationPolicy": []string{"Owner", "Merge", "Orphan", "None"}[r.IntN(4)],
			"deletionPolicy": "Retain"},
		"refreshInterval": []string{"1h", "15m0s", "0", "10s"}[r.IntN(4)], "data": data}
	if pick(0.2) {
		spec["refreshPolicy"] = []string{"Periodic", "CreatedOnce", "OnChange"}[r.IntN(3)]
	}
	if pick(0.3) {
		spec["dataFrom"] = []any{map[string]any{"extract": map[string]any{"key": "db"}},
			map[string]any{"find": map[string]any{"name": map[string]any{"regexp": ".*"}}}}
	}
	if pick(0.3) {
		spec["target"].(map[string]any)["template"] = map[string]any{"engineVersion": "v2", "mergePolicy": []string{"Replace", "Merge"}[r.IntN(2)],
			"data":         map[string]any{"DSN": "postgres://{{ .user }}", "URL": "x"},
			"templateFrom": []any{map[string]any{"configMap": map[string]any{"name": "tpl", "items": []any{map[string]any{"key": "config.yaml"}}}}}}
	}
	switch r.IntN(20) {
	case 0:
		spec["data"] = "not-a-list"
	case 1:
		spec["refreshInterval"] = int64(3600)
	case 2:
		spec["target"] = nil
	case 3:
		spec["refreshInterval"] = "forever"
	}
	obj := map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": md, "spec": spec}
	if r.IntN(15) == 0 {
		obj["spec"] = nil
	}
	switch r.IntN(40) {
	case 0: // a generation its accessor reads as 0: the unstructured path's
		md["generation"] = 2.5
	case 1:
		md["generation"] = "2"
	case 2:
		delete(md, "generation")
	}
	if pick(0.8) {
		st := []string{"True", "False", "Unknown"}[r.IntN(3)]
		reason := []string{"SecretSynced", "SecretSyncedError", "SecretDeleted"}[r.IntN(3)]
		obj["status"] = map[string]any{"refreshTime": "2026-12-02T10:00:01Z", "binding": map[string]any{"name": name},
			"conditions": []any{map[string]any{"type": "Ready", "status": st, "reason": reason,
				"message": "could not get secret data from provider", "lastTransitionTime": "2026-12-02T10:00:01Z"}}}
		if r.IntN(20) == 0 {
			obj["status"].(map[string]any)["refreshTime"] = "yesterday"
		}
		if pick(0.7) {
			// What ESO writes after a sync: "<generation>-<hash>", at times
			// of a generation before the current one (a sync pending).
			obj["status"].(map[string]any)["syncedResourceVersion"] = fmt.Sprintf("%d-3f2a9c", 1+r.IntN(3))
		}
	}
	return obj
}

// The JSON reader makes the records the dynamic informer's path makes, for
// objects and for lists of them.
func TestCRDJSONExternalSecretsEqualUnstructured(t *testing.T) {
	tr := newTransformer()
	dec := esJSONDecoder(t, tr)
	r := rand.New(rand.NewPCG(35, 1))
	var items []any
	decodeErrs, pending := 0, 0
	odd := 0 // a generation the reader leaves to the unstructured path
	for i := range 2000 {
		obj := genExternalSecret(r, i)
		items = append(items, obj)
		if g, has := obj["metadata"].(map[string]any)["generation"]; has {
			if _, isInt := g.(int64); !isInt {
				odd++
				items = items[:len(items)-1] // the list below: the reader's path
			}
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		want := unstructuredRecord(t, tr, b)
		got, gvk, err := dec.Decode(b, nil, nil)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if gvk == nil || gvk.Kind != "ExternalSecret" {
			t.Fatalf("%d: gvk %v", i, gvk)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: records differ\n got %+v\nwant %+v\n%s", i, got, want, b)
		}
		if want.DecodeErr != "" {
			decodeErrs++
		}
		if want.SyncPending() {
			pending++
		}
		if g, _ := obj["metadata"].(map[string]any)["generation"].(int64); want.Generation != g {
			t.Fatalf("%d: generation %d, want %d", i, want.Generation, g)
		}
	}
	if decodeErrs == 0 {
		t.Fatal("no generated object exercised a decode error")
	}
	if pending == 0 {
		t.Fatal("no record read a sync pending (status.syncedResourceVersion of another generation)")
	}
	list := map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecretList",
		"metadata": map[string]any{"resourceVersion": "99999", "continue": "next"}, "items": items}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := dec.Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := got.(*recordList)
	if !ok || len(l.Items) != len(items) || l.ResourceVersion != "99999" || l.Continue != "next" {
		t.Fatalf("list: %T %+v", got, l)
	}
	for i, it := range items {
		ib, _ := json.Marshal(it)
		if want := unstructuredRecord(t, tr, ib); !reflect.DeepEqual(l.Items[i], runtime.Object(want)) {
			t.Fatalf("list item %d differs", i)
		}
	}
	if odd == 0 {
		t.Fatal("no generated object had a generation of another JSON type")
	}
	// The objects but the odd ones, then the list, by the reader; the odd
	// ones by the unstructured path.
	if n := tr.WireDecoded()[model.ResExternalSecrets]; n != uint64(2*len(items)) {
		t.Fatalf("decoded count %d, want %d", n, 2*len(items))
	}
	if fb := tr.WireFallbacks(); len(fb) != 1 || fb[[2]string{string(model.ResExternalSecrets), fallbackDecode}] != uint64(odd) {
		t.Fatalf("fallbacks: %v, want %d of %q", fb, odd, fallbackDecode)
	}
}

// A watch's bookmark keeps the annotation that ends the streaming list; a
// Status (an error answer, a watch ERROR event) decodes to a metav1.Status, as
// the REST client's error handling needs; anything else takes the
// unstructured path, counted.
func TestCRDJSONBookmarkStatusAndFallback(t *testing.T) {
	tr := newTransformer()
	dec := esJSONDecoder(t, tr)
	bm := `{"kind":"ExternalSecret","apiVersion":"external-secrets.io/v1","metadata":{"resourceVersion":"77","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}`
	got, _, err := dec.Decode([]byte(bm), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := got.(metav1.Object)
	if !ok || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" || m.GetResourceVersion() != "77" {
		t.Fatalf("bookmark: %#v", got)
	}
	st := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"externalsecrets.external-secrets.io is forbidden","reason":"Forbidden","details":{"group":"external-secrets.io","kind":"externalsecrets"},"code":403}`
	got, _, err = dec.Decode([]byte(st), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := got.(*metav1.Status); !ok || s.Code != 403 || s.Reason != metav1.StatusReasonForbidden {
		t.Fatalf("status: %#v", got)
	}
	// Another version than the client's: the unstructured path, the same record.
	other := strings.Replace(esJSON, `"apiVersion":"external-secrets.io/v1"`, `"apiVersion":"external-secrets.io/v1beta1"`, 1)
	got, _, err = dec.Decode([]byte(other), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := unstructuredRecord(t, tr, []byte(other)); !reflect.DeepEqual(got, runtime.Object(want)) {
		t.Fatalf("fallback record differs:\n got %+v\nwant %+v", got, want)
	}
	// Metadata the typed ObjectMeta rejects (an annotation that is not a
	// string): the unstructured path, which drops the annotations as its
	// accessor does.
	bad := strings.Replace(esJSON, `"generation":1,`, `"generation":1,"annotations":{"a":7},`, 1)
	got, _, err = dec.Decode([]byte(bad), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := unstructuredRecord(t, tr, []byte(bad)); !reflect.DeepEqual(got, runtime.Object(want)) {
		t.Fatalf("bad metadata: records differ")
	}
	fb := tr.WireFallbacks()
	if fb[[2]string{string(model.ResExternalSecrets), fallbackKind}] != 1 || fb[[2]string{string(model.ResExternalSecrets), fallbackDecode}] != 1 {
		t.Fatalf("fallbacks: %v", fb)
	}
	if _, _, err := dec.Decode([]byte("{not json"), nil, nil); err == nil {
		t.Fatal("malformed JSON decoded")
	}
}

// FuzzCRDJSONExternalSecret: whatever the bytes, the JSON reader does not
// crash, and where the dynamic client's decoder reads an ExternalSecret the
// two records are the same.
func FuzzCRDJSONExternalSecret(f *testing.F) {
	f.Add([]byte(esJSON))
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 20 {
		b, _ := json.Marshal(genExternalSecret(r, i))
		f.Add(b)
	}
	tr := newTransformer()
	dec := esJSONDecoder(f, tr)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := dec.Decode(b, nil, nil)
		obj, _, uerr := unstructured.UnstructuredJSONScheme.Decode(b, nil, nil)
		if uerr != nil {
			return
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetKind() != "ExternalSecret" || u.GetAPIVersion() != esGV.String() {
			return
		}
		if err != nil {
			t.Fatalf("the JSON reader failed where the unstructured one did not: %v", err)
		}
		want, _ := tr.ExternalSecret(u)
		if wr := want.(*model.ExternalSecret); wr.Name == "" && u.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			keepInitialEventsEnd(&wr.ObjectMeta)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("records differ\n got %+v\nwant %+v", got, want)
		}
	})
}

// BenchmarkExternalSecretDecode: one ExternalSecret as the apiserver serves it
// (esJSON: the bench's shape) from its JSON to its record, through the
// dynamic informer's path (the unstructured decoder, then the transform) and
// through the JSON reader.
func BenchmarkExternalSecretDecode(b *testing.B) {
	tr := newTransformer()
	data := []byte(esJSON)
	b.Run("unstructured+transform", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tr.ExternalSecret(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-reader", func(b *testing.B) {
		dec := esJSONDecoder(b, tr)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := dec.Decode(data, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
