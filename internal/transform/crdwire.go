package transform

// The JSON reader of custom resources (issue 35): ExternalSecrets are listed
// and watched through a REST client of our own (internal/kube crdwire.go)
// whose decoder, here, reads the apiserver's JSON straight into the
// ExternalSecret record, instead of the dynamic client's map[string]any that
// the transform then reduces. Metadata (annotations, labels, managedFields)
// decode into typed fields; only spec and status, which the one ExternalSecret
// decoder (eso.Decode) reads, become maps, and only for the object at hand.
// The informer, its reflector, relists and the streaming list stay
// client-go's.
//
// Anything else — a Status (an error answer, a watch ERROR event) decodes to
// a metav1.Status as the dynamic client's would; another kind or version, or
// an object whose metadata does not decode into ObjectMeta, is decoded by the
// unstructured decoder and reduced by the usual transform (counted in
// driftwatch_wire_fallbacks_total, logged once per reason). The records of
// both paths are the same (crdwire_test.go).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	sigsjson "sigs.k8s.io/json"

	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/model"
)

// watchScheme decodes the watch stream's event envelopes (metav1.WatchEvent),
// as the dynamic client's does.
var watchScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// CRDSerializer is the serializer of a REST client of group/version gv whose
// responses of resource decode straight into records (JSON only). It is nil
// for a resource without a JSON reader (they keep the dynamic informer).
func (t *Transformer) CRDSerializer(resource model.Resource, gv schema.GroupVersion) runtime.NegotiatedSerializer {
	var d *crdDecoder
	switch resource {
	case model.ResExternalSecrets:
		d = &crdDecoder{t: t, res: resource, apiVersion: gv.String(), kind: "ExternalSecret",
			list: "ExternalSecretList", object: t.externalSecretFromJSON, tf: t.ExternalSecret}
	default:
		return nil
	}
	return &crdSerializer{infos: []runtime.SerializerInfo{{
		MediaType:        runtime.ContentTypeJSON,
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       d,
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true,
			Serializer:    kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, watchScheme, watchScheme, kjson.SerializerOptions{}),
			Framer:        kjson.Framer,
		},
	}}}
}

type crdSerializer struct{ infos []runtime.SerializerInfo }

func (s *crdSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }
func (s *crdSerializer) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}
func (s *crdSerializer) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// crdDecoder decodes one resource's responses and watch events into records.
type crdDecoder struct {
	t          *Transformer
	res        model.Resource
	apiVersion string // group/version
	kind, list string
	// object makes the record of one object (its top-level fields decoded).
	object func(doc *crdDoc) (runtime.Object, error)
	// tf is the transform of the unstructured path (the fallback).
	tf func(any) (any, error)
}

// crdDoc is what the reader keeps of a custom resource, a list of them or a
// Status: everything else is skipped without being decoded or kept.
type crdDoc struct {
	apiVersion, kind string
	meta             crdMeta
	// obj holds spec and status as the unstructured decoder would (maps,
	// lists, strings, int64/float64, bools, nil): what eso.Decode reads.
	obj   map[string]any
	items []crdDoc
}

// crdMeta is what the reader keeps of metadata: ObjectMeta's fields the
// record reads and ListMeta's.
type crdMeta struct {
	name, namespace, uid, resourceVersion, continu string
	created, deleted                               string
	remaining                                      *int64
	generation                                     int64
	annotations, labels                            map[string]string
	managedFields                                  []metav1.ManagedFieldsEntry
}

// errNotAsIs: the document holds something the reader does not take as is (a
// field of an unexpected JSON type, duplicate names, invalid UTF-8, a
// timestamp that does not parse): the unstructured path, whose rules define
// the record, decodes it.
var errNotAsIs = errors.New("crd: a field the JSON reader does not take as is")

var jsonReaders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewBuffer(nil)) }}

func (d *crdDecoder) Identifier() runtime.Identifier {
	return runtime.Identifier("driftwatch-crd-json-" + d.kind)
}

func (d *crdDecoder) Encode(runtime.Object, io.Writer) error {
	return errors.New("crd: the JSON reader sends no request bodies")
}

