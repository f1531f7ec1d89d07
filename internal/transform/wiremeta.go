package transform

// The wire decoder's metadata: what the Secret and Pod records keep of
// metav1.ObjectMeta, read from its protobuf encoding (field numbers from
// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// wireMeta is what the wire decoder reads of an object's metadata. Byte slices
// alias the response buffer and are used before the decode returns.
type wireMeta struct {
	meta     model.ObjectMeta
	deleting bool
	owners   []model.OwnerRef
	mfs      []parse.MFView
	// Annotations read by the transforms, the last occurrence winning as in a
	// decoded map. lastApplied is a Secret's (it holds values: only its bytes
	// are read, never a string of them).
	lastApplied, expectedKeys    []byte
	hasLastApplied, hasExpected  bool
	podTemplateHash, rolloutHash []byte
	reload                       []string
	// initialEventsEnd: the annotation of a watch-list's closing bookmark.
	initialEventsEnd bool
}

func (w *wireMeta) reset() {
	mfs, reload := w.mfs[:0], w.reload[:0]
	clear(w.mfs[:cap(w.mfs)]) // no view outlives its decode
	*w = wireMeta{mfs: mfs, reload: reload}
}

// Field numbers of ObjectMeta.
const (
	omName              = 1
	omNamespace         = 3
	omUID               = 5
	omResourceVersion   = 6
	omCreationTimestamp = 8
	omDeletionTimestamp = 9
	omLabels            = 11
	omAnnotations       = 12
	omOwnerReferences   = 13
	omManagedFields     = 17
)

// readMeta reads an ObjectMeta message into w. pod: read what a Pod record
// keeps besides (reload annotations, the pod-template-hash labels, owners'
// controller flags).
func readMeta(b []byte, w *wireMeta, pod bool) error {
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return err
		}
		switch num {
		case omName, omNamespace, omUID, omResourceVersion:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			switch num {
			case omName:
				w.meta.Name = string(v)
			case omNamespace:
				w.meta.Namespace = intern(v)
			case omUID:
				w.meta.UID = types.UID(v)
			case omResourceVersion:
				w.meta.ResourceVersion = string(v)
			}
		case omCreationTimestamp:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			t, err := pbTime(v)
			if err != nil {
				return err
			}
			w.meta.CreationTimestamp = metav1.Time{Time: t}
		case omDeletionTimestamp:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			if _, err := pbTime(v); err != nil {
				return err
			}
			w.deleting = true
		case omLabels:
			k, v, _, err := p.entry(wt)
			if err != nil {
				return err
			}
			w.label(k, v, pod)
		case omAnnotations:
			k, v, _, err := p.entry(wt)
			if err != nil {
				return err
			}
			w.annotation(k, v, pod)
		case omOwnerReferences:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			if err := w.owner(v); err != nil {
				return err
			}
		case omManagedFields:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			if err := w.managed(v); err != nil {
				return err
			}
		default:
			if err := p.skip(start); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *wireMeta) label(k, v []byte, pod bool) {
	ks := view(k)
	if keptLabel(ks) {
		if w.meta.Labels == nil {
			w.meta.Labels = map[string]string{}
		}
		w.meta.Labels[model.Intern(ks)] = intern(v)
	}
	if pod {
		switch ks {
		case "pod-template-hash":
			w.podTemplateHash = v
		case "rollouts-pod-template-hash":
			w.rolloutHash = v
		}
	}
}

