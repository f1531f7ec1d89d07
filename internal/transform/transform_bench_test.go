package transform

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// esJSON is an ExternalSecret as the apiserver serves it to the dynamic informer
// (the shape test/bench creates: five data entries, a Ready status written through
// the status subresource, two managedFields entries).
const esJSON = `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","metadata":{"creationTimestamp":"2026-12-02T10:00:00Z","generation":1,
"managedFields":[{"apiVersion":"external-secrets.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:data":{},"f:refreshInterval":{},"f:secretStoreRef":{".":{},"f:kind":{},"f:name":{}},"f:target":{".":{},"f:creationPolicy":{},"f:name":{}}}},"manager":"bench","operation":"Update","time":"2026-12-02T10:00:00Z"},
{"apiVersion":"external-secrets.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:binding":{".":{},"f:name":{}},"f:conditions":{},"f:refreshTime":{},"f:syncedResourceVersion":{}}},"manager":"bench","operation":"Update","subresource":"status","time":"2026-12-02T10:00:00Z"}],
"name":"es-00042","namespace":"ns-0042","resourceVersion":"123456","uid":"3f1c2a9e-8d7b-4c55-9a0e-0b8f1d2e3c4d"},
"spec":{"data":[{"remoteRef":{"conversionStrategy":"Default","decodingStrategy":"None","key":"prod/secret-00042/0","metadataPolicy":"None"},"secretKey":"key-0"},
{"remoteRef":{"conversionStrategy":"Default","decodingStrategy":"None","key":"prod/secret-00042/1","metadataPolicy":"None"},"secretKey":"key-1"},
{"remoteRef":{"conversionStrategy":"Default","decodingStrategy":"None","key":"prod/secret-00042/2","metadataPolicy":"None"},"secretKey":"key-2"},
{"remoteRef":{"conversionStrategy":"Default","decodingStrategy":"None","key":"prod/secret-00042/3","metadataPolicy":"None"},"secretKey":"key-3"},
{"remoteRef":{"conversionStrategy":"Default","decodingStrategy":"None","key":"prod/secret-00042/4","metadataPolicy":"None"},"secretKey":"key-4"}],
"refreshInterval":"1h","secretStoreRef":{"kind":"ClusterSecretStore","name":"vault"},"target":{"creationPolicy":"Owner","deletionPolicy":"Retain","name":"secret-00042"}},
"status":{"binding":{"name":"secret-00042"},"conditions":[{"lastTransitionTime":"2026-12-02T10:00:01Z","message":"secret synced","reason":"SecretSynced","status":"True","type":"Ready"}],
"refreshTime":"2026-12-02T10:00:01Z","syncedResourceVersion":"1-bench"}}`

func BenchmarkExternalSecretTransform(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(esJSON)); err != nil {
		b.Fatal(err)
	}
	tr := newTransformer()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.ExternalSecret(u); err != nil {
			b.Fatal(err)
		}
	}
}

func TestManagedFieldsOfMatchesGetManagedFields(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(esJSON)); err != nil {
		t.Fatal(err)
	}
	want, got := u.GetManagedFields(), managedFieldsOf(u)
	if len(want) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("managedFieldsOf:\n got %+v\nwant %+v", got, want)
	}
	apply := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"managedFields": []any{
		map[string]any{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:spec": map[string]any{"f:target": map[string]any{"f:creationPolicy": map[string]any{}}}}}}}}}
	if got := creationPolicyApplied(managedFieldsOf(apply)); got != "set" {
		t.Fatalf("creationPolicyApplied: %q", got)
	}
	for _, bad := range []any{"not-a-list", []any{"not-a-map"}, []any{map[string]any{"manager": 3}}} {
		b := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"managedFields": bad}}}
		if got := managedFieldsOf(b); got != nil {
			t.Fatalf("%v: %+v", bad, got)
		}
	}
}

func TestAppendFieldSetMatchesJSON(t *testing.T) {
	for _, js := range []string{`{}`, `{"f:spec":{".":{},"f:target":{"f:name":{}}}}`,
		`{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{}}}},"f:metadata":{"f:labels":{"f:a<b&c>\\d\u0001é":{}}}}`,
		`{"f:x":[1,"a",null,true]}`} {
		var v any
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		got, ok := appendFieldSet(nil, v)
		var back any
		if !ok || json.Unmarshal(got, &back) != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("%s: got %s", js, got)
		}
	}
}
