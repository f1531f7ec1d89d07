package transform

// The wire path: Secrets and Pods are listed and watched through a REST client
// of our own (internal/kube wire.go) whose decoder, here, reads the protobuf
// response straight into the value-free records (wiresecret.go, wirepod.go),
// instead of decoding typed objects that the transform then reduces. The
// informer, its reflector, relists and the watch-list stay client-go's: only
// the ListerWatcher's decoder differs.
//
// Anything unexpected — a JSON response, another kind or version, a message the
// wire decoder rejects — is decoded by the scheme's typed decoder and reduced by
// the usual transform (the typed path), counted in
// driftwatch_wire_fallbacks_total and logged once per resource and reason. The
// records of both paths are the same (wire_test.go proves it on generated,
// real and fuzzed objects).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/driftwatch/driftwatch/internal/model"
)

// recordList is a list response decoded into records. It satisfies what the
// reflector and the pager need of a list (meta.ListAccessor, meta.ExtractList).
type recordList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

func (l *recordList) DeepCopyObject() runtime.Object {
	cp := *l
	cp.Items = append([]runtime.Object(nil), l.Items...) // records are immutable
	return &cp
}

// wireKind is a kind the wire decoder reads.
type wireKind struct {
	resource model.Resource
	kind     string // Secret, Pod
	list     string // SecretList, PodList
}

var (
	wireSecrets = &wireKind{resource: model.ResSecrets, kind: "Secret", list: "SecretList"}
	wirePods    = &wireKind{resource: model.ResPods, kind: "Pod", list: "PodList"}
)

// Wire fallback reasons.
const (
	fallbackContentType = "content_type" // the server answered JSON (or another media type)
	fallbackKind        = "kind"         // another kind or version than expected
	fallbackDecode      = "decode"       // the wire decoder rejected the message
)

// wireStats counts fallbacks per {resource, reason} and logs the first of each.
type wireStats struct {
	counts  sync.Map // [2]string → *atomic.Uint64
	decoded sync.Map // model.Resource → *atomic.Uint64: objects decoded from the wire
}

func (t *Transformer) wireFallback(res model.Resource, reason string, err error) {
	s := &t.wire
	k := [2]string{string(res), reason}
	c, ok := s.counts.Load(k)
	if !ok {
		c, _ = s.counts.LoadOrStore(k, new(atomic.Uint64))
	}
	if c.(*atomic.Uint64).Add(1) == 1 && t.Logger != nil {
		// The error texts are the wire decoder's own or the typed decoder's:
		// neither carries input bytes.
		msg := ""
		if err != nil {
			msg = truncate(err.Error(), 200)
		}
		t.Logger.Warn("wire decoder fell back to client-go's decoder; the objects are decoded, at that path's cost",
			"resource", res, "reason", reason, "err", msg)
	}
}