// Decode decodes a response or a watch event's object into records.
func (d *crdDecoder) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	dec := jsonReaders.Get().(*jsontext.Decoder)
	dec.Reset(bytes.NewBuffer(data)) // read in place, not copied
	doc, err := jsonDoc(dec, true)
	if err == nil {
		if _, e := dec.ReadToken(); e != io.EOF {
			err = errNotAsIs // data after the document
		}
	}
	dec.Reset(bytes.NewBuffer(nil))
	jsonReaders.Put(dec)
	if err != nil {
		return d.fallback(data, gvk, into, fallbackDecode, err)
	}
	if doc.kind == "Status" {
		st := &metav1.Status{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, st); err != nil {
			return nil, nil, fmt.Errorf("crd: decoding a Status: %w", err)
		}
		return st, &schema.GroupVersionKind{Version: "v1", Kind: "Status"}, nil
	}
	if doc.apiVersion != d.apiVersion || (doc.kind != d.kind && doc.kind != d.list) {
		return d.fallback(data, gvk, into, fallbackKind, nil)
	}
	got := schema.FromAPIVersionAndKind(doc.apiVersion, doc.kind)
	if doc.kind == d.kind {
		if doc.items != nil {
			return d.fallback(data, gvk, into, fallbackKind, nil)
		}
		obj, err := d.object(&doc)
		if err != nil {
			return d.fallback(data, gvk, into, fallbackDecode, err)
		}
		d.t.wire.wire(d.res, 1)
		return obj, &got, nil
	}
	l := &recordList{TypeMeta: metav1.TypeMeta{APIVersion: doc.apiVersion, Kind: doc.kind},
		ListMeta: metav1.ListMeta{ResourceVersion: doc.meta.resourceVersion, Continue: doc.meta.continu,
			RemainingItemCount: doc.meta.remaining},
		Items: make([]runtime.Object, 0, len(doc.items))}
	for i := range doc.items {
		item := &doc.items[i]
		// Items carry their own type meta (the apiserver writes it).
		if item.apiVersion != d.apiVersion || item.kind != d.kind {
			return d.fallback(data, gvk, into, fallbackKind, nil)
		}
		obj, err := d.object(item)
		if err != nil {
			return d.fallback(data, gvk, into, fallbackDecode, err)
		}
		l.Items = append(l.Items, obj)
	}
	d.t.wire.wire(d.res, len(l.Items))
	return l, &got, nil
}

// jsonDoc reads one object (top: or a list of them, or a Status).
func jsonDoc(dec *jsontext.Decoder, top bool) (crdDoc, error) {
	var doc crdDoc
	if err := jsonObject(dec, func(name []byte) error {
		var err error
		switch string(name) {
		case "apiVersion":
			doc.apiVersion, err = jsonString(dec)
		case "kind":
			doc.kind, err = jsonString(dec)
		case "metadata":
			err = jsonMeta(dec, &doc.meta)
		case "spec", "status":
			var v any
			if string(name) == "spec" {
				v, err = jsonSpec(dec)
			} else {
				v, err = jsonAny(dec, 0)
			}
			if err == nil {
				if doc.obj == nil {
					doc.obj = make(map[string]any, 2)
				}
				doc.obj[string(name)] = v
			}
		case "items":
			if !top {
				return dec.SkipValue()
			}
			if dec.PeekKind() == 'n' {
				_, err = dec.ReadToken()
				return err
			}
			doc.items = []crdDoc{}
			err = jsonArray(dec, func() error {
				item, err := jsonDoc(dec, false)
				doc.items = append(doc.items, item)
				return err
			})
		default:
			err = dec.SkipValue()
		}
		return err
	}); err != nil {
		return doc, err
	}
	return doc, nil
}

// jsonSpec reads spec as jsonAny does, except the members of spec.data's
// entries other than secretKey, which are skipped: eso.Decode reads nothing
// else of an entry (remoteRef, the bulk of a spec, is never looked at), and
// TestCRDJSONExternalSecretsEqualUnstructured, whose entries carry remoteRef,
// fails if it starts to.
func jsonSpec(dec *jsontext.Decoder) (any, error) {
	if dec.PeekKind() != '{' {
		return jsonAny(dec, 0)
	}
	m := map[string]any{}
	err := jsonObject(dec, func(name []byte) error {
		var v any
		var err error
		if string(name) == "data" && dec.PeekKind() == '[' {
			l := []any{}
			err = jsonArray(dec, func() error {
				if dec.PeekKind() != '{' {
					e, err := jsonAny(dec, 2)
					l = append(l, e)
					return err
				}
				entry := map[string]any{}
				err := jsonObject(dec, func(name []byte) error {
					if string(name) != "secretKey" {
						return dec.SkipValue()
					}
					v, err := jsonAny(dec, 3)
					entry["secretKey"] = v
					return err
				})
				l = append(l, entry)
				return err
			})
			v = l
		} else {
			v, err = jsonAny(dec, 1)
		}
		m[string(name)] = v
		return err
	})
	return m, err
}

