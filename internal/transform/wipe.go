package transform

// Wiping the buffers a Secret value passes through on its way from the
// apiserver to a record, on every decode path that client-go lets us hook
// (docs/security.md "Buffers that hold a value" lists them all, these and
// those that cannot be reached):
//
//   - the response of a list or get (client-go rest/request.go
//     transformResponse: io.ReadAll of the body, decoded later by Result.Get):
//     the wire decoder wipes the value bytes in place once the whole response
//     decoded; after a fallback, and on the typed path of Secrets
//     (TypedSecretSerializer), the whole response is wiped once decoded;
//   - the copy runtime.Unknown.Unmarshal makes of the object inside a protobuf
//     response (apimachinery runtime/generated.pb.go, `m.Raw = append(m.Raw[:0],
//     …)`), which the scheme's protobuf serializer decodes from and then drops:
//     the typed decode of a v1 Secret here reads the envelope itself
//     (pbEnvelope) and unmarshals from a view of the response, so no such copy
//     is made;
//   - a watch event's frame (apimachinery runtime/serializer/streaming
//     decoder.buf, reused from frame to frame and grown by append): wiped once
//     the event is decoded (wipingStream), and the arrays a grown buffer left
//     behind, wiped as soon as the buffer moved (wipingFramer);
//   - the event's object (metav1.WatchEvent.Object.Raw, a copy of the frame's
//     bytes): decoded by the wire decoder (values wiped) or, after a
//     fallback, wiped whole like a response;
//   - the typed Secret's Data values: fresh arrays (the generated Unmarshal
//     copies `map<string,bytes>` values; JSON decodes base64 into new
//     arrays), wiped by the transform (secret.go, helmrelease.go).

import (
	"bytes"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decodeTypedPB decodes a protobuf v1 Secret or SecretList (or, for the
// fallback of the Pod decoder, Pod or PodList) with the generated unmarshalers,
// as the scheme's protobuf serializer does (unmarshalToObject), but from a view
// of data instead of the copy runtime.Unknown.Unmarshal makes: wiping data then
// wipes every encoded copy of the values. The object's type meta is left empty,
// as runtime.WithoutVersionDecoder leaves it. ok is false for anything else
// (another kind, a target object, an envelope the scheme's decoder may read
// differently): the caller decodes it with the scheme's decoder.
func decodeTypedPB(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (obj runtime.Object, got *schema.GroupVersionKind, ok bool, err error) {
	if into != nil || !bytes.HasPrefix(data, protobufPrefix) {
		return nil, nil, false, nil
	}
	apiVersion, kind, raw, err := pbEnvelope(data[len(protobufPrefix):])
	if err != nil || string(apiVersion) != "v1" {
		return nil, nil, false, nil
	}
	if gvk != nil && (gvk.Group != "" || gvk.Version != "" && gvk.Version != "v1" || gvk.Kind != "" && gvk.Kind != string(kind)) {
		return nil, nil, false, nil
	}
	type unmarshaler interface {
		runtime.Object
		Unmarshal([]byte) error
	}
	var u unmarshaler
	switch string(kind) {
	case "Secret":
		u = &corev1.Secret{}
	case "SecretList":
		u = &corev1.SecretList{}
	case "Pod":
		u = &corev1.Pod{}
	case "PodList":
		u = &corev1.PodList{}
	default:
		return nil, nil, false, nil
	}
	got = &schema.GroupVersionKind{Version: "v1", Kind: string(kind)}
	if err := u.Unmarshal(raw); err != nil {
		return nil, got, true, err
	}
	return u, got, true, nil
}

// holdsSecret says whether a decoded object is a typed Secret or a list of
// them: the response it came from held values.
func holdsSecret(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Secret, *corev1.SecretList:
		return true
	}
	return false
}

// typedSecretDecoder is the decoder of a REST client whose Secrets stay typed
// objects (the informer's transform reduces them): the scheme's decoder, from
// a view of the response for protobuf (decodeTypedPB), and the whole response
// wiped once a Secret or a list of them is decoded from it. The typed
// object's Data values are copies, which the transform wipes.
type typedSecretDecoder struct {
	typed runtime.Decoder // the scheme's, for the media type
	enc   runtime.Encoder
	ct    string
}

func (d *typedSecretDecoder) Encode(obj runtime.Object, w io.Writer) error {
	return d.enc.Encode(obj, w)
}

func (d *typedSecretDecoder) Identifier() runtime.Identifier {
	return runtime.Identifier("driftwatch-typed-secret-" + d.ct)
}

func (d *typedSecretDecoder) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, got, ok, err := decodeTypedPB(data, gvk, into)
	if !ok {
		obj, got, err = d.typed.Decode(data, gvk, into)
	}
	if err == nil && holdsSecret(obj) {
		clear(data)
	}
	return obj, got, err
}

// TypedSecretSerializer is the serializer of a REST client of the core group
// whose Secrets are decoded into typed objects for an informer's transform
// (the Helm release informer; Secrets with --typed-decode): the scheme's, with
// every response and watch frame that held a Secret wiped once decoded.
func (t *Transformer) TypedSecretSerializer() runtime.NegotiatedSerializer {
	return newSerializer(func(info runtime.SerializerInfo) runtime.Serializer {
		return &typedSecretDecoder{typed: info.Serializer, enc: info.Serializer, ct: info.MediaType}
	}, true)
}

// wipingStream is a watch stream's event decoder (the frame → metav1.WatchEvent
// step) that wipes the frame once decoded: the event's object is a copy
// (RawExtension's Unmarshal and UnmarshalJSON copy), and the streaming decoder
// reads the next frame over this one.
type wipingStream struct{ runtime.Serializer }

func (s wipingStream) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, got, err := s.Serializer.Decode(data, gvk, into)
	clear(data)
	return obj, got, err
}