func (s *wireStats) wire(res model.Resource, n int) {
	c, ok := s.decoded.Load(res)
	if !ok {
		c, _ = s.decoded.LoadOrStore(res, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(uint64(n))
}

// WireFallbacks counts responses and watch events the typed decoder decoded
// instead of the wire decoder, per {resource, reason}.
func (t *Transformer) WireFallbacks() map[[2]string]uint64 {
	out := map[[2]string]uint64{}
	t.wire.counts.Range(func(k, v any) bool {
		out[k.([2]string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// WireDecoded counts objects the wire decoder made records of, per resource.
func (t *Transformer) WireDecoded() map[model.Resource]uint64 {
	out := map[model.Resource]uint64{}
	t.wire.decoded.Range(func(k, v any) bool {
		out[k.(model.Resource)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// wireDecoder is the decoder of one kind's responses.
type wireDecoder struct {
	t     *Transformer
	kind  *wireKind
	typed runtime.Decoder // the scheme's, for the media type (fallback)
	enc   runtime.Encoder // the scheme's serializer, for request bodies (none are sent)
	ct    string          // the media type this decoder was negotiated for
	tf    func(any) (any, error)
}

var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00} // "k8s\x00"

func (d *wireDecoder) Encode(obj runtime.Object, w io.Writer) error {
	if d.enc == nil {
		return errors.New("wire: no encoder")
	}
	return d.enc.Encode(obj, w)
}

func (d *wireDecoder) Identifier() runtime.Identifier {
	return runtime.Identifier("driftwatch-wire-" + d.kind.kind + "-" + d.ct)
}

// Decode decodes a response or a watch event's object into records.
func (d *wireDecoder) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return d.fallback(data, gvk, into, fallbackContentType, nil)
	}
	obj, err := d.decodeWire(data[len(protobufPrefix):])
	if err != nil {
		if errors.Is(err, errNotOurs) {
			return d.typedDecode(data, gvk, into)
		}
		reason := fallbackDecode
		if errors.Is(err, errOtherKind) {
			reason = fallbackKind
		}
		return d.fallback(data, gvk, into, reason, err)
	}
	return obj, &schema.GroupVersionKind{Version: "v1", Kind: d.kind.kind}, nil
}

var (
	errNotOurs   = errors.New("wire: not an object of the watched kind") // a Status: the typed decoder's
	errOtherKind = errors.New("wire: unexpected kind or version")
)

// decodeWire reads the runtime.Unknown envelope and its object.
func (d *wireDecoder) decodeWire(b []byte) (runtime.Object, error) {
	apiVersion, kind, raw, err := pbEnvelope(b)
	if err != nil {
		return nil, err
	}
	if string(apiVersion) != "v1" {
		if string(kind) == "Status" {
			return nil, errNotOurs
		}
		return nil, errOtherKind
	}
	sc := scratchPool.Get().(*wireScratch)
	defer func() {
		sc.release()
		scratchPool.Put(sc)
	}()
	var obj runtime.Object
	n := 1
	switch string(kind) {
	case d.kind.kind:
		obj, err = d.object(raw, sc)
	case d.kind.list:
		var l *recordList
		l, err = d.list(raw, sc)
		if l != nil {
			n = len(l.Items)
		}
		obj = l
	case "Status":
		return nil, errNotOurs
	default:
		return nil, errOtherKind
	}
	if err != nil {
		return nil, err
	}
	// The whole response is decoded: wipe the values it held.
	for _, v := range sc.wipe {
		clear(v)
	}
	d.t.wire.wire(d.kind.resource, n)
	return obj, nil
}

func (d *wireDecoder) object(raw []byte, sc *wireScratch) (runtime.Object, error) {
	if d.kind == wirePods {
		return d.t.podFromWire(raw, sc)
	}
	return d.t.secretFromWire(raw, sc)
}

func (d *wireDecoder) list(raw []byte, sc *wireScratch) (*recordList, error) {
	l := &recordList{}
	var seen uint64
	p := pbuf{b: raw}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1: // metadata
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			if err := once(&seen, 0); err != nil {
				return nil, err
			}
			if err := l.ListMeta.Unmarshal(v); err != nil {
				return nil, err
			}
		case 2: // items
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			obj, err := d.object(v, sc)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, obj)
		default:
			if err := p.skip(start); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// typedDecode decodes with the scheme's decoder, for objects that are not the
// watched kind's (a Status).
func (d *wireDecoder) typedDecode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	return d.typed.Decode(data, gvk, into)
}

// fallback decodes with the typed decoder and reduces the watched kind's
// objects with the transform, so the informer only ever holds records. A
// response that held Secrets is wiped whole once decoded (the typed Secrets'
// values are copies, which the transform wipes): after a fallback no value
// outlives its decode either (wipe.go).
func (d *wireDecoder) fallback(data []byte, gvk *schema.GroupVersionKind, into runtime.Object, reason string, cause error) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, got, ok, err := decodeTypedPB(data, gvk, into)
	if !ok {
		obj, got, err = d.typed.Decode(data, gvk, into)
	}
	if d.kind == wireSecrets || holdsSecret(obj) {
		defer clear(data)
	}
	if err != nil {
		return nil, got, err
	}
	switch o := obj.(type) {
	case *corev1.Secret, *corev1.Pod:
		d.t.wireFallback(d.kind.resource, reason, cause)
		rec, err := d.reduce(o)
		return rec, got, err
	case *corev1.SecretList:
		d.t.wireFallback(d.kind.resource, reason, cause)
		l := &recordList{ListMeta: o.ListMeta, Items: make([]runtime.Object, 0, len(o.Items))}
		for i := range o.Items {
			rec, err := d.reduce(&o.Items[i])
			if err != nil {
				return nil, got, err
			}
			l.Items = append(l.Items, rec)
		}
		return l, got, nil
	case *corev1.PodList:
		d.t.wireFallback(d.kind.resource, reason, cause)
		l := &recordList{ListMeta: o.ListMeta, Items: make([]runtime.Object, 0, len(o.Items))}
		for i := range o.Items {
			rec, err := d.reduce(&o.Items[i])
			if err != nil {
				return nil, got, err
			}
			l.Items = append(l.Items, rec)
		}
		return l, got, nil
	}
	return obj, got, nil
}

// reduce is the transform of a typed object (reduceFallback).
func (d *wireDecoder) reduce(obj runtime.Object) (runtime.Object, error) {
	return reduceFallback(d.tf, obj)
}

// reduceFallback is the transform tf of an object a client-go decoder made (a
// decoder's fallback), keeping a bookmark's initial-events-end annotation on
// the record (the reflector reads it; a bookmark has no name, and the
// transforms keep only the annotations the model reads).
func reduceFallback(tf func(any) (any, error), obj runtime.Object) (runtime.Object, error) {
	m, _ := obj.(metav1.Object)
	end := m != nil && m.GetName() == "" && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	out, err := tf(obj)
	if err != nil {
		return nil, err
	}
	rec, ok := out.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("transform returned %T", out)
	}
	if end {
		if r, ok := rec.(annotated); ok {
			keepInitialEventsEnd(r)
		}
	}
	return rec, nil
}

// WireSerializer is the serializer of a REST client of the core group whose
// responses of resource (model.ResSecrets or model.ResPods) decode straight
// into records: the scheme's, with the protobuf and JSON decoders replaced by
// the wire decoder, falling back to the typed decoder and the transform. The
// Secret client's watch frames are wiped once decoded (wipe.go).
func (t *Transformer) WireSerializer(resource model.Resource) runtime.NegotiatedSerializer {
	switch resource {
	case model.ResSecrets:
		return newWireSerializer(t, wireSecrets, t.Secret)
	case model.ResPods:
		return newWireSerializer(t, wirePods, t.Pod)
	}
	panic("transform: no wire decoder for " + string(resource))
}

var scratchPool = sync.Pool{New: func() any { return new(wireScratch) }}

// wireSerializer is the REST client's serializer: the scheme's, with the
// protobuf and JSON decoders replaced by those of a REST client of ours (the
// wire decoder of a kind, or typedSecretDecoder).
type wireSerializer struct {
	base  runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

// ourDecoder is a decoder of ours in a wireSerializer: its typed field is the
// scheme's decoder, set to a version by DecoderToVersion.
type ourDecoder interface {
	runtime.Serializer
	encoder() runtime.Encoder
	toVersion(func(runtime.Decoder) runtime.Decoder) runtime.Decoder
}

func (d *wireDecoder) encoder() runtime.Encoder { return d.enc }
func (d *wireDecoder) toVersion(f func(runtime.Decoder) runtime.Decoder) runtime.Decoder {
	cp := *d
	cp.typed = f(d.typed)
	return &cp
}

func (d *typedSecretDecoder) encoder() runtime.Encoder { return d.enc }
func (d *typedSecretDecoder) toVersion(f func(runtime.Decoder) runtime.Decoder) runtime.Decoder {
	cp := *d
	cp.typed = f(d.typed)
	return &cp
}

func newWireSerializer(t *Transformer, kind *wireKind, tf func(any) (any, error)) *wireSerializer {
	return newSerializer(func(info runtime.SerializerInfo) runtime.Serializer {
		return &wireDecoder{t: t, kind: kind, typed: info.Serializer, enc: info.Serializer, ct: info.MediaType, tf: tf}
	}, kind == wireSecrets)
}

// newSerializer is the scheme's serializer with the protobuf and JSON decoders
// made by dec; wipeStreams: their watch frames are wiped once decoded.
func newSerializer(dec func(runtime.SerializerInfo) runtime.Serializer, wipeStreams bool) *wireSerializer {
	base := scheme.Codecs.WithoutConversion()
	s := &wireSerializer{base: base}
	for _, info := range base.SupportedMediaTypes() {
		switch info.MediaType {
		case runtime.ContentTypeProtobuf, runtime.ContentTypeJSON:
			info.Serializer = dec(info)
			if wipeStreams {
				info.StreamSerializer = wipingStreamInfo(info.StreamSerializer)
			}
		}
		s.infos = append(s.infos, info)
	}
	return s
}

func (s *wireSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

func (s *wireSerializer) EncoderForVersion(e runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	if d, ok := e.(ourDecoder); ok {
		e = d.encoder()
	}
	return s.base.EncoderForVersion(e, gv)
}

func (s *wireSerializer) DecoderToVersion(dec runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	if d, ok := dec.(ourDecoder); ok {
		return d.toVersion(func(typed runtime.Decoder) runtime.Decoder { return s.base.DecoderToVersion(typed, gv) })
	}
	return s.base.DecoderToVersion(dec, gv)
}

// pbEnvelope reads the runtime.Unknown envelope of a protobuf message (the
// bytes after the "k8s\x00" prefix): its type meta and raw object, views of b
// (nothing is copied, unlike runtime.Unknown.Unmarshal).
func pbEnvelope(b []byte) (apiVersion, kind, raw []byte, err error) {
	var seen uint64
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, nil, nil, err
		}
		switch num {
		case 1: // typeMeta
			tm, err := p.field(wt)
			if err != nil {
				return nil, nil, nil, err
			}
			if err := once(&seen, 0); err != nil {
				return nil, nil, nil, err
			}
			q := pbuf{b: tm}
			for q.more() {
				s := q.i
				n, w, err := q.tag()
				if err != nil {
					return nil, nil, nil, err
				}
				switch n {
				case 1:
					if apiVersion, err = q.field(w); err != nil {
						return nil, nil, nil, err
					}
				case 2:
					if kind, err = q.field(w); err != nil {
						return nil, nil, nil, err
					}
				default:
					if err := q.skip(s); err != nil {
						return nil, nil, nil, err
					}
				}
			}
		case 2: // raw
			if raw, err = p.field(wt); err != nil {
				return nil, nil, nil, err
			}
		case 3, 4: // contentEncoding, contentType: none is expected
			v, err := p.field(wt)
			if err != nil {
				return nil, nil, nil, err
			}
			if len(v) > 0 && !(num == 4 && string(v) == "application/vnd.kubernetes.protobuf") {
				return nil, nil, nil, fmt.Errorf("wire: unexpected content encoding or type")
			}
		default:
			if err := p.skip(start); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return apiVersion, kind, raw, nil
}