func (w *wireMeta) annotation(k, v []byte, pod bool) {
	ks := view(k)
	switch {
	case ks == model.AnnLastApplied:
		w.lastApplied, w.hasLastApplied = v, true
		return
	case ks == metav1.InitialEventsAnnotationKey:
		w.initialEventsEnd = string(v) == "true"
	}
	if ks == model.AnnExpectedKeys {
		w.expectedKeys, w.hasExpected = v, true
	}
	if keptAnnotation(ks) {
		if len(v) > maxKeptValue {
			v = v[:maxKeptValue]
		}
		if w.meta.Annotations == nil {
			w.meta.Annotations = map[string]string{}
		}
		w.meta.Annotations[model.Intern(ks)] = string(v)
	}
	if pod && reloadAnnotation(ks) {
		k := model.Intern(ks)
		for _, r := range w.reload {
			if r == k {
				return
			}
		}
		w.reload = append(w.reload, k)
	}
}

// Field numbers of OwnerReference.
const (
	orKind       = 1
	orName       = 3
	orUID        = 4
	orAPIVersion = 5
	orController = 6
)

func (w *wireMeta) owner(b []byte) error {
	var o model.OwnerRef
	var ctl bool
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return err
		}
		switch num {
		case orKind, orName, orUID, orAPIVersion:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			switch num {
			case orKind:
				o.Kind = intern(v)
			case orName:
				o.Name = string(v)
			case orUID:
				o.UID = string(v)
			case orAPIVersion:
				o.APIVersion = intern(v)
			}
		case orController:
			if ctl, err = p.boolean(wt); err != nil {
				return err
			}
		default:
			if err := p.skip(start); err != nil {
				return err
			}
		}
	}
	o.Controller = ctl
	w.owners = append(w.owners, o)
	return nil
}

// Field numbers of ManagedFieldsEntry.
const (
	mfManager     = 1
	mfOperation   = 2
	mfTime        = 4
	mfFieldsType  = 6
	mfFieldsV1    = 7
	mfSubresource = 8
)

// managed reads one managedFields entry as a view (its strings alias b: the
// summaries intern what they keep). Entries past MaxManagedFieldsEntries are
// skipped: the summaries read no more.
func (w *wireMeta) managed(b []byte) error {
	if len(w.mfs) >= parse.MaxManagedFieldsEntries {
		return nil
	}
	var e parse.MFView
	var seen uint64
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return err
		}
		switch num {
		case mfManager, mfOperation, mfFieldsType, mfSubresource:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			switch num {
			case mfManager:
				e.Manager = view(v)
			case mfOperation:
				e.Operation = view(v)
			case mfFieldsType:
				e.FieldsType = view(v)
			case mfSubresource:
				e.Subresource = view(v)
			}
		case mfTime:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			if e.Time, err = pbTime(v); err != nil {
				return err
			}
		case mfFieldsV1:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			if err := once(&seen, 0); err != nil {
				return err
			}
			raw, err := fieldsV1Raw(v)
			if err != nil {
				return err
			}
			e.Fields, e.HasFields = raw, true
		default:
			if err := p.skip(start); err != nil {
				return err
			}
		}
	}
	w.mfs = append(w.mfs, e)
	return nil
}

// fieldsV1Raw reads a FieldsV1 message: its Raw bytes (field 1, the last one).
func fieldsV1Raw(b []byte) ([]byte, error) {
	var raw []byte
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		if num == 1 {
			if raw, err = p.field(wt); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.skip(start); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// workload is workloadOf of the wire metadata.
func (w *wireMeta) workload() model.Workload {
	for _, o := range w.owners {
		if !o.Controller {
			continue
		}
		switch o.Kind {
		case "ReplicaSet":
			if h := view(w.podTemplateHash); h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return model.Workload{Kind: "Deployment", Name: strings.TrimSuffix(o.Name, "-"+h)}
			}
			if h := view(w.rolloutHash); h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return model.Workload{Kind: "Rollout", Name: strings.TrimSuffix(o.Name, "-"+h)}
			}
		case "Job":
			if cj, ok := cronJobOf(o.Name); ok {
				return model.Workload{Kind: "CronJob", Name: cj}
			}
		}
		return model.Workload{Kind: o.Kind, Name: o.Name}
	}
	return model.Workload{Kind: "Pod", Name: w.meta.Name}
}