// wipingFramer wraps a watch stream's frame reader (wipingFrames).
type wipingFramer struct{ runtime.Framer }

func (f wipingFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &wipingFrames{ReadCloser: f.Framer.NewFrameReader(r)}
}

func (f wipingFramer) NewFrameWriter(w io.Writer) io.Writer { return f.Framer.NewFrameWriter(w) }

// wipingFrames is a frame reader that wipes what it wrote into a buffer the
// streaming decoder has since dropped: the decoder grows its frame buffer by
// append (a new array holding a copy of the frame so far) and reads on into
// the new one, leaving the old array to the garbage collector with part of
// the frame in it. The frame in the current array is wiped by wipingStream
// once decoded. Close does not wipe: it may run concurrently with a Read (a
// watcher's Stop), and the current array is wiped per frame anyway.
type wipingFrames struct {
	io.ReadCloser
	written []written // what this reader wrote into the current array and, until the next Read, older ones
}

type written struct {
	b   []byte
	end *byte // arrayEnd of the buffer b was written into
}

func (f *wipingFrames) Read(p []byte) (int, error) {
	if len(f.written) > 0 && cap(p) > 0 {
		end := arrayEnd(p)
		keep := f.written[:0]
		for _, w := range f.written {
			if w.end != end {
				clear(w.b) // the decoder moved to a new array: this one is garbage
				continue
			}
			keep = append(keep, w)
		}
		clear(f.written[len(keep):])
		f.written = keep
	}
	n, err := f.ReadCloser.Read(p)
	if err == nil {
		// A whole frame: the streaming decoder decodes it next (wipingStream
		// wipes it); the next frame starts over.
		clear(f.written)
		f.written = f.written[:0]
		return n, err
	}
	if n > 0 && len(f.written) < 64 {
		f.written = append(f.written, written{b: p[:n:n], end: arrayEnd(p)})
	}
	return n, err
}

// arrayEnd identifies the array a slice of a growable buffer views: its last
// element (every reslice of a buffer d.buf[base:] ends where the array ends).
func arrayEnd(b []byte) *byte { return &b[:cap(b)][cap(b)-1] }

// wipingStreamInfo wraps a media type's stream serializer and framer.
func wipingStreamInfo(s *runtime.StreamSerializerInfo) *runtime.StreamSerializerInfo {
	if s == nil {
		return nil
	}
	cp := *s
	cp.Serializer = wipingStream{s.Serializer}
	cp.Framer = wipingFramer{s.Framer}
	return &cp
}
