package parse

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

// manifestV is a rendered manifest as Helm stores it ("---\n# Source: ...").
func manifestV(vals [4]string, extraKey bool) string {
	extra := ""
	if extraKey {
		extra = "    - secretKey: NEW_KEY\n      remoteRef:\n        key: prod/app\n        property: new\n"
	}
	return `---
# Source: app/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  ports:
    - port: 80
---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: app-db
  namespace: data
type: Opaque
data:
  DB_PASSWORD: ` + b64(vals[0]) + `
  DB_USER: ` + b64("admin") + `
stringData:
  API_TOKEN: "` + vals[1] + `"
  DB_USER: admin
---
# Source: app/templates/secret-empty.yaml
apiVersion: v1
kind: Secret
metadata:
  name: app-empty
---
# Source: app/templates/externalsecret.yaml
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: app-es
spec:
  refreshInterval: 1h
  secretStoreRef:
    kind: ClusterSecretStore
    name: aws
  target:
    name: app-runtime
    creationPolicy: Owner
    template:
      engineVersion: v2
      data:
        DSN: "postgres://{{ .user }}:{{ .password }}@db/app"
        user: "{{ .user }}"
  data:
    - secretKey: password
      remoteRef:
        key: prod/app
        property: password
    - secretKey: user
      remoteRef:
        key: prod/app
        property: user
` + extra + `---
# Source: app/templates/externalsecret-v1beta1.yaml
{"apiVersion": "external-secrets.io/v1beta1", "kind": "ExternalSecret",
 "metadata": {"name": "legacy", "namespace": "other"},
 "spec": {"dataFrom": [{"extract": {"key": "x"}}]}}
---
# Source: app/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: mentions-Secret-in-text
data:
  note: "kind: Secret"
  password: ` + vals[2] + `
---
# Source: app/templates/other-secret-kind.yaml
apiVersion: example.com/v1
kind: Secret
metadata:
  name: not-core
data:
  X: "1"
---
# only a comment
---
`
}

func wantExpectations(extraKey bool) []model.Declared {
	spec := []string{"password", "user"}
	if extraKey {
		spec = append(spec, "NEW_KEY")
	}
	return []model.Declared{
		{Kind: "Secret", Namespace: "data", Name: "app-db", Keys: []string{"API_TOKEN", "DB_PASSWORD", "DB_USER"}},
		{Kind: "Secret", Namespace: "prod", Name: "app-empty"},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "prod", Name: "app-es", ES: &model.ESWrites{Target: "app-runtime",
			CreationPolicy: "Owner", DeletionPolicy: "Retain", DataKeys: spec, HasSpecData: true,
			HasTemplate: true, TemplateRendersData: true, TemplateKeys: []string{"DSN", "user"}}},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "other", Name: "legacy", ES: &model.ESWrites{Target: "legacy",
			CreationPolicy: "Owner", DeletionPolicy: "Retain", DataFrom: 1}},
	}
}

// The ExternalSecrets of a release are read by the decoder of live ones: the
// template rule gives the keys ESO writes (app-es renders template.data with
// the default mergePolicy Replace: only the rendered keys, whatever spec.data
// lists).
func TestHelmExternalSecretWrittenKeys(t *testing.T) {
	for _, x := range wantExpectations(true) {
		if x.Name == "app-es" {
			if got := x.ES.WrittenKeys(); !reflect.DeepEqual(got, []string{"DSN", "user"}) {
				t.Fatalf("%v", got)
			}
		}
	}
}

