package parse

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ---- reference classification of strings (names vs values) ----

// refStrings walks valid JSON with encoding/json's tokenizer and sorts every
// string into names (member names anywhere, and string values outside value
// paths) and values (strings under a value path, plus their base64 decodings).
func refStrings(b []byte, isValuePath func(path []string) bool) (names, values map[string]bool) {
	names, values = map[string]bool{}, map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj, wantKey bool
		key          string
	}
	var stack []*frame
	path := func() []string {
		p := make([]string, 0, len(stack))
		for _, f := range stack {
			if f.obj {
				p = append(p, f.key)
			} else {
				p = append(p, "[]")
			}
		}
		return p
	}
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				names[v] = true
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			if isValuePath(path()) {
				values[v] = true
				if d, err := base64.StdEncoding.DecodeString(v); err == nil {
					values[string(d)] = true
				}
			} else {
				names[v] = true
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

func lastAppliedValuePath(p []string) bool {
	return len(p) >= 2 && (p[0] == "data" || p[0] == "stringData")
}

func manifestValuePath(p []string) bool {
	return lastAppliedValuePath(p) || len(p) >= 5 && slices.Equal(p[:4], []string{"spec", "target", "template", "data"})
}

func containedInAny(v string, set map[string]bool) bool {
	for s := range set {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// assertNoLeak: every output string is a name of the input, and no value of 8
// bytes or more that is not part of a name occurs in the rendering.
func assertNoLeak(t *testing.T, outStrings []string, rendered string, names, values map[string]bool, extraNames ...string) {
	t.Helper()
	for _, s := range extraNames {
		names[s] = true
	}
	for _, s := range outStrings {
		if s != "" && !names[s] {
			t.Fatalf("output string %q is not a name of the input", s)
		}
	}
	for v := range values {
		if len(v) >= 8 && !containedInAny(v, names) && strings.Contains(rendered, v) {
			t.Fatalf("value %q leaked: %s", v, rendered)
		}
	}
}

// ---- seeds shared by the targets ----

func deepJSON(n int) string {
	return `{"apiVersion":"v1","kind":"Secret","data":{"K":"` + b64(seedValues[0]) + `"},"x":` + strings.Repeat(`{"a":[`, n) + strings.Repeat(`]}`, n) + `}`
}

func secretAnnotation(size int) string {
	head := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"big"},"data":{"K":"` + b64(seedValues[0]) + `"},"stringData":{"S":"` + seedValues[1] + `"},"x":"`
	return head + strings.Repeat("a", max(0, size-len(head)-2)) + `"}`
}

func FuzzLastApplied(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"A":"` + b64(seedValues[0]) + `","B":"` + seedValues[1] + `"},"stringData":{"C":"` + seedValues[2] + `","D":"a\u00e9\n\ud800"}}`,
		`{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","metadata":{"name":"es"},"spec":{"data":[{"secretKey":"A","remoteRef":{"key":"k"}},{"secretKey":"B"}],"target":{"name":"t","creationPolicy":"Merge"}}}`,
		secretAnnotation(MaxLastAppliedBytes),
		secretAnnotation(MaxLastAppliedBytes + 1),
		deepJSON(5000),
		deepJSON(10001),
		"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"K\xff\":\"" + seedValues[3] + "\xfe\"}}",
		"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"K\":\"\x00" + seedValues[3] + "\"}}",
		"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"stringData\":{\"K\":\"\\u0000" + seedValues[3] + "\"}}\x00",
		`{"apiVersion":"v1","kind":"Secret","data":{"K":"` + b64(seedValues[0]),
		`[]`, `null`, `"x"`, ``, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		la := LastApplied(s, testFP)
		if la == nil || la.Size != len(s) {
			t.Fatalf("bad result %#v", la)
		}
		checkErrString(t, la.Err)
		if la.Err != "" {
			if la.DataKeys != nil || la.DataFPs != nil || la.SpecDataKeys != nil || la.HasSpecData || la.CreationPolicySet || la.Kind != "" {
				t.Fatalf("keys despite Err: %#v", la)
			}
			if len(s) <= MaxLastAppliedBytes && json.Valid([]byte(s)) && jsonType([]byte(s)) == '{' && !strings.Contains(la.Err, "not a") && !strings.Contains(la.Err, "entry is not") {
				t.Fatalf("valid object rejected: %s", la.Err)
			}
			return
		}
		if len(s) > MaxLastAppliedBytes || !json.Valid([]byte(s)) {
			t.Fatalf("no Err for invalid/oversized input")
		}
		if !slices.IsSorted(la.DataKeys) || len(slices.Compact(slices.Clone(la.DataKeys))) != len(la.DataKeys) {
			t.Fatalf("DataKeys not sorted/unique: %q", la.DataKeys)
		}
		for k := range la.DataFPs.All() {
			if !slices.Contains(la.DataKeys, k) {
				t.Fatalf("fingerprint for unlisted key %q", k)
			}
		}
		names, values := refStrings([]byte(s), lastAppliedValuePath)
		out := append([]string{la.APIVersion, la.Kind, la.Name}, la.DataKeys...)
		out = append(out, la.SpecDataKeys...)
		noFP := *la
		noFP.DataFPs = nil
		assertNoLeak(t, out, fmt.Sprintf("%#v", noFP), names, values)
		// The seed values never show up, fingerprints included.
		full := fmt.Sprintf("%#v", la)
		for _, v := range seedValues {
			if !containedInAny(v, names) && strings.Contains(full, v) {
				t.Fatalf("seed value leaked: %s", full)
			}
		}
	})
}

