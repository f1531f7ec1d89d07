package transform

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/driftwatch/driftwatch/internal/model"
)

// wipeSecret is a Secret whose values are secretValues, one of them longer
// than a watch stream's first frame buffer (1 KiB), so a frame grows it.
func wipeSecret(name string) *corev1.Secret {
	big := bytes.Repeat([]byte(secretValues[2]), 40) // 2.3 KiB
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", ResourceVersion: "7"},
		Data: map[string][]byte{"password": []byte(secretValues[0]), "horse": []byte(secretValues[1]), "key": big}}
}

// assertNoValueIn fails if buf holds a value of secretValues[:3] or its base64
// form (the JSON encoding), or a 12-byte piece of either.
func assertNoValueIn(t *testing.T, what string, buf []byte) {
	t.Helper()
	for i, v := range secretValues[:3] {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			for o := 0; o+12 <= len(form); o += 4 {
				if bytes.Contains(buf, []byte(form[o:o+12])) {
					t.Fatalf("%s: a piece of value #%d is still there", what, i)
				}
			}
		}
	}
}

func assertValueIn(t *testing.T, what string, buf []byte) {
	t.Helper()
	if !bytes.Contains(buf, []byte(secretValues[0])) && !bytes.Contains(buf, []byte(base64.StdEncoding.EncodeToString([]byte(secretValues[0])))) {
		t.Fatalf("%s: the value is not there to begin with: the test proves nothing", what)
	}
}

// A wire fallback — a JSON response, a protobuf message the wire decoder
// rejects — leaves no value in the response or the record: the typed
// Secret's values are copies the transform wipes, the response is wiped
// whole once decoded.
func TestWireFallbackWipesResponse(t *testing.T) {
	list := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items: []corev1.Secret{*wipeSecret("a"), *wipeSecret("b")}}
	repeated := func(data []byte) []byte {
		// A singular message repeated (metadata again): the wire decoder
		// rejects it, the typed decoder merges.
		unk := runtime.Unknown{}
		if err := unk.Unmarshal(data[4:]); err != nil {
			t.Fatal(err)
		}
		unk.Raw = append(unk.Raw, 0x0a, 0x02, 0x0a, 0x00)
		raw, _ := unk.Marshal()
		return append(append([]byte{}, protobufPrefix...), raw...)
	}
	for _, c := range []struct {
		name   string
		data   []byte
		reason string
	}{
		{"json secret", mustJSON(t, wipeSecret("a")), fallbackContentType},
		{"json list", mustJSON(t, list.DeepCopy()), fallbackContentType},
		{"protobuf rejected", repeated(encodePB(t, wipeSecret("a"))), fallbackDecode},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTransformer()
			assertValueIn(t, "response", c.data)
			rec, _, err := wireDecoderFor(tr, wireSecrets).Decode(c.data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fb := tr.WireFallbacks(); fb[[2]string{"secrets", c.reason}] != 1 {
				t.Fatalf("fallbacks %v, want one %s", fb, c.reason)
			}
			assertNoValues(t, "record", rec)
			assertNoValueIn(t, "response after the fallback", c.data)
			switch r := rec.(type) {
			case *model.Secret:
				if r.Keys.Len() != 3 {
					t.Fatalf("keys: %d", r.Keys.Len())
				}
			case *recordList:
				if len(r.Items) != 2 {
					t.Fatalf("items: %d", len(r.Items))
				}
			default:
				t.Fatalf("record %T", rec)
			}
		})
	}
}

// The protobuf fallback decodes from a view of the response (no copy of the
// object, as runtime.Unknown.Unmarshal makes, outlives the decode), into
// the same typed object as the scheme's decoder.
func TestDecodeTypedPBEqualsScheme(t *testing.T) {
	for kind, obj := range map[string]runtime.Object{"Secret": wipeSecret("a"), "SecretList": &corev1.SecretList{Items: []corev1.Secret{*wipeSecret("a")}}} {
		data := encodePB(t, obj)
		want, _, err := pbSerializer.Decode(bytes.Clone(data), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		got, gvk, ok, err := decodeTypedPB(data, nil, nil)
		if !ok || err != nil {
			t.Fatalf("ok %v err %v", ok, err)
		}
		if *gvk != (schema.GroupVersionKind{Version: "v1", Kind: kind}) {
			t.Fatalf("gvk %v", gvk)
		}
		if dump(want) != dump(got) {
			t.Fatalf("typed decode differs:\n%s\n%s", dump(want), dump(got))
		}
		// The values are copies: wiping the response leaves them.
		clear(data)
		if dump(want) != dump(got) {
			t.Fatal("the decoded object aliases the response")
		}
	}
	if _, _, ok, _ := decodeTypedPB(encodePB(t, &metav1.Status{Status: "Failure"}), nil, nil); ok {
		t.Fatal("a Status is the scheme's to decode")
	}
	if _, _, ok, _ := decodeTypedPB(encodePB(t, wipeSecret("a")), nil, &corev1.Secret{}); ok {
		t.Fatal("a target object is the scheme's to decode into")
	}
}

// typedSecretDecoderOf is the protobuf or JSON decoder of the serializer, set
// to v1 as a REST client's negotiator sets it.
func typedSecretDecoderOf(t *testing.T, ns runtime.NegotiatedSerializer, mediaType string) runtime.Decoder {
	t.Helper()
	for _, info := range ns.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return ns.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
		}
	}
	t.Fatalf("no %s", mediaType)
	return nil
}