func TestHelmReleaseRealPayload(t *testing.T) {
	vals := [4]string{secretValue(t), secretValue(t), secretValue(t), secretValue(t)}
	revisions := []struct {
		version  int
		status   string
		extraKey bool
	}{
		{1, "superseded", false},
		{2, "deployed", true},
		{3, "failed", false},
	}
	for _, r := range revisions {
		t.Run(fmt.Sprintf("v%d", r.version), func(t *testing.T) {
			payload := helmPayload(t, helmRel("app", "prod", r.version, r.status, manifestV(vals, r.extraKey)), true, true)
			// The Secret the Helm driver writes: type helm.sh/release.v1, data.release.
			rel, exps, err := HelmReleaseFromSecretData(map[string][]byte{"release": payload})
			if err != nil {
				t.Fatal(err)
			}
			want := HelmReleaseInfo{Name: "app", Namespace: "prod", Revision: r.version, Status: r.status, Documents: 10}
			if rel != want {
				t.Errorf("rel = %+v, want %+v", rel, want)
			}
			if w := wantExpectations(r.extraKey); !reflect.DeepEqual(exps, w) {
				t.Errorf("expectations:\n got %#v\nwant %#v", exps, w)
			}
			noValues(t, []any{rel, exps}, append(vals[:], seedValues...)...)
		})
	}
}