func FuzzHelmRelease(f *testing.F) {
	m := manifestV([4]string{seedValues[0], seedValues[1], seedValues[2], seedValues[3]}, true)
	rel := helmRel("app", "prod", 2, "deployed", m)
	good := helmPayload(f, rel, true, true)
	gzOnly := helmPayload(f, rel, true, false)
	f.Add(good, "", byte(0))
	f.Add(gzOnly[:len(gzOnly)/2], "", byte(0))                                            // truncated gzip
	f.Add([]byte(base64.StdEncoding.EncodeToString(gzOnly[:len(gzOnly)-9])), "", byte(0)) // truncated gzip, base64
	f.Add(helmPayload(f, rel, false, true), "", byte(0))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"), "", byte(0))
	f.Add(gz(bytes.Repeat([]byte{'{'}, 1<<20)), "", byte(0))                            // 1 MiB of nesting
	f.Add([]byte(`{"manifest":"kind: Secret\n\u0000\ufffd","version":1}`), "", byte(0)) // NUL
	f.Add([]byte("{\"manifest\":\"kind: Secret\xff\xfe\"}"), "", byte(0))               // invalid UTF-8
	for _, mode := range []byte{1, 3, 7, 15} {
		f.Add([]byte{}, m, mode)
	}
	f.Add([]byte{}, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {K: "+seedValues[0]+"}\n---\n"+strings.Repeat("- ", 12000)+"x\n", byte(7))
	f.Add([]byte{}, "kind: Secret\napiVersion: v1\ndata: &a {K: "+seedValues[1]+"}\nstringData: *a\n---\nkind: \"Secr\\x65t\"\napiVersion: v1\ndata: {A: b}\n", byte(3))
	f.Add([]byte{}, "kind: !!binary U2VjcmV0\napiVersion: v1\nmetadata: {name: bin}\ndata: {A: b}\n", byte(3))
	f.Add([]byte{}, "kind: Secret\napiVersion: v1\ndata:\n  K: \""+seedValues[2]+"\x00\xff\"\n", byte(3))
	f.Add([]byte{}, "a: &a [*a, *a]\nkind: Secret\n", byte(3))
	f.Add([]byte{}, secretAnnotation(1<<20), byte(3))

	f.Fuzz(func(t *testing.T, raw []byte, manifest string, mode byte) {
		payload := raw
		structured := mode&1 != 0
		if structured {
			payload = helmPayload(t, helmRel("fz", "ns", 3, "deployed", manifest), mode&2 != 0, mode&4 != 0)
			if mode&8 != 0 && len(payload) > 0 {
				payload = payload[:len(raw)%len(payload)]
			}
		}
		info, exps, err := HelmRelease(payload)
		checkErr(t, err)
		if err != nil {
			checkErrString(t, err.Error())
		}
		if info.Documents > MaxHelmDocuments {
			t.Fatalf("%d documents", info.Documents)
		}
		for _, e := range exps {
			if e.Kind != "Secret" && e.Kind != "ExternalSecret" {
				t.Fatalf("kind %q", e.Kind)
			}
			if !slices.IsSorted(e.Keys) {
				t.Fatalf("keys not sorted")
			}
		}
		if !structured || mode&8 != 0 {
			rendered := fmt.Sprintf("%#v %#v %v", info, exps, err)
			for _, v := range seedValues {
				if strings.Contains(rendered, v) && !bytes.Contains(payload, []byte("\""+v+"\":")) && !bytes.Contains(payload, []byte(v+":")) {
					t.Fatalf("seed value leaked: %s", rendered)
				}
			}
			return
		}
		// Reference: every document through the same YAML→JSON converter, then
		// encoding/json's tokenizer.
		// The manifest as the payload carries it (json.Marshal makes it valid UTF-8).
		mj, _ := json.Marshal(manifest)
		var carried string
		if err := json.Unmarshal(mj, &carried); err != nil {
			t.Fatal(err)
		}
		names, values := map[string]bool{}, map[string]bool{}
		splitDocuments([]byte(carried), func(doc []byte, _ int) bool {
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return true
			}
			n, v := refStrings(j, manifestValuePath)
			for s := range n {
				names[s] = true
			}
			for s := range v {
				values[s] = true
			}
			return true
		})
		var out []string
		for _, e := range exps {
			out = append(out, e.Name, e.Namespace, e.Kind)
			out = append(out, e.Keys...)
			if e.ES != nil {
				out = append(out, e.ES.Target)
				out = append(out, e.ES.DataKeys...)
				out = append(out, e.ES.TemplateKeys...)
			}
		}
		out = append(out, info.Name, info.Namespace, info.Status)
		assertNoLeak(t, out, fmt.Sprintf("%#v %#v %v", info, exps, err), names, values, "fz", "ns", "deployed")
	})
}