// jsonMeta reads metadata: what ObjectMeta and ListMeta hold that the
// records read. A field of another JSON type than its own is errNotAsIs.
func jsonMeta(dec *jsontext.Decoder, m *crdMeta) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	return jsonObject(dec, func(name []byte) error {
		var err error
		switch string(name) {
		case "name":
			m.name, err = jsonString(dec)
		case "namespace":
			m.namespace, err = jsonString(dec)
		case "uid":
			m.uid, err = jsonString(dec)
		case "resourceVersion":
			m.resourceVersion, err = jsonString(dec)
		case "continue":
			m.continu, err = jsonString(dec)
		case "creationTimestamp":
			m.created, err = jsonString(dec)
		case "deletionTimestamp":
			m.deleted, err = jsonString(dec)
		case "remainingItemCount":
			var tok jsontext.Token
			if tok, err = dec.ReadToken(); err == nil {
				switch tok.Kind() {
				case 'n':
				case '0':
					n, perr := strconv.ParseInt(tok.String(), 10, 64)
					if perr != nil {
						return errNotAsIs
					}
					m.remaining = &n
				default:
					return errNotAsIs
				}
			}
		case "generation":
			// As Unstructured.GetGeneration: an integer; anything else
			// (which that accessor reads as 0) goes the unstructured way.
			var tok jsontext.Token
			if tok, err = dec.ReadToken(); err == nil {
				if tok.Kind() != '0' {
					return errNotAsIs
				}
				n, perr := strconv.ParseInt(tok.String(), 10, 64)
				if perr != nil {
					return errNotAsIs
				}
				m.generation = n
			}
		case "annotations":
			m.annotations, err = jsonStringMap(dec)
		case "labels":
			m.labels, err = jsonStringMap(dec)
		case "managedFields":
			m.managedFields, err = jsonManagedFields(dec)
		default:
			err = dec.SkipValue()
		}
		return err
	})
}

// jsonManagedFields reads metadata.managedFields as managedFieldsOf reads
// them: fieldsV1 kept as the JSON the apiserver wrote (an object).
func jsonManagedFields(dec *jsontext.Decoder) ([]metav1.ManagedFieldsEntry, error) {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return nil, err
	}
	out := []metav1.ManagedFieldsEntry{}
	err := jsonArray(dec, func() error {
		var e metav1.ManagedFieldsEntry
		err := jsonObject(dec, func(name []byte) error {
			switch k := string(name); k {
			case "manager", "operation", "apiVersion", "fieldsType", "subresource", "time":
				if dec.PeekKind() == 'n' {
					_, err := dec.ReadToken()
					return err
				}
				s, err := jsonString(dec)
				if err != nil {
					return err
				}
				if !setManagedFieldsString(&e, k, s) {
					return errNotAsIs
				}
				return nil
			case "fieldsV1":
				switch dec.PeekKind() {
				case 'n':
					_, err := dec.ReadToken()
					return err
				case '{':
					v, err := dec.ReadValue()
					if err != nil {
						return err
					}
					e.FieldsV1 = metav1.NewFieldsV1(string(v))
					return nil
				}
				return errNotAsIs
			}
			return dec.SkipValue()
		})
		out = append(out, e)
		return err
	})
	return out, err
}

// jsonObject reads a JSON object, calling member for each name with the
// decoder at its value (which member must consume). name is valid only
// during the call.
func jsonObject(dec *jsontext.Decoder, member func(name []byte) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return errNotAsIs
	}
	var buf []byte
	for dec.PeekKind() != '}' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		name := v[1 : len(v)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if buf, err = jsontext.AppendUnquote(buf[:0], v); err != nil {
				return errNotAsIs
			}
			name = buf
		}
		if err := member(name); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// jsonArray reads a JSON array, calling elem with the decoder at each element.
