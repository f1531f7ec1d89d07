package flux

import (
	"reflect"
	"strings"
	"testing"
)

const esDoc = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: app, annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}}
spec:
  target: {name: app-creds}
  data:
  - {secretKey: DB_USER, remoteRef: {key: u}}
  - {secretKey: DB_PASS, remoteRef: {key: p}}
`

const secretDoc = `apiVersion: v1
kind: Secret
metadata: {name: cfg, labels: {app: x}}
stringData:
  HOST: ${DB_HOST}
  PORT: ${DB_PORT:=5432}
  ESC: $${NOT_A_VAR}
data:
  TOKEN: c2VjcmV0
`

const sopsDoc = `apiVersion: v1
kind: Secret
metadata: {name: enc, namespace: other}
stringData:
  API_KEY: ENC[AES256_GCM,data:abc,iv:def,tag:ghi,type:str]
sops:
  age: []
  mac: ENC[AES256_GCM,data:x]
`

func keysOf(r Result) map[string][]string {
	out := map[string][]string{}
	for _, o := range r.Objects {
		k := o.Kind + "/" + o.Namespace + "/" + o.Name
		if o.Undetermined != "" {
			k += " (undetermined)"
		}
		if o.ES != nil {
			out[k] = o.ES.WrittenKeys()
		} else {
			out[k] = o.DataKeys
		}
	}
	return out
}

func TestBuildGeneratedKustomization(t *testing.T) {
	fs := FS{
		"apps/es.yaml":                 []byte(esDoc),
		"apps/nested/secret.yml":       []byte(secretDoc + "---\n" + sopsDoc),
		"apps/readme.md":               []byte("not yaml"),
		"apps/base/kustomization.yaml": []byte("resources: [s.yaml]\nnamespace: base-ns\n"),
		"apps/base/s.yaml":             []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: based}\ndata: {X: eA==}\n"),
		"apps/base/ignored.yaml":       []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: not-listed}\n"),
		"other/x.yaml":                 []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: elsewhere}\n"),
	}
	r, err := Build(fs, BuildSpec{Path: "./apps", TargetNamespace: "prod", NamePrefix: "p-"})
	if err != nil || r.Unsupported != "" {
		t.Fatalf("Build: %v %q", err, r.Unsupported)
	}
	want := map[string][]string{
		"ExternalSecret/prod/p-app": {"DB_PASS", "DB_USER"},
		"Secret/prod/p-cfg":         {"ESC", "HOST", "PORT", "TOKEN"},
		"Secret/prod/p-enc":         {"API_KEY"},
		"Secret/prod/p-based":       {"X"},
	}
	if got := keysOf(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("objects:\n got %v\nwant %v", got, want)
	}
	for _, o := range r.Objects {
		switch o.Name {
		case "p-app":
			if o.ES == nil || o.ES.Target != "app-creds" || o.Annotations[AnnotationSSA] != SSAIfNotPresent {
				t.Errorf("ExternalSecret: %+v annotations %v", o.ES, o.Annotations)
			}
		case "p-enc":
			if !o.SOPS {
				t.Error("the SOPS Secret is not marked")
			}
		}
	}
	var vars []string
	for _, v := range r.Vars {
		vars = append(vars, v.Var+"@"+v.Kind+"/"+v.Name)
	}
	if !reflect.DeepEqual(vars, []string{"DB_HOST@Secret/p-cfg"}) {
		t.Errorf("vars: %v", vars)
	}
}

func TestBuildPatchesAndUnsupported(t *testing.T) {
	base := FS{
		"k/kustomization.yaml": []byte("resources: [es.yaml, s.yaml]\n"),
		"k/es.yaml":            []byte(esDoc),
		"k/s.yaml":             []byte(secretDoc),
	}
	with := func(kust string) FS {
		fs := FS{}
		for k, v := range base {
			fs[k] = v
		}
		fs["k/kustomization.yaml"] = []byte("resources: [es.yaml, s.yaml]\n" + kust)
		fs["k/patch.yaml"] = []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: cfg}\nstringData: {EXTRA: x}\n")
		return fs
	}
	cases := []struct {
		name, kust   string
		spec         BuildSpec
		undetermined []string // names
		unsupported  string
	}{
		{name: "patch of a Deployment", kust: "patches:\n- path: p.yaml\n  target: {kind: Deployment}\n"},
		{name: "patch file of the Secret", kust: "patches:\n- path: patch.yaml\n", undetermined: []string{"cfg"}},
		{name: "patch by kind regex", kust: "patches:\n- patch: '[]'\n  target: {kind: External.*}\n", undetermined: []string{"app"}},
		{name: "patch by label selector", kust: "patches:\n- patch: '[]'\n  target: {labelSelector: app=x}\n", undetermined: []string{"app", "cfg"}},
		{name: "strategic merge inline", kust: "patchesStrategicMerge:\n- |\n  apiVersion: v1\n  kind: Secret\n  metadata: {name: cfg}\n", undetermined: []string{"cfg"}},
		{name: "secretGenerator", kust: "secretGenerator:\n- name: gen\n  literals: [K=v]\n", undetermined: []string{"cfg"}},
		{name: "Flux spec.patches", spec: BuildSpec{Patches: []PatchTarget{{Kind: "ExternalSecret", Name: "app"}}}, undetermined: []string{"app"}},
		{name: "components", kust: "components: [../c]\n", unsupported: "components"},
		{name: "replacements", kust: "replacements: []\n", unsupported: "replacements"},
		{name: "remote", kust: "bases: ['https://github.com/x/y//z?ref=v1']\n", unsupported: "remote resource"},
		{name: "Flux spec.components", spec: BuildSpec{Components: []string{"../c"}}, unsupported: "spec.components"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			spec.Path = "k"
			r, err := Build(with(c.kust), spec)
			if err != nil {
				t.Fatal(err)
			}
			if c.unsupported != "" {
				if !strings.Contains(r.Unsupported, c.unsupported) || len(r.Objects) != 0 {
					t.Fatalf("want unsupported %q, got %q with %d objects", c.unsupported, r.Unsupported, len(r.Objects))
				}
				return
			}
			var und []string
			for _, o := range r.Objects {
				if o.Undetermined != "" {
					und = append(und, o.Name)
				}
			}
			if !reflect.DeepEqual(und, c.undetermined) {
				t.Fatalf("undetermined %v, want %v", und, c.undetermined)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	for name, fs := range map[string]FS{
		"missing path":       {"a/x.yaml": []byte(secretDoc)},
		"missing resource":   {"b/kustomization.yaml": []byte("resources: [nope.yaml]\n")},
		"dir without kfile":  {"b/kustomization.yaml": []byte("resources: [sub]\n"), "b/sub/x.yaml": []byte(secretDoc)},
		"outside the source": {"b/kustomization.yaml": []byte("resources: [../../x.yaml]\n")},
		"cycle":              {"b/kustomization.yaml": []byte("resources: [../c]\n"), "c/kustomization.yaml": []byte("resources: [../b]\n")},
	} {
		if _, err := Build(fs, BuildSpec{Path: "b"}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseInventoryID(t *testing.T) {
	for id, want := range map[string]ObjMetadata{
		"apps_db_external-secrets.io_ExternalSecret": {Namespace: "apps", Name: "db", Group: "external-secrets.io", Kind: "ExternalSecret"},
		"apps_db__Secret": {Namespace: "apps", Name: "db", Kind: "Secret"},
		"_system__admin_rbac.authorization.k8s.io_ClusterRole": {Name: "system:admin", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	} {
		got, ok := ParseInventoryID(id)
		if !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", id, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a", "a_b", "a__Secret"} {
		if _, ok := ParseInventoryID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
