package transform

import (
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/driftwatch/driftwatch/internal/model"
)

// CheckWireDecode decodes a protobuf response of resource ("secrets" or
// "pods"; an object or a list) both ways — the scheme's typed decoder followed
// by the transform, and the wire decoder — and reports the first object whose
// records differ, or a response the wire decoder did not take. It returns the
// number of objects compared. It is the equality proof of the two paths on the
// responses of a real apiserver (test/e2e); data is not modified.
func CheckWireDecode(resource string, data []byte) (int, error) {
	kind := wireSecrets
	if resource == "pods" {
		kind = wirePods
	}
	tr := &Transformer{FP: model.NewFingerprinterWithKey([]byte("wire-check"))}
	obj, _, err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(slices.Clone(data), nil, nil)
	if err != nil {
		return 0, fmt.Errorf("typed decode: %w", err)
	}
	var typed []runtime.Object
	reduce := func(o any) error {
		var out any
		var err error
		switch x := o.(type) {
		case *corev1.Secret:
			out, err = tr.Secret(x)
		case *corev1.Pod:
			out, err = tr.Pod(x)
		default:
			return fmt.Errorf("unexpected %T", o)
		}
		if err == nil {
			typed = append(typed, out.(runtime.Object))
		}
		return err
	}
	switch o := obj.(type) {
	case *corev1.SecretList:
		for i := range o.Items {
			if err := reduce(&o.Items[i]); err != nil {
				return 0, err
			}
		}
	case *corev1.PodList:
		for i := range o.Items {
			if err := reduce(&o.Items[i]); err != nil {
				return 0, err
			}
		}
	default:
		if err := reduce(o); err != nil {
			return 0, err
		}
	}
	d := &wireDecoder{t: tr, kind: kind, typed: scheme.Codecs.UniversalDeserializer(), ct: runtime.ContentTypeProtobuf}
	got, _, err := d.Decode(slices.Clone(data), nil, nil)
	if err != nil {
		return 0, fmt.Errorf("wire decode: %w", err)
	}
	if fb := tr.WireFallbacks(); len(fb) > 0 {
		return 0, fmt.Errorf("the wire decoder fell back: %v", fb)
	}
	wire := []runtime.Object{got}
	if l, ok := got.(*recordList); ok {
		wire = l.Items
	}
	if len(wire) != len(typed) {
		return 0, fmt.Errorf("%d wire records, %d typed", len(wire), len(typed))
	}
	for i := range wire {
		a, b := normaliseRecord(typed[i]), normaliseRecord(wire[i])
		if !reflect.DeepEqual(a, b) {
			return i, fmt.Errorf("object %d differs:\ntyped: %+v\nwire:  %+v", i, a, b)
		}
	}
	return len(wire), nil
}

// normaliseRecord makes the records of both paths comparable: the typed
// transform lists a Pod's reload annotations in map order.
func normaliseRecord(o runtime.Object) runtime.Object {
	switch r := o.(type) {
	case *model.Pod:
		cp := *r
		cp.ReloadAnnotations = slices.Clone(r.ReloadAnnotations)
		slices.Sort(cp.ReloadAnnotations)
		return &cp
	case *recordList:
		cp := *r
		cp.Items = nil
		for _, it := range r.Items {
			cp.Items = append(cp.Items, normaliseRecord(it))
		}
		return &cp
	}
	return o
}

// CheckCRDDecode decodes a JSON list response of ExternalSecrets of
// apiVersion gv both ways — the dynamic client's unstructured decoder
// followed by the transform, and the JSON reader (crdwire.go) — and reports
// the first object whose records differ, or a response the reader did not
// take. It returns the number of objects compared: the equality proof of the
// two paths on a real apiserver's responses (test/e2e).
func CheckCRDDecode(gv schema.GroupVersion, data []byte) (int, error) {
	tr := &Transformer{FP: model.NewFingerprinterWithKey([]byte("crd-check"))}
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(slices.Clone(data), nil, nil)
	if err != nil {
		return 0, fmt.Errorf("unstructured decode: %w", err)
	}
	l, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return 0, fmt.Errorf("not a list: %T", obj)
	}
	var want []runtime.Object
	for i := range l.Items {
		out, err := tr.ExternalSecret(&l.Items[i])
		if err != nil {
			return 0, err
		}
		want = append(want, out.(runtime.Object))
	}
	ser := tr.CRDSerializer(model.ResExternalSecrets, gv)
	got, _, err := ser.SupportedMediaTypes()[0].Serializer.Decode(slices.Clone(data), nil, nil)
	if err != nil {
		return 0, fmt.Errorf("JSON reader: %w", err)
	}
	if fb := tr.WireFallbacks(); len(fb) > 0 {
		return 0, fmt.Errorf("the JSON reader fell back: %v", fb)
	}
	gl, ok := got.(*recordList)
	if !ok || len(gl.Items) != len(want) || gl.ResourceVersion != l.GetResourceVersion() {
		return 0, fmt.Errorf("JSON reader: %T, %d records for %d objects", got, len(gl.Items), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], gl.Items[i]) {
			return i, fmt.Errorf("object %d differs:\nunstructured: %+v\nJSON reader:  %+v", i, want[i], gl.Items[i])
		}
	}
	return len(want), nil
}
