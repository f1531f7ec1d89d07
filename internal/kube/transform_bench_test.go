package kube

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/internal/eso"
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

// esReadFields keeps the fields of an ExternalSecret that the transform reads.
func esReadFields(in eso.ExternalSecret) eso.ExternalSecret {
	var out eso.ExternalSecret
	sp := in.Spec
	out.Spec = eso.ExternalSecretSpec{SecretStoreRef: sp.SecretStoreRef, RefreshInterval: sp.RefreshInterval, RefreshPolicy: sp.RefreshPolicy}
	out.Spec.Target = eso.ExternalSecretTarget{Name: sp.Target.Name, CreationPolicy: sp.Target.CreationPolicy, DeletionPolicy: sp.Target.DeletionPolicy}
	if t := sp.Target.Template; t != nil {
		tpl := &eso.ExternalSecretTemplate{MergePolicy: t.MergePolicy}
		if t.Data != nil {
			tpl.Data = map[string]string{}
			for k := range t.Data {
				tpl.Data[k] = ""
			}
		}
		for _, tf := range t.TemplateFrom {
			o := eso.TemplateFrom{Target: tf.Target}
			for _, p := range []struct{ in, out **eso.TemplateRef }{{&tf.ConfigMap, &o.ConfigMap}, {&tf.Secret, &o.Secret}} {
				if *p.in != nil {
					*p.out = &eso.TemplateRef{Name: (*p.in).Name, Items: (*p.in).Items}
				}
			}
			tpl.TemplateFrom = append(tpl.TemplateFrom, o)
		}
		out.Spec.Target.Template = tpl
	}
	for _, d := range sp.Data {
		out.Spec.Data = append(out.Spec.Data, eso.ExternalSecretData{SecretKey: d.SecretKey})
	}
	for _, df := range sp.DataFrom {
		var o eso.ExternalSecretDataFromRemote
		if df.Find != nil {
			o.Find = &eso.ExternalSecretFind{}
		}
		o.SourceRef = df.SourceRef
		out.Spec.DataFrom = append(out.Spec.DataFrom, o)
	}
	out.Status.RefreshTime = in.Status.RefreshTime
	for _, c := range in.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, eso.StatusCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
	}
	return out
}

func TestExternalSecretDecodeMatchesConverter(t *testing.T) {
	objs := []string{esJSON,
		`{"spec":{"secretStoreRef":{"name":"vault","kind":"ClusterSecretStore"},"refreshInterval":"15m","refreshPolicy":"OnChange",
		  "target":{"name":"t","template":{"type":"Opaque","mergePolicy":"Merge","data":{"DSN":"postgres://{{ .user }}"},
		    "templateFrom":[{"configMap":{"name":"tpl","items":[{"key":"config.yaml"},{"key":"dyn","templateAs":"KeysAndValues"}]}},
		                    {"target":"Labels","secret":{"name":"s","items":[{"key":"l"}]},"literal":"x"}]}},
		  "data":[{"secretKey":"user","remoteRef":{"key":"db/user"}},null],
		  "dataFrom":[{"find":{"name":{"regexp":".*"}}},{"extract":{"key":"k"}},{"find":null}]},
		 "status":{"refreshTime":"2026-01-01T00:00:00Z","conditions":[{"type":"Ready","status":"False","reason":"SecretSyncedError","lastTransitionTime":"2026-01-01T00:00:00+02:00"}]}}`,
		`{"spec":{"target":{"template":{}},"refreshInterval":null,"data":[]},"status":{}}`,
		`{"spec":{"refreshInterval":"0s","dataFrom":[{"sourceRef":{"generatorRef":{"apiVersion":"generators.external-secrets.io/v1alpha1","kind":"Password","name":"pw"}}},
		  {"sourceRef":{"storeRef":{"name":"other","kind":"SecretStore"}},"extract":{"key":"k"}},{"sourceRef":null}]}}`,
		`{"spec":{"target":{"template":{"data":{},"templateFrom":[]}}}}`,
		`{"spec":null,"status":null}`,
		`{}`,
		// Malformed: both must fail.
		`{"spec":{"data":"not-a-list"}}`,
		`{"spec":{"data":[{"secretKey":3}]}}`,
		`{"spec":{"refreshInterval":"soon"}}`,
		`{"spec":{"refreshInterval":5}}`,
		`{"spec":{"target":"x"}}`,
		`{"spec":{"target":{"template":{"data":{"k":1}}}}}`,
		`{"spec":{"target":{"template":{"templateFrom":[{"configMap":{"items":[{"key":true}]}}]}}}}`,
		`{"spec":{"dataFrom":[{"find":"x"}]}}`,
		`{"spec":{"dataFrom":[{"sourceRef":{"generatorRef":"Password"}}]}}`,
		`{"spec":{"dataFrom":[{"sourceRef":{"generatorRef":{"name":7}}}]}}`,
		`{"status":{"refreshTime":"yesterday"}}`,
		`{"status":{"conditions":[{"type":["Ready"]}]}}`,
		`{"spec":[]}`,
	}
	for i, js := range objs {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		u.Object["apiVersion"], u.Object["kind"] = "external-secrets.io/v1", "ExternalSecret"
		var want struct {
			Spec   eso.ExternalSecretSpec   `json:"spec,omitempty"`
			Status eso.ExternalSecretStatus `json:"status,omitempty"`
		}
		wantErr := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &want)
		var got eso.ExternalSecret
		gotErr := decodeExternalSecret(u.Object, &got)
		if (wantErr != nil) != (gotErr != "") {
			t.Errorf("%d: converter error %v, decoder error %q", i, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue // partial results may differ; the record carries DecodeErr
		}
		w := esReadFields(eso.ExternalSecret{Spec: want.Spec, Status: want.Status})
		g := esReadFields(got)
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%d:\n got %+v\nwant %+v", i, g, w)
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
