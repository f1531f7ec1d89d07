package build

import (
	"errors"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	generator "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// ks renders a Kustomization object from its spec in YAML.
func ks(t *testing.T, spec string) map[string]any {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatalf("spec: %v", err)
	}
	return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "k", "namespace": "flux-system"}, "spec": s}
}

func files(kv ...string) FS {
	fs := FS{}
	for i := 0; i+1 < len(kv); i += 2 {
		fs[kv[i]] = []byte(kv[i+1])
	}
	return fs
}

// shape renders a build as "Kind ns/name: keys" lines (ExternalSecrets: the
// target and the keys they write), undetermined objects marked.
func shape(r Result) []string {
	var out []string
	for _, o := range r.Objects {
		keys := o.Keys
		s := o.Kind + " " + o.Namespace + "/" + o.Name + ": "
		if o.ES != nil {
			keys = o.ES.WrittenKeys()
			s += "-> " + o.ES.Target + " "
		}
		s += strings.Join(keys, ",")
		if o.Undetermined != "" {
			s += " (undetermined)"
		}
		out = append(out, s)
	}
	return out
}

func mustBuild(t *testing.T, k map[string]any, fs FS) Result {
	t.Helper()
	r, err := Build(k, fs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return r
}

func wantShape(t *testing.T, r Result, want ...string) {
	t.Helper()
	got := shape(r)
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("build:\n got %q\nwant %q", got, want)
	}
}

func secretYAML(name string, keys ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\nstringData:\n")
	for _, k := range keys {
		b.WriteString("  " + k + ": v\n")
	}
	return b.String()
}

const esYAML = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: app}
spec:
  secretStoreRef: {name: store, kind: SecretStore}
  target: {name: app-creds}
  data:
  - {secretKey: DB_USER, remoteRef: {key: u}}
  - {secretKey: DB_PASS, remoteRef: {key: p}}