func TestHelmReleaseEncodings(t *testing.T) {
	m := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\r\ndata:\n  A: YQ==\r\n---\r\napiVersion: v1\nkind: Secret\nmetadata: {name: t}\nstringData: {B: b}\n"
	want := []model.Declared{
		{Kind: "Secret", Namespace: "ns", Name: "s", Keys: []string{"A"}},
		{Kind: "Secret", Namespace: "ns", Name: "t", Keys: []string{"B"}},
	}
	rel := helmRel("r", "ns", 7, "deployed", m)
	for _, enc := range []struct {
		name    string
		gz, b64 bool
	}{{"gzip+base64", true, true}, {"base64 only", false, true}, {"gzip only", true, false}, {"plain JSON", false, false}} {
		t.Run(enc.name, func(t *testing.T) {
			info, exps, err := HelmRelease(helmPayload(t, rel, enc.gz, enc.b64))
			if err != nil {
				t.Fatal(err)
			}
			if info.Revision != 7 || info.Status != "deployed" || info.Documents != 2 {
				t.Errorf("%+v", info)
			}
			if !reflect.DeepEqual(exps, want) {
				t.Errorf("got %#v", exps)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	in := "a: 1\n---\nb: 2\n--- # c\nc: 3\n----\nd: 4\n---x\ne\n---\r\nf\n---"
	var docs []string
	splitDocuments([]byte(in), func(d []byte, off int) bool {
		if !strings.HasPrefix(in[off:], string(d)) {
			t.Errorf("offset %d does not start document %q", off, d)
		}
		docs = append(docs, string(d))
		return true
	})
	want := []string{"a: 1\n", "b: 2\n", "c: 3\n----\nd: 4\n---x\ne\n", "f\n", ""}
	if !reflect.DeepEqual(docs, want) {
		t.Fatalf("%q", docs)
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestHelmReleaseCorrupt(t *testing.T) {
	v := secretValue(t)
	good := helmPayload(t, helmRel("r", "ns", 1, "deployed", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {A: "+v+"}\n"), true, false)
	truncated := good[:len(good)/2]
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-6] ^= 0xff
	bomb := gz(make([]byte, MaxHelmDecompressedBytes+1))
	e64 := func(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }
	manyDocs := strings.Repeat("a: 1\n---\n", MaxHelmDocuments+1)
	cases := []struct {
		name    string
		payload []byte
		kind    error
		stage   string
		exps    int // expectations still returned
	}{
		{"empty", nil, ErrMalformed, "json", 0},
		{"bad base64", []byte("!!!!" + v), ErrMalformed, "base64", 0},
		{"truncated gzip", e64(truncated), ErrMalformed, "gzip", 0},
		{"truncated gzip header", e64(good[:5]), ErrMalformed, "gzip", 0},
		{"gzip checksum", e64(badCRC), ErrMalformed, "gzip", 0},
		{"gzip bomb", e64(bomb), ErrTooLarge, "gzip", 0},
		{"payload too large", make([]byte, MaxHelmPayloadBytes+1), ErrTooLarge, "", 0},
		{"not JSON", e64(gz([]byte("name: " + v))), ErrMalformed, "json", 0},
		{"JSON syntax", e64(gz([]byte(`{"name":"` + v + `",`))), ErrMalformed, "json", 0},
		{"JSON array", e64(gz([]byte(`["` + v + `"]`))), ErrMalformed, "json", 0},
		{"JSON NUL", e64(gz([]byte("{\"name\":\"a\x00\"}"))), ErrMalformed, "json", 0},
		{"deep JSON", e64(gz([]byte(`{"x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`))), ErrMalformed, "json", 0},
		{"version not int", e64(gz([]byte(`{"version":"` + v + `"}`))), ErrMalformed, "json", 0},
		{"version float", e64(gz([]byte(`{"version":1.5}`))), ErrMalformed, "json", 0},
		{"manifest not string", e64(gz([]byte(`{"manifest":{"a":"` + v + `"}}`))), ErrMalformed, "json", 0},
		{"bad YAML document, others kept", helmPayload(t, helmRel("r", "ns", 1, "deployed",
			"kind: Secret\napiVersion: v1\nmetadata: {name: a}\ndata: {K: \""+v+"\"\n---\nkind: Secret\napiVersion: v1\nmetadata: {name: b}\ndata: {K: x}\n"), true, true), ErrMalformed, "yaml", 1},
		{"deep YAML", helmPayload(t, helmRel("r", "ns", 1, "deployed", "kind: Secret\nx: "+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), true, true), ErrMalformed, "yaml", 0},
		{"secret data not a map", helmPayload(t, helmRel("r", "ns", 1, "deployed", "kind: Secret\napiVersion: v1\ndata: [\""+v+"\"]\n"), true, true), ErrMalformed, "yaml", 0},
		{"too many documents", helmPayload(t, helmRel("r", "ns", 1, "deployed", manyDocs), true, true), ErrTooLarge, "manifest", 0},
		{"document too large", helmPayload(t, helmRel("r", "ns", 1, "deployed", "kind: Secret\napiVersion: v1\nx: "+strings.Repeat("a", MaxHelmDocumentBytes)), true, true), ErrTooLarge, "manifest", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, exps, err := HelmRelease(tc.payload)
			if err == nil {
				t.Fatal("no error")
			}
			checkErr(t, err)
			checkErrString(t, err.Error())
			noValues(t, err.Error(), v)
			noValues(t, exps, v)
			var e *Error
			errors.As(err, &e)
			if !errors.Is(err, tc.kind) || e.Stage != tc.stage {
				t.Errorf("err = %v (stage %q), want kind %v stage %q", err, e.Stage, tc.kind, tc.stage)
			}
			if len(exps) != tc.exps {
				t.Errorf("%d expectations, want %d", len(exps), tc.exps)
			}
		})
	}
	if _, _, err := HelmReleaseFromSecretData(map[string][]byte{"other": good}); !errors.Is(err, ErrMalformed) {
		t.Errorf("missing field: %v", err)
	}
}

// A "billion laughs" document: the YAML parser's alias limit stops it, quickly
// and without memory growth.
func TestHelmReleaseAliasBomb(t *testing.T) {
	doc := "apiVersion: v1\nkind: Secret\nmetadata: {name: lol}\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 1; i < 10; i++ {
		doc += fmt.Sprintf("a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	doc += "data: {K: x}\n"
	_, exps, err := HelmRelease(helmPayload(t, helmRel("r", "ns", 1, "deployed", doc), true, true))
	if !errors.Is(err, ErrMalformed) || len(exps) != 0 {
		t.Fatalf("exps %v, err %v", exps, err)
	}
	checkErr(t, err)
}

func BenchmarkHelmRelease(b *testing.B) {
	vals := [4]string{secretValue(b), secretValue(b), secretValue(b), secretValue(b)}
	var m strings.Builder
	for i := 0; i < 50; i++ {
		m.WriteString(manifestV(vals, i%2 == 0))
	}
	// A large ConfigMap (a dashboard) that the pre-filter skips.
	m.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: dash}\ndata:\n  d.json: |\n" + strings.Repeat("    {\"panels\": [1,2,3], \"title\": \"cpu\"}\n", 20000))
	payload := helmPayload(b, helmRel("app", "prod", 3, "deployed", m.String()), true, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := HelmRelease(payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(m.Len()), "manifest-bytes")
	b.ReportMetric(float64(len(payload)), "payload-bytes")
}
