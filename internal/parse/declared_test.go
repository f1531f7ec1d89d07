package parse

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// The three sources read one document the same way: a Helm manifest (YAML,
// the release's namespace as default), an Argo CD target state (JSON, the
// identity named beside it) and a Flux build object (YAML, labels and
// annotations kept).
func TestDeclaredIsOneReaderForEverySource(t *testing.T) {
	docs := map[string]string{
		"Secret": `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: shop
  labels: {app: shop}
data: {USER: dXNlcg==, PASS: cGFzcw==}
stringData: {PASS: not-a-value, TOKEN: x}
`,
		"ExternalSecret": `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: api
  namespace: shop
spec:
  secretStoreRef: {name: vault}
  target: {name: api-creds}
  data:
  - {secretKey: KEY, remoteRef: {key: k}}
  dataFrom:
  - extract: {key: all}
`,
	}
	for kind, doc := range docs {
		t.Run(kind, func(t *testing.T) {
			helm, ok, err := Declared([]byte(doc), Input{What: inputHelm, Namespace: "other"})
			if err != nil || !ok {
				t.Fatalf("helm: %v %v", ok, err)
			}
			j, jerr := yaml.YAMLToJSON([]byte(doc))
			if jerr != nil {
				t.Fatal(jerr)
			}
			group := ""
			if kind == "ExternalSecret" {
				group = "external-secrets.io"
			}
			argo, ok, err := Declared(j, Input{What: "argocd target state", JSON: true, Group: group, Kind: kind, Namespace: "shop", Name: helm.Name})
			if err != nil || !ok {
				t.Fatalf("argo: %v %v", ok, err)
			}
			fl, ok, err := FluxObject([]byte(doc))
			if err != nil || !ok {
				t.Fatalf("flux: %v %v", ok, err)
			}
			if kind == "Secret" && !reflect.DeepEqual(fl.Labels, map[string]string{"app": "shop"}) {
				t.Fatalf("flux labels: %v", fl.Labels)
			}
			fl.Labels, fl.Annotations = nil, nil
			if !reflect.DeepEqual(helm, argo) || !reflect.DeepEqual(helm, fl) {
				t.Fatalf("helm %+v\nargo %+v\nflux %+v", helm, argo, fl)
			}
			if helm.Namespace != "shop" || helm.Group != group || helm.Kind != kind {
				t.Fatalf("identity: %+v", helm)
			}
			switch kind {
			case "Secret":
				if !reflect.DeepEqual(helm.Keys, []string{"PASS", "TOKEN", "USER"}) {
					t.Fatalf("keys %v", helm.Keys)
				}
			case "ExternalSecret":
				if helm.ES == nil || helm.ES.Target != "api-creds" || !reflect.DeepEqual(helm.ES.DataKeys, []string{"KEY"}) || helm.ES.DataFrom != 1 {
					t.Fatalf("writes %+v", helm.ES)
				}
			}
		})
	}
}

// What the caller names must agree with the document; a document without
// apiVersion and kind takes them from the caller (Argo CD); without a caller's
// kind it is no object.
func TestDeclaredKindFromTheCaller(t *testing.T) {
	in := Input{What: "t", JSON: true, Kind: "Secret", Namespace: "ns", Name: "n"}
	d, ok, err := Declared([]byte(`{"data":{"A":"x"}}`), in)
	if err != nil || !ok || d.Kind != "Secret" || d.Name != "n" || d.Namespace != "ns" || !reflect.DeepEqual(d.Keys, []string{"A"}) {
		t.Fatalf("%+v %v %v", d, ok, err)
	}
	if _, ok, err := Declared([]byte(`{"kind":"ConfigMap","data":{"A":"x"}}`), in); err == nil || ok {
		t.Fatalf("kind mismatch accepted: %v %v", ok, err)
	}
	if _, ok, err := Declared([]byte(`{"apiVersion":"apps/v1","kind":"Secret"}`), in); err == nil || ok {
		t.Fatalf("group mismatch accepted: %v %v", ok, err)
	}
	if _, ok, err := Declared([]byte(`{"data":{"A":"x"}}`), Input{What: "t", JSON: true}); err != nil || ok {
		t.Fatalf("no kind: %v %v", ok, err)
	}
	// The named identity wins over the document's (Argo CD's list is the truth).
	if d, _, _ := Declared([]byte(`{"kind":"Secret","metadata":{"name":"x","namespace":"y"}}`), in); d.Name != "n" || d.Namespace != "ns" {
		t.Fatalf("identity %+v", d)
	}
}