`

func TestGeneratorFieldIsTheFilesystem(t *testing.T) {
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile("/a/x.yaml", []byte(secretYAML("s", "A"))); err != nil {
		t.Fatal(err)
	}
	g := generator.NewGenerator("", unstructured.Unstructured{Object: ks(t, "path: a")})
	if err := generatorOn(g, fs); err != nil {
		t.Fatal(err)
	}
	// The generator writes its kustomization into fs, not onto the disk.
	if _, err := g.WriteFile("/a"); err != nil {
		t.Fatal(err)
	}
	if !fs.Exists("/a/kustomization.yaml") {
		t.Fatal("the generator did not write into the in-memory filesystem")
	}
}

// The layouts the reduced builder got wrong (issue 30): each is built as
// kustomize-controller builds it.
func TestBuildLayouts(t *testing.T) {
	base := func(extra ...string) FS {
		fs := files(
			"base/kustomization.yaml", "resources: [s.yaml, es.yaml]\nnamePrefix: base-\n",
			"base/s.yaml", secretYAML("db", "A"),
			"base/es.yaml", esYAML,
		)
		for i := 0; i+1 < len(extra); i += 2 {
			fs[extra[i]] = []byte(extra[i+1])
		}
		return fs
	}
	cases := []struct {
		name, spec string
		fs         FS
		want       []string
	}{
		{"an overlay's patch names the base object by its name before the prefix",
			"path: overlay\ntargetNamespace: prod",
			base("overlay/kustomization.yaml", "resources: [../base]\npatches:\n- path: p.yaml\n",
				"overlay/p.yaml", secretYAML("db", "B")),
			[]string{"Secret prod/base-db: A,B", "ExternalSecret prod/base-app: -> app-creds DB_PASS,DB_USER"}},
		{"spec.patches run in the generated kustomization, before the path's own prefix",
			"path: base\ntargetNamespace: prod\npatches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: db}\n    stringData: {C: c}\n",
			base(),
			[]string{"Secret prod/base-db: A,C", "ExternalSecret prod/base-app: -> app-creds DB_PASS,DB_USER"}},
		{"spec.namePrefix replaces the path's own",
			"path: base\ntargetNamespace: prod\nnamePrefix: eu-\nnameSuffix: -v2",
			base(),
			[]string{"Secret prod/eu-db-v2: A", "ExternalSecret prod/eu-app-v2: -> app-creds DB_PASS,DB_USER"}},
		{"every document of a multi-document patch file applies",
			"path: overlay",
			base("overlay/kustomization.yaml", "resources: [../base]\npatches:\n- path: p.yaml\n",
				"overlay/p.yaml", secretYAML("db", "B")+"---\n"+
					"apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: app}\nspec:\n  data:\n  - {secretKey: API_TOKEN, remoteRef: {key: t}}\n"),
			// A strategic merge patch of a custom resource replaces the list.
			[]string{"Secret /base-db: A,B", "ExternalSecret /base-app: -> app-creds API_TOKEN"}},
		{"every document of a multi-document spec.patches entry applies",
			"path: base\npatches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: db}\n    stringData: {D: d}\n    ---\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: db}\n    stringData: {E: e}\n",
			base(),
			[]string{"Secret /base-db: A,D,E", "ExternalSecret /base-app: -> app-creds DB_PASS,DB_USER"}},
		{"patchesJson6902 targets the renamed object",
			"path: overlay",
			base("overlay/kustomization.yaml", "resources: [../base]\nnamePrefix: o-\npatchesJson6902:\n- target: {version: v1, kind: Secret, name: o-base-db}\n  path: j.yaml\n",
				"overlay/j.yaml", "- op: add\n  path: /stringData/F\n  value: f\n"),
			[]string{"Secret /o-base-db: A,F", "ExternalSecret /o-base-app: -> app-creds DB_PASS,DB_USER"}},
		{"kind: List is expanded",
			"path: list",
			files("list/all.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: one}\n  stringData: {A: a}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: two}\n  data: {B: Yg==}\n"),
			[]string{"Secret /one: A", "Secret /two: B"}},
		{"a generated kustomization: the files and the kustomization folders under the path",
			"path: apps\ntargetNamespace: t",
			files("apps/s.yaml", secretYAML("top", "A"), "apps/readme.md", "# not yaml",
				"apps/sub/kustomization.yaml", "resources: [x.yaml]\n", "apps/sub/x.yaml", secretYAML("listed", "B"),
				"apps/sub/y.yaml", secretYAML("not-listed", "C"), "other/z.yaml", secretYAML("elsewhere", "D")),
			[]string{"Secret t/top: A", "Secret t/listed: B"}},
		{"components of the path and of spec.components",
			"path: app\ncomponents: [../extra]",
			files("app/kustomization.yaml", "resources: [s.yaml]\ncomponents: [../comp]\n", "app/s.yaml", secretYAML("s", "A"),
				"comp/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    stringData: {B: b}\n",
				"extra/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [e.yaml]\n",
				"extra/e.yaml", secretYAML("e", "C")),
			[]string{"Secret /s: A,B", "Secret /e: C"}},
		{"a secretGenerator with and without the hash",
			"path: gen",
			files("gen/kustomization.yaml", "secretGenerator:\n- name: hashed\n  literals: [A=a]\n- name: plain\n  envs: [x.env]\n  options: {disableNameSuffixHash: true}\n",
				"gen/x.env", "B=b\nC=c\n"),
			[]string{"Secret /hashed-kdkkk6k4g6: A", "Secret /plain: B,C"}},
		{"commonMetadata reaches every object",
			"path: c\ncommonMetadata: {annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}}",
			files("c/s.yaml", secretYAML("s", "A")),
			[]string{"Secret /s: A"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustBuild(t, ks(t, c.spec), c.fs)
			wantShape(t, r, c.want...)
			if strings.HasPrefix(c.name, "commonMetadata") && r.Objects[0].Annotations[flux.AnnotationSSA] != flux.SSAIfNotPresent {
				t.Errorf("annotations %v", r.Objects[0].Annotations)
			}
		})
	}
}

func TestBuildPostBuild(t *testing.T) {
	fs := files("app/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-${ENV}\nstringData:\n  ${ENV}_password: x\n  host: ${DB_HOST}\n  port: ${DB_PORT:=5432}\n",
		"app/es.yaml", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: app\nspec:\n  target:\n    name: ${TARGET}\n  data:\n  - secretKey: ${ENV}_TOKEN\n    remoteRef: {key: t}\n",
		"app/off.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: off\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\nstringData:\n  ${ENV}_raw: x\n")
	t.Run("inline variables in key names and names", func(t *testing.T) {
		r := mustBuild(t, ks(t, "path: app\npostBuild:\n  substitute: {ENV: prod, TARGET: app-creds, DB_HOST: db}\n"), fs)
		wantShape(t, r, "Secret /db-prod: host,port,prod_password", "ExternalSecret /app: -> app-creds prod_TOKEN", "Secret /off: ${ENV}_raw")
		var vars []string
		for _, v := range r.Vars {
			vars = append(vars, v.Var)
		}
		if !reflect.DeepEqual(vars, []string{"DB_HOST", "ENV", "TARGET"}) {
			t.Errorf("vars used without a default: %v", vars)
		}
	})
	t.Run("strict: a variable nothing defines fails the build, as kustomize-controller v1.9 fails it", func(t *testing.T) {
		_, err := Build(ks(t, "path: app\npostBuild:\n  substitute: {ENV: prod, TARGET: app-creds}\n"), fs)
		var be *BuildError
		if !errors.As(err, &be) || be.Reason != flux.UnjudgedBuildFailed {
			t.Fatalf("err = %v, want build_failed", err)
		}
	})
	t.Run("a substituteFrom variable in a key name or a name is undetermined", func(t *testing.T) {
		r := mustBuild(t, ks(t, "path: app\npostBuild:\n  substitute: {TARGET: app-creds}\n  substituteFrom: [{kind: Secret, name: vars}]\n"), fs)
		got := shape(r)
		for _, s := range got {
			if strings.HasPrefix(s, "Secret /off") {
				if s != "Secret /off: ${ENV}_raw" {
					t.Errorf("substitution disabled: %s", s)
				}
				continue
			}
			if !strings.HasSuffix(s, "(undetermined)") {
				t.Errorf("not undetermined: %s", s)
			}
		}
		for _, o := range r.Objects {
			if o.Undetermined != "" && !strings.Contains(o.Undetermined, "ENV") {
				t.Errorf("the reason does not name the variable: %q", o.Undetermined)
			}
		}
	})
	t.Run("a substituteFrom variable in a value only is determined", func(t *testing.T) {
		r := mustBuild(t, ks(t, "path: app\npostBuild:\n  substitute: {ENV: dev, TARGET: t}\n  substituteFrom: [{kind: ConfigMap, name: vars}]\n"), fs)
		if got := r.Objects; len(got) == 0 {
			t.Fatal("no objects")
		}
		wantShape(t, r, "Secret /db-dev: dev_password,host,port", "ExternalSecret /app: -> t dev_TOKEN", "Secret /off: ${ENV}_raw")
	})
	t.Run("only substituteFrom: whether substitution runs is unknown", func(t *testing.T) {
		r := mustBuild(t, ks(t, "path: app\npostBuild:\n  substituteFrom: [{kind: Secret, name: vars, optional: true}]\n"), fs)
		for _, o := range r.Objects {
			if o.Name != "off" && o.Undetermined == "" {
				t.Errorf("%s %s is determined", o.Kind, o.Name)
			}
		}
	})
	t.Run("no postBuild: the text ships as it is", func(t *testing.T) {
		r := mustBuild(t, ks(t, "path: app\n"), fs)
		wantShape(t, r, "Secret /db-${ENV}: ${ENV}_password,host,port", "ExternalSecret /app: -> ${TARGET} ${ENV}_TOKEN", "Secret /off: ${ENV}_raw")
	})
}

// SOPS: key names of encrypted files are read in clear; a generated name
// hashed from encrypted content is undetermined.
func TestBuildSOPS(t *testing.T) {
	env := "DB_PASS=ENC[AES256_GCM,data:abc,iv:def,tag:ghi,type:str]\nsops_age__list_0__map_recipient=age1xyz\nsops_mac=ENC[AES256_GCM,data:m,iv:i,tag:t,type:str]\nsops_version=3.9.0\n"
	manifest := "apiVersion: v1\nkind: Secret\nmetadata: {name: enc}\nstringData:\n  API_KEY: ENC[AES256_GCM,data:abc,iv:def,tag:ghi,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:x,type:str]\n  version: 3.9.0\n"
	fs := files("s/kustomization.yaml", "resources: [enc.yaml]\nsecretGenerator:\n- name: hashed\n  envs: [db.env]\n- name: plain\n  envs: [db.env]\n  options: {disableNameSuffixHash: true}\n",
		"s/db.env", env, "s/enc.yaml", manifest)
	r := mustBuild(t, ks(t, "path: s\ndecryption: {provider: sops, secretRef: {name: sops-age}}\n"), fs)
	var hashed, plain, enc *model.Declared
	for i := range r.Objects {
		switch o := &r.Objects[i]; {
		case strings.HasPrefix(o.Name, "hashed-"):
			hashed = o
		case o.Name == "plain":
			plain = o
		case o.Name == "enc":
			enc = o
		}
	}
	if hashed == nil || hashed.Undetermined == "" {
		t.Errorf("the hashed generated Secret is not undetermined: %+v", hashed)
	}
	if plain == nil || plain.Undetermined != "" || !reflect.DeepEqual(plain.Keys, []string{"DB_PASS"}) {
		t.Errorf("the generated Secret without a hash: %+v (its keys, as decryption leaves them: DB_PASS only)", plain)
	}
	if enc == nil || enc.Undetermined != "" || !enc.SOPS || !reflect.DeepEqual(enc.Keys, []string{"API_KEY"}) {
		t.Errorf("the encrypted Secret manifest: %+v", enc)
	}
	// Without decryption the controller applies the files as they are.
	r = mustBuild(t, ks(t, "path: s\n"), fs)
	for _, o := range r.Objects {
		if o.Name == "plain" && !reflect.DeepEqual(o.Keys, []string{"DB_PASS", "sops_age__list_0__map_recipient", "sops_mac", "sops_version"}) {
			t.Errorf("without decryption: %v", o.Keys)
		}
		if o.Undetermined != "" {
			t.Errorf("without decryption nothing is undetermined: %+v", o)
		}
	}
}

// A remote base is never fetched: the build does not run.
func TestBuildNeverFetchesRemoteBases(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(secretYAML("remote", "A")))
	}))
	defer srv.Close()
	for name, fs := range map[string]FS{
		"a remote file in resources": files("app/kustomization.yaml", "resources:\n- "+srv.URL+"/s.yaml\n"),
		"a remote git base":          files("app/kustomization.yaml", "resources:\n- github.com/example/repo//base?ref=v1\n"),
		"an scp-like git base":       files("app/kustomization.yaml", "resources:\n- git@example.com:org/repo.git\n"),
		"a remote patch file":        files("app/kustomization.yaml", "resources: [s.yaml]\npatches:\n- path: "+srv.URL+"/p.yaml\n", "app/s.yaml", secretYAML("s", "A")),
		"a remote base two levels down": files("app/kustomization.yaml", "resources: [../mid]\n", "mid/kustomization.yaml", "resources: [../leaf]\n",
			"leaf/kustomization.yaml", "resources:\n- "+srv.URL+"/x.yaml\n"),
		"a generated kustomization over a folder with a remote base": files("app/s.yaml", secretYAML("s", "A"),
			"app/sub/kustomization.yaml", "resources:\n- "+srv.URL+"/x.yaml\n"),
		"a remote secretGenerator file": files("app/kustomization.yaml", "secretGenerator:\n- name: g\n  files: [key="+srv.URL+"/k]\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Build(ks(t, "path: app"), fs)
			var be *BuildError
			if !errors.As(err, &be) || be.Reason != flux.UnjudgedRemoteBase {
				t.Fatalf("err = %v, want reason %s", err, flux.UnjudgedRemoteBase)
			}
			if strings.Contains(be.Detail, srv.URL) || strings.Contains(be.Detail, "example.com") {
				t.Errorf("the detail quotes the URL: %q", be.Detail)
			}
		})
	}
	if _, err := Build(ks(t, "path: app\ncomponents: ["+srv.URL+"/c]"), files("app/s.yaml", secretYAML("s", "A"))); err == nil {
		t.Error("a remote spec.components entry builds")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the remote server was asked %d times", n)
	}
	// A remote reference no build of the path reaches does not matter.
	r := mustBuild(t, ks(t, "path: app"), files("app/kustomization.yaml", "resources: [s.yaml]\n", "app/s.yaml", secretYAML("s", "A"),
		"unrelated/kustomization.yaml", "resources:\n- "+srv.URL+"/x.yaml\n"))
	wantShape(t, r, "Secret /s: A")
}

func TestBuildErrorsAreValueFree(t *testing.T) {
	const value = "hunter2-value-in-git"
	cases := map[string]struct {
		spec string
		fs   FS
	}{
		"malformed YAML holding a value": {"path: app", files("app/kustomization.yaml", "resources: [s.yaml]\n",
			"app/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  A: "+value+"\n  : : [\n")},
		"an object without a name": {"path: app", files("app/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {labels: {x: y}}\nstringData: {A: "+value+"}\n")},
		"the path does not exist":  {"path: nope", files("app/s.yaml", secretYAML("s", "A"))},
		"the path climbs out":      {"path: ../../etc", files("app/s.yaml", secretYAML("s", "A"))},
		"a missing resource":       {"path: app", files("app/kustomization.yaml", "resources: [gone.yaml]\n")},
		"a cycle":                  {"path: a", files("a/kustomization.yaml", "resources: [../b]\n", "b/kustomization.yaml", "resources: [../a]\n")},
		"two objects of one name": {"path: app", files("app/kustomization.yaml", "resources: [a.yaml, b.yaml]\n",
			"app/a.yaml", secretYAML("s", "A"), "app/b.yaml", secretYAML("s", value))},
		"a Helm chart (disabled in Flux's build)": {"path: app", files("app/kustomization.yaml", "helmCharts:\n- name: x\n  repo: oci://example.invalid/x\n")},
		"a climbing resource":                     {"path: app", files("app/kustomization.yaml", "resources: [../../../outside]\n")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Build(ks(t, c.spec), c.fs)
			var be *BuildError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a BuildError", err)
			}
			if strings.Contains(err.Error(), value) {
				t.Fatalf("the error carries a value: %v", err)
			}
			t.Logf("%s: %v", name, err)
		})
	}
}

func TestBuildLeavesFilesAlone(t *testing.T) {
	fs := files("app/kustomization.yaml", "resources: [s.yaml]\nnamePrefix: x-\n", "app/s.yaml", secretYAML("s", "A"))
	before := map[string]string{}
	for k, v := range fs {
		before[k] = string(v)
	}
	mustBuild(t, ks(t, "path: app\ntargetNamespace: t\npatches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    stringData: {B: b}\n"), fs)
	if len(fs) != len(before) {
		t.Fatalf("files added: %d, want %d", len(fs), len(before))
	}
	for k, v := range fs {
		if before[k] != string(v) {
			t.Errorf("%s changed", k)
		}
	}
}

func TestCleanRel(t *testing.T) {
	for in, want := range map[string]string{"./apps": "apps", "/apps/": "apps", ".": "", "": "", "./": "", "../x": "..", "a/../../x": "..", "a/./b": "a/b"} {
		if got := cleanRel(in); got != want {
			t.Errorf("cleanRel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsRemotePath(t *testing.T) {
	for p, want := range map[string]bool{
		"../base": false, "base": false, "./x.yaml": false, "a/b/c": false,
		"https://example.com/x.yaml": true, "http://x/y": true, "github.com/org/repo//dir": true, "gh:org/repo": true,
		"git::https://x/y": true, "git@github.com:org/repo": true, "deploy@host:repo": true, "ssh://git@h/r": true,
		"file:///tmp/x": true, "/abs/path": true, "repo?ref=v1": true,
	} {
		if got := isRemotePath(p); got != want {
			t.Errorf("isRemotePath(%q) = %v, want %v", p, got, want)
		}
	}
}

// The build's in-memory filesystem (kyaml copies every file written into it)
// holds none of the artifact's bytes once the build returned: each file is
// overwritten with zeros.
func TestBuildWipesItsFilesystem(t *testing.T) {
	var built []filesys.FileSystem
	orig := newBuildFS
	newBuildFS = func() filesys.FileSystem {
		fs := orig()
		built = append(built, fs)
		return fs
	}
	t.Cleanup(func() { newBuildFS = orig })
	const value = "c2VjcmV0LXZhbHVlLWluLWdpdA=="
	fs := files(
		"app/kustomization.yaml", "resources: [s.yaml]\n",
		"app/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ndata: {PASS: "+value+"}\n",
	)
	r := mustBuild(t, ks(t, "path: app"), fs)
	if len(r.Objects) != 1 || len(built) != 1 {
		t.Fatalf("%d objects, %d builds", len(r.Objects), len(built))
	}
	n := 0
	err := built[0].Walk("/", func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := built[0].ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if strings.Contains(string(b), value) || strings.Contains(string(b), "Secret") {
			t.Errorf("%s: still holds the artifact's bytes after the build", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d files in the build's filesystem", n)
	}
}