func jsonArray(dec *jsontext.Decoder, elem func() error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '[' {
		return errNotAsIs
	}
	for dec.PeekKind() != ']' {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// jsonString reads a string; null reads as "" (absent), as the unstructured
// accessors read it.
func jsonString(dec *jsontext.Decoder) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	switch tok.Kind() {
	case '"':
		return tok.String(), nil
	case 'n':
		return "", nil
	}
	return "", errNotAsIs
}

// jsonStringMap reads an object of strings (annotations, labels); null reads
// as nil.
func jsonStringMap(dec *jsontext.Decoder) (map[string]string, error) {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return nil, err
	}
	out := map[string]string{}
	err := jsonObject(dec, func(name []byte) error {
		if dec.PeekKind() != '"' {
			return errNotAsIs
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		out[string(name)] = tok.String()
		return nil
	})
	return out, err
}

// maxAnyDepth bounds the nesting readAny follows (the unstructured decoder's
// limit is 10,000).
const maxAnyDepth = 1000

// jsonAny reads a value as the unstructured decoder would (sigs.k8s.io/json
// with integers preserved): objects as map[string]any, arrays as []any,
// integers as int64, other numbers as float64.
func jsonAny(dec *jsontext.Decoder, depth int) (any, error) {
	if depth > maxAnyDepth {
		return nil, errNotAsIs
	}
	switch dec.PeekKind() {
	case '{':
		m := map[string]any{}
		err := jsonObject(dec, func(name []byte) error {
			v, err := jsonAny(dec, depth+1)
			m[string(name)] = v
			return err
		})
		return m, err
	case '[':
		l := []any{}
		err := jsonArray(dec, func() error {
			v, err := jsonAny(dec, depth+1)
			l = append(l, v)
			return err
		})
		return l, err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '"':
		return tok.String(), nil
	case '0':
		s := tok.String()
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errNotAsIs
		}
		return f, nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, errNotAsIs
}

// fallback decodes with the unstructured decoder (the dynamic client's) and
// reduces the watched kind's objects with the transform, so the informer only
// ever holds records.
func (d *crdDecoder) fallback(data []byte, gvk *schema.GroupVersionKind, into runtime.Object, reason string, cause error) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, got, err := unstructured.UnstructuredJSONScheme.Decode(data, gvk, nil)
	if err != nil {
		return nil, got, err
	}
	d.t.wireFallback(d.res, reason, cause)
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if o.GetKind() == "Status" {
			st := &metav1.Status{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, st); err != nil {
				return nil, got, err
			}
			return st, got, nil
		}
		rec, err := d.reduce(o)
		return rec, got, err
	case *unstructured.UnstructuredList:
		l := &recordList{TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()},
			ListMeta: metav1.ListMeta{ResourceVersion: o.GetResourceVersion(), Continue: o.GetContinue(),
				RemainingItemCount: o.GetRemainingItemCount()},
			Items: make([]runtime.Object, 0, len(o.Items))}
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

// reduce is the transform of an unstructured object (reduceFallback).
func (d *crdDecoder) reduce(u *unstructured.Unstructured) (runtime.Object, error) {
	return reduceFallback(d.tf, u)
}

// externalSecretFromJSON is the record of an ExternalSecret from what the
// reader kept of it: the same record the unstructured path makes
// (ExternalSecret), with its accessors' rules for metadata.
func (t *Transformer) externalSecretFromJSON(doc *crdDoc) (runtime.Object, error) {
	m := &doc.meta
	meta := metav1.ObjectMeta{Name: m.name, Namespace: m.namespace, UID: types.UID(m.uid),
		ResourceVersion: m.resourceVersion, Generation: m.generation, Annotations: m.annotations, Labels: m.labels}
	// As Unstructured.GetCreationTimestamp and GetDeletionTimestamp: a time
	// that does not parse reads as none.
	_ = meta.CreationTimestamp.UnmarshalQueryParameter(m.created)
	var deleted metav1.Time
	_ = deleted.UnmarshalQueryParameter(m.deleted)
	var es eso.ExternalSecret
	decodeErr := eso.Decode(doc.obj, &es)
	rec := t.externalSecretRecord(&meta, doc.apiVersion, m.managedFields, !deleted.IsZero(), &es, decodeErr)
	if m.name == "" && m.annotations[metav1.InitialEventsAnnotationKey] == "true" {
		keepInitialEventsEnd(&rec.ObjectMeta)
	}
	return rec, nil
}
