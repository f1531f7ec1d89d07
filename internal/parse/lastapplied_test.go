package parse

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

func TestLastAppliedTable(t *testing.T) {
	v1, v2, v3 := secretValue(t), secretValue(t), secretValue(t)
	type want struct {
		apiVersion, kind, name string
		keys                   []string
		fps                    map[string]string // key -> the bytes that must have been fingerprinted
		specKeys               []string
		hasSpecData, cpSet     bool
		err                    bool
	}
	cases := []struct {
		name string
		in   string
		want want
	}{
		{
			name: "secret data and stringData",
			in:   `{"apiVersion":"v1","data":{"B":"` + b64(v1) + `","A":"` + b64(v2) + `"},"kind":"Secret","metadata":{"annotations":{},"name":"db","namespace":"app"},"stringData":{"C":"` + v3 + `"},"type":"Opaque"}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "db", keys: []string{"A", "B", "C"}, fps: map[string]string{"A": v2, "B": v1, "C": v3}},
		},
		{
			name: "stringData wins over data, keys deduped",
			in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"data":{"K":"` + b64(v1) + `"},"stringData":{"K":"` + v2 + `"}}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "x", keys: []string{"K"}, fps: map[string]string{"K": v2}},
		},
		{
			name: "data not base64 is fingerprinted raw",
			in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"data":{"K":"` + v1 + `!"}}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "x", keys: []string{"K"}, fps: map[string]string{"K": v1 + "!"}},
		},
		{
			name: "escaped values decode like encoding/json",
			in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"K":"a\u00e9\n\"b\\c\/\ud83d\ude00\ud800x"},"data":{"L":"` + strings.NewReplacer("/", `\/`, "=", `\u003d`).Replace(b64(v1+"x")) + `\r\n"}}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "x", keys: []string{"K", "L"}, fps: map[string]string{"K": "a\u00e9\n\"b\\c/\U0001F600\uFFFDx", "L": v1 + "x"}},
		},
		{
			name: "non-string value listed without fingerprint",
			in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"data":{"K":null,"N":12}}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "x", keys: []string{"K", "N"}, fps: map[string]string{}},
		},
		{
			name: "empty secret",
			in:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"type":"Opaque"}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "x"},
		},
		{
			name: "member names are case-sensitive",
			in:   `{"apiVersion":"v1","Kind":"Secret","metadata":{"name":"x"},"data":{"K":"YQ=="}}`,
			want: want{apiVersion: "v1", name: "x"},
		},
		{
			name: "external secret",
			in:   `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","metadata":{"name":"es","namespace":"app"},"spec":{"data":[{"remoteRef":{"key":"k1"},"secretKey":"B"},{"remoteRef":{"key":"k2"},"secretKey":"A"},{"remoteRef":{"key":"k3"}}],"refreshInterval":"1h","secretStoreRef":{"kind":"ClusterSecretStore","name":"s"},"target":{"creationPolicy":"Merge","name":"db"}}}`,
			want: want{apiVersion: "external-secrets.io/v1", kind: "ExternalSecret", name: "es", specKeys: []string{"B", "A", ""}, hasSpecData: true, cpSet: true},
		},
		{
			name: "external secret v1beta1, no creationPolicy, dataFrom only",
			in:   `{"apiVersion":"external-secrets.io/v1beta1","kind":"ExternalSecret","metadata":{"name":"es"},"spec":{"dataFrom":[{"extract":{"key":"x"}}],"target":{"name":"db","creationPolicy":null}}}`,
			want: want{apiVersion: "external-secrets.io/v1beta1", kind: "ExternalSecret", name: "es"},
		},
		{
			name: "external secret with empty spec.data",
			in:   `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","metadata":{"name":"es"},"spec":{"data":[]}}`,
			want: want{apiVersion: "external-secrets.io/v1", kind: "ExternalSecret", name: "es", specKeys: []string{}, hasSpecData: true},
		},
		{
			name: "external secret kind of another group is not read",
			in:   `{"apiVersion":"example.com/v1","kind":"ExternalSecret","metadata":{"name":"es"},"spec":{"data":[{"secretKey":"A"}]}}`,
			want: want{apiVersion: "example.com/v1", kind: "ExternalSecret", name: "es"},
		},
		{
			name: "configmap data is not fingerprinted",
			in:   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"K":"` + v1 + `"}}`,
			want: want{apiVersion: "v1", kind: "ConfigMap", name: "c"},
		},
		{
			name: "duplicate member: last wins",
			in:   `{"kind":"ConfigMap","kind":"Secret","apiVersion":"v1","metadata":{"name":"a"},"data":{"X":"YQ=="},"data":{"Y":"YQ=="}}`,
			want: want{apiVersion: "v1", kind: "Secret", name: "a", keys: []string{"Y"}, fps: map[string]string{"Y": "a"}},
		},
		{name: "empty string", in: ``, want: want{err: true}},
		{name: "white space", in: " \n", want: want{err: true}},
		{name: "null", in: `null`, want: want{err: true}},
		{name: "array", in: `[{"kind":"Secret"}]`, want: want{err: true}},
		{name: "string", in: `"` + v1 + `"`, want: want{err: true}},
		{name: "number", in: `12`, want: want{err: true}},
		{name: "truncated", in: `{"apiVersion":"v1","kind":"Secret","data":{"K":"` + b64(v1), want: want{err: true}},
		{name: "trailing data", in: `{"kind":"Secret"} {"x":1}`, want: want{err: true}},
		{name: "invalid utf-8 outside strings", in: "{\"kind\":\"Secret\",\xff}", want: want{err: true}},
		{name: "NUL byte", in: "{\"kind\":\"Secret\"\x00}", want: want{err: true}},
		{name: "kind not a string", in: `{"kind":5,"data":{"K":"` + b64(v1) + `"}}`, want: want{err: true}},
		{name: "data not an object", in: `{"apiVersion":"v1","kind":"Secret","data":["` + v1 + `"]}`, want: want{err: true}},
		{name: "spec.data not an array", in: `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","spec":{"data":{"secretKey":"A"}}}`, want: want{err: true}},
		{name: "secretKey not a string", in: `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","spec":{"data":[{"secretKey":1}]}}`, want: want{err: true}},
		{name: "deeply nested", in: `{"apiVersion":"v1","kind":"Secret","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, want: want{err: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := LastApplied(tc.in, testFP)
			if got == nil {
				t.Fatal("nil result")
			}
			if got.Size != len(tc.in) {
				t.Errorf("Size = %d", got.Size)
			}
			checkErrString(t, got.Err)
			noValues(t, got, v1, v2, v3, b64(v1), b64(v2))
			if tc.want.err {
				if got.Err == "" {
					t.Fatalf("no error: %#v", got)
				}
				if got.DataKeys != nil || got.DataFPs != nil || got.SpecDataKeys != nil || got.Kind != "" {
					t.Fatalf("keys despite error: %#v", got)
				}
				return
			}
			if got.Err != "" {
				t.Fatalf("Err = %q", got.Err)
			}
			if got.APIVersion != tc.want.apiVersion || got.Kind != tc.want.kind || got.Name != tc.want.name {
				t.Errorf("ids = %q %q %q", got.APIVersion, got.Kind, got.Name)
			}
			if !reflect.DeepEqual(got.DataKeys, tc.want.keys) {
				t.Errorf("DataKeys = %#v, want %#v", got.DataKeys, tc.want.keys)
			}
			wantFPs := map[string]model.Fingerprint{}
			for k, v := range tc.want.fps {
				wantFPs[k] = testFP.Sum([]byte(v))
			}
			if len(got.DataFPs) != len(wantFPs) {
				t.Errorf("DataFPs has %d entries, want %d", len(got.DataFPs), len(wantFPs))
			}
			for k, fp := range wantFPs {
				if f, _ := got.DataFPs.Get(k); f != fp {
					t.Errorf("DataFPs[%s] does not match the fingerprint of the decoded value", k)
				}
			}
			if !reflect.DeepEqual(got.SpecDataKeys, tc.want.specKeys) {
				t.Errorf("SpecDataKeys = %#v, want %#v", got.SpecDataKeys, tc.want.specKeys)
			}
			if got.HasSpecData != tc.want.hasSpecData || got.CreationPolicySet != tc.want.cpSet {
				t.Errorf("HasSpecData=%v CreationPolicySet=%v", got.HasSpecData, got.CreationPolicySet)
			}
		})
	}
}

// The fingerprints match what the live Secret's values fingerprint to, however
// kubectl escaped them.
func TestLastAppliedMatchesLiveFingerprints(t *testing.T) {
	live := map[string][]byte{
		"tls.crt":  []byte("-----BEGIN CERTIFICATE-----\nMIIB<>&\n-----END CERTIFICATE-----\n"),
		"password": []byte(secretValue(t)),
		"binary":   {0, 1, 2, 0xff, 0xfe, '"', '\\'},
	}
	sec := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": live}
	j, err := json.Marshal(sec) // []byte values marshal as base64, as kubectl does
	if err != nil {
		t.Fatal(err)
	}
	got := LastApplied(string(j), testFP)
	if got.Err != "" {
		t.Fatal(got.Err)
	}
	for k, v := range live {
		if f, _ := got.DataFPs.Get(k); f != testFP.Sum(v) {
			t.Errorf("%s: fingerprint differs from the live value's", k)
		}
	}
}

func TestLastAppliedNilFingerprinter(t *testing.T) {
	got := LastApplied(`{"apiVersion":"v1","kind":"Secret","data":{"A":"YQ=="}}`, nil)
	if got.Err != "" || !reflect.DeepEqual(got.DataKeys, []string{"A"}) || got.DataFPs != nil {
		t.Fatalf("%#v", got)
	}
}

func TestLastAppliedSizeLimit(t *testing.T) {
	v := secretValue(t)
	mk := func(total int) string {
		head := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"big"},"data":{"K":"` + b64(v) + `"},"x":"`
		return head + strings.Repeat("a", total-len(head)-2) + `"}`
	}
	at := LastApplied(mk(MaxLastAppliedBytes), testFP)
	if at.Err != "" || len(at.DataKeys) != 1 {
		t.Fatalf("at the limit: %#v", at)
	}
	over := LastApplied(mk(MaxLastAppliedBytes+1), testFP)
	if over.Err == "" || over.DataKeys != nil || over.Size != MaxLastAppliedBytes+1 {
		t.Fatalf("over the limit: %#v", over)
	}
	checkErrString(t, over.Err)
	if !strings.Contains(over.Err, "exceeds size limit") {
		t.Fatalf("Err = %q", over.Err)
	}
}

func TestLastAppliedErrorsAreErrors(t *testing.T) {
	// Err is the text of an *Error; the same inputs through the internal
	// function give typed errors.
	for _, in := range []string{`{`, `[]`, `{"kind":1}`} {
		var la model.LastApplied
		var st laScratch
		err := summariseLastApplied([]byte(in), testFP, &st, &la)
		checkErr(t, err)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func benchSecretAnnotation(keys, valueLen int) string {
	data := map[string][]byte{}
	for i := 0; i < keys; i++ {
		v := make([]byte, valueLen)
		for j := range v {
			v[j] = alnum[(i*7+j*13)%len(alnum)]
		}
		data["KEY_"+string(rune('A'+i%26))+string(rune('a'+i/26))] = v
	}
	j, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "app-secrets", "namespace": "prod", "labels": map[string]string{"app": "x"}},
		"data":     data,
	})
	return string(j)
}

const benchES = `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","metadata":{"annotations":{},"name":"app","namespace":"prod"},"spec":{"data":[{"remoteRef":{"key":"prod/app","property":"a"},"secretKey":"A"},{"remoteRef":{"key":"prod/app","property":"b"},"secretKey":"B"},{"remoteRef":{"key":"prod/app","property":"c"},"secretKey":"C"},{"remoteRef":{"key":"prod/app","property":"d"},"secretKey":"D"}],"refreshInterval":"1h","secretStoreRef":{"kind":"ClusterSecretStore","name":"aws"},"target":{"creationPolicy":"Owner","name":"app"}}}`

func BenchmarkLastApplied(b *testing.B) {
	for _, bc := range []struct {
		name string
		in   string
	}{
		{"Secret20x64B", benchSecretAnnotation(20, 64)},
		{"Secret200x1KiB", benchSecretAnnotation(200, 1024)},
		{"ExternalSecret", benchES},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if la := LastApplied(bc.in, testFP); la.Err != "" {
					b.Fatal(la.Err)
				}
			}
		})
		// For comparison: the obvious encoding/json version (string values,
		// which cannot be zeroed).
		b.Run(bc.name+"/encoding-json-reference", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				var doc struct {
					APIVersion string                `json:"apiVersion"`
					Kind       string                `json:"kind"`
					Metadata   struct{ Name string } `json:"metadata"`
					Data       map[string][]byte     `json:"data"`
					StringData map[string]string     `json:"stringData"`
					Spec       struct {
						Data []struct {
							SecretKey string `json:"secretKey"`
						} `json:"data"`
						Target struct {
							CreationPolicy *string `json:"creationPolicy"`
						} `json:"target"`
					} `json:"spec"`
				}
				if err := json.Unmarshal([]byte(bc.in), &doc); err != nil {
					b.Fatal(err)
				}
				fps := map[string]model.Fingerprint{}
				for k, v := range doc.Data {
					fps[k] = testFP.Sum(v)
				}
			}
		})
	}
}