func FuzzExpectedKeys(f *testing.F) {
	for _, s := range []string{
		"A,B,C", " DB_PASSWORD ,\n\tDB_USER,,", "a b c a", "..x,.,..", "ok," + seedValues[0] + "!",
		"caf\xc3\xa9,\xff\xfe,ok", "nul\x00,ok", strings.Repeat("k", 254), strings.Repeat("abc,", MaxExpectedKeysBytes/4+1),
		strings.Repeat("a", 1<<20),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ExpectedKeys(s)
		checkErr(t, err)
		if err != nil {
			checkErrString(t, err.Error())
		}
		if len(s) > MaxExpectedKeysBytes {
			if keys != nil || err == nil {
				t.Fatal("oversized annotation accepted")
			}
			return
		}
		if len(keys) > MaxExpectedKeys || !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
			t.Fatalf("keys not bounded/sorted/unique: %q", keys)
		}
		entries := strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && isKeySep(byte(r)) })
		valid := map[string]bool{}
		invalid := 0
		for _, e := range entries {
			if d, _ := checkSecretKey(e); d == "" {
				valid[e] = true
			} else {
				invalid++
			}
		}
		for _, k := range keys {
			if !valid[k] {
				t.Fatalf("returned %q which is not a valid entry", k)
			}
		}
		if len(valid) <= MaxExpectedKeys && len(keys) != len(valid) {
			t.Fatalf("lost entries: %d of %d", len(keys), len(valid))
		}
		if (invalid > 0 || len(valid) > MaxExpectedKeys) != (err != nil) {
			t.Fatalf("invalid=%d valid=%d err=%v", invalid, len(valid), err)
		}
	})
}