// The typed path (the Helm release informer; Secrets with --typed-decode):
// the typed Secret keeps its values for the transform, the response is wiped
// once decoded, and the transform wipes the values.
func TestTypedSecretSerializerWipes(t *testing.T) {
	tr := newTransformer()
	ser := tr.TypedSecretSerializer()
	for _, c := range []struct {
		name, mediaType string
		data            []byte
	}{
		{"protobuf secret", runtime.ContentTypeProtobuf, encodePB(t, wipeSecret("a"))},
		{"protobuf list", runtime.ContentTypeProtobuf, encodePB(t, &corev1.SecretList{Items: []corev1.Secret{*wipeSecret("a"), *wipeSecret("b")}})},
		{"json secret", runtime.ContentTypeJSON, mustJSON(t, wipeSecret("a"))},
		{"json list", runtime.ContentTypeJSON, mustJSON(t, &corev1.SecretList{Items: []corev1.Secret{*wipeSecret("a")}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			assertValueIn(t, "response", c.data)
			obj, _, err := typedSecretDecoderOf(t, ser, c.mediaType).Decode(c.data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertNoValueIn(t, "response after the typed decode", c.data)
			var secrets []*corev1.Secret
			switch o := obj.(type) {
			case *corev1.Secret:
				secrets = append(secrets, o)
			case *corev1.SecretList:
				for i := range o.Items {
					secrets = append(secrets, &o.Items[i])
				}
			default:
				t.Fatalf("decoded %T", obj)
			}
			if !o(obj).Empty() {
				t.Fatalf("type meta %v: the typed decoder leaves it empty", o(obj))
			}
			for _, s := range secrets {
				if string(s.Data["password"]) != secretValues[0] {
					t.Fatal("the typed Secret lost its value before the transform")
				}
				vals := [][]byte{s.Data["password"], s.Data["horse"], s.Data["key"]}
				rec, err := tr.Secret(s)
				if err != nil {
					t.Fatal(err)
				}
				assertNoValues(t, "record", rec)
				for _, v := range vals {
					assertNoValueIn(t, "a typed value after the transform", v)
				}
			}
		})
	}
}

func o(obj runtime.Object) schema.GroupVersionKind { return obj.GetObjectKind().GroupVersionKind() }

// recordingBody is a watch response body that keeps every buffer the frame
// reader read into.
type recordingBody struct {
	r    io.Reader
	seen [][]byte
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.seen = append(b.seen, p[:n])
	return n, err
}
func (b *recordingBody) Close() error { return nil }

// A watch stream as client-go reads it (rest/request.go newStreamWatcher):
// the frame reader reads the body into the streaming decoder's frame buffer,
// which grows for a large event; the event is decoded, then its object. Every
// buffer the frames were read into holds no value once the events decoded —
// the grown-out-of arrays included — on the wire path and the typed path.
func TestWatchFramesWiped(t *testing.T) {
	pb := protobufStream(t, wipeSecret("a"), wipeSecret("b"))
	tr := newTransformer()
	for _, c := range []struct {
		name string
		ser  runtime.NegotiatedSerializer
	}{
		{"wire", tr.WireSerializer(model.ResSecrets)},
		{"typed", tr.TypedSecretSerializer()},
	} {
		t.Run(c.name, func(t *testing.T) {
			neg := runtime.NewClientNegotiator(c.ser, corev1.SchemeGroupVersion)
			objDec, streamDec, framer, err := neg.StreamDecoder(runtime.ContentTypeProtobuf, nil)
			if err != nil {
				t.Fatal(err)
			}
			body := &recordingBody{r: bytes.NewReader(bytes.Clone(pb))}
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), streamDec), objDec)
			for i := range 2 {
				typ, obj, err := dec.Decode()
				if err != nil {
					t.Fatal(err)
				}
				if typ != watch.Added {
					t.Fatalf("event %d: %s", i, typ)
				}
				if s, ok := obj.(*corev1.Secret); ok {
					_, _ = tr.Secret(s) // the informer's transform
				}
				assertNoValues(t, "object", obj)
			}
			grown := map[*byte]bool{}
			for _, b := range body.seen {
				if cap(b) > 0 {
					grown[arrayEnd(b)] = true
				}
				assertNoValueIn(t, "a frame buffer", b)
			}
			if len(grown) < 2 {
				t.Fatalf("the frame buffer never grew (%d arrays): the test proves less than it says", len(grown))
			}
		})
	}
}

// protobufStream is a protobuf watch stream of ADDED events of objs, as the
// apiserver writes it: length-prefixed metav1.WatchEvent frames whose object
// is a protobuf response.
func protobufStream(t *testing.T, objs ...runtime.Object) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, obj := range objs {
		ev := metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: encodePB(t, obj)}}
		b, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var h [4]byte
		binary.BigEndian.PutUint32(h[:], uint32(len(b)))
		out.Write(h[:])
		out.Write(b)
	}
	return out.Bytes()
}
