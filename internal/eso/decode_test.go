package eso

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// esReadFields keeps the fields of an ExternalSecret that the transform reads.
func esReadFields(in ExternalSecret) ExternalSecret {
	var out ExternalSecret
	sp := in.Spec
	out.Spec = ExternalSecretSpec{SecretStoreRef: sp.SecretStoreRef, RefreshInterval: sp.RefreshInterval, RefreshPolicy: sp.RefreshPolicy}
	out.Spec.Target = ExternalSecretTarget{Name: sp.Target.Name, CreationPolicy: sp.Target.CreationPolicy, DeletionPolicy: sp.Target.DeletionPolicy}
	if t := sp.Target.Template; t != nil {
		tpl := &ExternalSecretTemplate{MergePolicy: t.MergePolicy}
		if t.Data != nil {
			tpl.Data = map[string]string{}
			for k := range t.Data {
				tpl.Data[k] = ""
			}
		}
		for _, tf := range t.TemplateFrom {
			o := TemplateFrom{Target: tf.Target}
			if tf.Literal != nil {
				o.Literal = new(string) // presence only: Decode keeps no template
			}
			for _, p := range []struct{ in, out **TemplateRef }{{&tf.ConfigMap, &o.ConfigMap}, {&tf.Secret, &o.Secret}} {
				if *p.in != nil {
					*p.out = &TemplateRef{Name: (*p.in).Name, Items: (*p.in).Items}
				}
			}
			tpl.TemplateFrom = append(tpl.TemplateFrom, o)
		}
		out.Spec.Target.Template = tpl
	}
	for _, d := range sp.Data {
		out.Spec.Data = append(out.Spec.Data, ExternalSecretData{SecretKey: d.SecretKey})
	}
	for _, df := range sp.DataFrom {
		var o ExternalSecretDataFromRemote
		if df.Find != nil {
			o.Find = &ExternalSecretFind{}
		}
		o.SourceRef = df.SourceRef
		out.Spec.DataFrom = append(out.Spec.DataFrom, o)
	}
	out.Status.RefreshTime, out.Status.SyncedResourceVersion = in.Status.RefreshTime, in.Status.SyncedResourceVersion
	for _, c := range in.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, StatusCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
	}
	return out
}

func TestExternalSecretDecodeMatchesConverter(t *testing.T) {
	objs := []string{
		`{"spec":{"secretStoreRef":{"name":"vault","kind":"ClusterSecretStore"},"refreshInterval":"15m","refreshPolicy":"OnChange",
		  "target":{"name":"t","template":{"type":"Opaque","mergePolicy":"Merge","data":{"DSN":"postgres://{{ .user }}"},
		    "templateFrom":[{"configMap":{"name":"tpl","items":[{"key":"config.yaml"},{"key":"dyn","templateAs":"KeysAndValues"}]}},
		                    {"target":"Labels","secret":{"name":"s","items":[{"key":"l"}]},"literal":"x"}]}},
		  "data":[{"secretKey":"user","remoteRef":{"key":"db/user"}},null],
		  "dataFrom":[{"find":{"name":{"regexp":".*"}}},{"extract":{"key":"k"}},{"find":null}]},
		 "status":{"refreshTime":"2026-01-01T00:00:00Z","syncedResourceVersion":"2-8f3c1a","conditions":[{"type":"Ready","status":"False","reason":"SecretSyncedError","lastTransitionTime":"2026-01-01T00:00:00+02:00"}]}}`,
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
		`{"status":{"syncedResourceVersion":2}}`,
		`{"status":{"conditions":[{"type":["Ready"]}]}}`,
		`{"spec":[]}`,
	}
	for i, js := range objs {
		var obj map[string]any
		if err := json.Unmarshal([]byte(js), &obj); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		obj["apiVersion"], obj["kind"] = "external-secrets.io/v1", "ExternalSecret"
		var want struct {
			Spec   ExternalSecretSpec   `json:"spec,omitempty"`
			Status ExternalSecretStatus `json:"status,omitempty"`
		}
		wantErr := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &want)
		var got ExternalSecret
		gotErr := Decode(obj, &got)
		if (wantErr != nil) != (gotErr != "") {
			t.Errorf("%d: converter error %v, decoder error %q", i, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue // partial results may differ; the record carries DecodeErr
		}
		w := esReadFields(ExternalSecret{Spec: want.Spec, Status: want.Status})
		g := esReadFields(got)
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}