// refOwns is the reference for ManagedFields: encoding/json's tokenizer over the
// top-level members.
func refOwns(raw []byte, names []string) bool {
	if len(raw) > MaxFieldsV1Bytes || !json.Valid(raw) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if slices.Contains(names, tok.(string)) {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

func FuzzManagedFields(f *testing.F) {
	for _, s := range []string{
		`{"f:data":{"f:A":{}},"f:metadata":{}}`, `{"f:metadata":{"f:annotations":{"f:data":{}}}}`, `{"f:d\u0061ta":{}}`,
		`{"f:data":{}`, `["f:data"]`, "{\"f:data\x00\":{}}", "{\"f:\xffdata\":{}}", `{"a":"b","f:stringData":null}`,
		deepJSON(5000), deepJSON(10001), `{"f:x":"` + strings.Repeat("a", 1<<20) + `","f:data":{}}`,
	} {
		f.Add([]byte(s), "f:spec")
	}
	f.Fuzz(func(t *testing.T, raw []byte, field string) {
		names := []string{"f:data", "f:stringData", field}
		entries := []metav1.ManagedFieldsEntry{
			{Manager: "m", Operation: "Update", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}},
			{Manager: "n", Operation: "Apply", FieldsType: "FieldsV1"},
		}
		got := ManagedFields(entries, names...)
		if len(got) != 2 || got[1].OwnsData {
			t.Fatalf("%+v", got)
		}
		if want := refOwns(raw, names); got[0].OwnsData != want {
			t.Fatalf("OwnsData = %v, reference says %v", got[0].OwnsData, want)
		}
		_ = LastDataWrite(got)
	})
}

// FuzzJSONScan checks the zero-copy walkers against encoding/json.
func FuzzJSONScan(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x\"y","c":[1,{"d":"}"}],"e":null,"f":true,"g":-1.5e3}`, `{"\u0061":"\ud83d\ude00\ud800\udc00\udc00"}`,
		`{}`, ` { "a" : [ ] } `, `[1,"2",{"3":4}]`, "{\"a\":\"\xff\xfe\"}", `{"a":"\u0000"}`, deepJSON(100), `{"a":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Never panic, whatever the input.
		eachMember(b, func(k, v []byte) bool { unquoteBytes(v, new([]byte)); _, _ = unquoteString(k); return true })
		eachElement(b, func(v []byte) bool { return true })
		valueEnd(b, 0)
		if !json.Valid(b) {
			return
		}
		switch jsonType(b) {
		case '{':
			dec := json.NewDecoder(bytes.NewReader(b))
			_, _ = dec.Token()
			type kv struct {
				k string
				v json.RawMessage
			}
			var want []kv
			for dec.More() {
				tok, _ := dec.Token()
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
				want = append(want, kv{tok.(string), v})
			}
			var got []kv
			if !eachMember(b, func(k, v []byte) bool {
				ks, ok := unquoteString(k)
				if !ok {
					t.Fatalf("key %q", k)
				}
				got = append(got, kv{ks, v})
				return true
			}) {
				t.Fatal("eachMember failed on a valid object")
			}
			if len(got) != len(want) {
				t.Fatalf("%d members, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].k != want[i].k || !bytes.Equal(compact(t, got[i].v), compact(t, want[i].v)) {
					t.Fatalf("member %d: %q=%s, want %q=%s", i, got[i].k, got[i].v, want[i].k, want[i].v)
				}
				checkUnquote(t, got[i].v)
			}
		case '[':
			var want []json.RawMessage
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			if !eachElement(b, func(v []byte) bool { got = append(got, v); return true }) || len(got) != len(want) {
				t.Fatalf("elements: %d, want %d", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(compact(t, got[i]), compact(t, want[i])) {
					t.Fatalf("element %d", i)
				}
				checkUnquote(t, got[i])
			}
		case '"':
			checkUnquote(t, b)
		}
	})
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func checkUnquote(t *testing.T, v []byte) {
	if jsonType(v) != '"' {
		return
	}
	var want string
	if err := json.Unmarshal(v, &want); err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	got, ok := unquoteBytes(v, &scratch)
	if !ok || string(got) != want {
		t.Fatalf("unquote(%q) = %q, want %q", v, got, want)
	}
	if s, ok := unquoteString(v); !ok || s != want {
		t.Fatalf("unquoteString(%q) = %q", v, s)
	}
}
