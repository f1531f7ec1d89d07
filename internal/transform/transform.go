// Package transform turns API objects into value-free model records before
// anything is cached: the informer transforms of every watched kind (Secrets,
// Pods, ServiceAccounts, Namespaces, Helm release Secrets, ExternalSecrets,
// SecretStores, Argo CD Applications, Flux Kustomizations and sources) and the
// wire decoder that reads Secrets and Pods from their protobuf encoding
// straight into records (wire*.go). No secret value outlives a transform: a
// Secret's data becomes key names, byte lengths and keyed fingerprints, and the
// values are wiped once summarised.
//
// The informers (internal/kube), `agent lint` (internal/lint) and the tests that
// compare hand-built records with real ones use these transforms. An
// ExternalSecret is decoded by internal/eso (Decode, DecodeJSON, Writes), the one
// decoder of live objects here, of Helm and Flux manifests (internal/parse) and
// of Argo CD target states (internal/argocd). The package imports no informer
// machinery (depguard rule "transform" in .golangci.yml).
package transform

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// keptAnnotation says which annotations survive the transform. Values of these are
// configuration, never secret data; ESO's data-hash annotation (a hash of the data)
// is deliberately not kept.
func keptAnnotation(k string) bool {
	switch k {
	case model.AnnExpectedKeys, model.AnnCompareWith, model.AnnAWSRoleARN, model.AnnAzureClientID, model.AnnGKEServiceAcct, model.AnnIgnore,
		flux.AnnotationSSA, flux.AnnotationReconcile:
		return true
	}
	return false
}

func keptLabel(k string) bool {
	switch k {
	case model.LabelESOManaged, "azure.workload.identity/use",
		// kustomize-controller matches its skip selectors on labels too
		// (flux.SkipReason).
		flux.AnnotationSSA, flux.AnnotationReconcile:
		return true
	}
	return false
}

// maxKeptValue bounds the annotation values kept in the model.
const maxKeptValue = 4096

// Transformer turns API objects into model records.
type Transformer struct {
	FP *model.Fingerprinter
	// Logger receives one line per object version that fails to decode.
	Logger *slog.Logger

	logged sync.Map // uid/resourceVersion → struct{}
	nlog   atomic.Int64
	errs   sync.Map // decodeKey → *atomic.Uint64
	wire   wireStats
}

type decodeKey struct{ resource, part, reason string }

// DecodeErrors counts object versions with a part that could not be decoded, per
// {resource, part, reason}; reason is too_large (over a documented limit) or
// malformed. An object version is counted once, however often a relist sees it.
func (t *Transformer) DecodeErrors() map[[3]string]uint64 {
	out := map[[3]string]uint64{}
	t.errs.Range(func(k, v any) bool {
		dk := k.(decodeKey)
		out[[3]string{dk.resource, dk.part, dk.reason}] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

func decodeReason(err string) string {
	if strings.Contains(err, "too large") || strings.Contains(err, "exceeds") || strings.Contains(err, "limit") {
		return "too_large"
	}
	return "malformed"
}

// maxLogged bounds the memory of "already logged" object versions.
const maxLogged = 10000

// decodeProblem logs a decode or parse failure once per object version. The error
// texts come from driftwatch's own parsers and never carry input bytes.
func (t *Transformer) decodeProblem(resource string, m *metav1.ObjectMeta, what, err string) {
	if err == "" {
		return
	}
	t.problem(resource, m.Namespace, m.Name, string(m.UID), m.ResourceVersion, what, err)
}

// decodeProblemOf is decodeProblem of a record's metadata.
func (t *Transformer) decodeProblemOf(resource string, m *model.ObjectMeta, what, err string) {
	if err == "" {
		return
	}
	t.problem(resource, m.Namespace, m.Name, string(m.UID), m.ResourceVersion, what, err)
}

func (t *Transformer) problem(resource, namespace, name, uid, rv, what, err string) {
	k := uid + "/" + rv + "/" + what
	if _, dup := t.logged.LoadOrStore(k, struct{}{}); dup {
		return
	}
	if t.nlog.Add(1) > maxLogged {
		t.logged.Clear()
		t.nlog.Store(0)
	}
	dk := decodeKey{resource, what, decodeReason(err)}
	c, ok := t.errs.Load(dk)
	if !ok {
		c, _ = t.errs.LoadOrStore(dk, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
	if t.Logger == nil {
		return
	}
	t.Logger.Warn("cannot decode part of an object; the rest is kept", "resource", resource,
		"namespace", namespace, "name", name, "part", what, "err", err)
}

// objectMeta is the part of an object's metadata a record keeps. The namespace and
// the kept labels and annotation names are interned: they repeat across objects.
func objectMeta(m *metav1.ObjectMeta) model.ObjectMeta {
	id := model.ObjectMeta{
		Name:              m.Name,
		Namespace:         model.Intern(m.Namespace),
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp,
	}
	for k, v := range m.Annotations {
		if keptAnnotation(k) {
			if len(v) > maxKeptValue {
				v = strings.Clone(v[:maxKeptValue])
			}
			if id.Annotations == nil {
				id.Annotations = map[string]string{}
			}
			id.Annotations[model.Intern(k)] = v
		}
	}
	for k, v := range m.Labels {
		if keptLabel(k) {
			if id.Labels == nil {
				id.Labels = map[string]string{}
			}
			id.Labels[model.Intern(k)] = model.Intern(v)
		}
	}
	return id
}

// Stub is what an informer cache keeps of an object the model does not hold
// (another shard's, or a Secret the Helm release informer's field selector
// would have kept out): its name, namespace and resourceVersion. The model's
// event handlers ignore stubs.
func Stub(o metav1.Object) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: o.GetName(), Namespace: o.GetNamespace(), ResourceVersion: o.GetResourceVersion()}}
}

func owners(refs []metav1.OwnerReference) []model.OwnerRef {
	if len(refs) == 0 {
		return nil
	}
	out := make([]model.OwnerRef, 0, len(refs))
	for _, r := range refs {
		out = append(out, model.OwnerRef{APIVersion: model.Intern(r.APIVersion), Kind: model.Intern(r.Kind), Name: r.Name,
			UID: string(r.UID), Controller: r.Controller != nil && *r.Controller})
	}
	return out
}

// fromUnstructured decodes u into `into`, a struct that must hold only the
// top-level fields the transform reads (spec, status): the converter walks the
// struct's fields, so metadata — whose managedFields cost a JSON round trip per
// entry in the reflective converter — is never converted.
func fromUnstructured(u *unstructured.Unstructured, into any) string {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return "decode: " + truncate(err.Error(), 200)
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func condition(conds []eso.StatusCondition, typ string) model.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return model.Condition{Status: model.Intern(c.Status), Reason: model.Intern(c.Reason), LastTransitionTime: c.LastTransitionTime.Time}
		}
	}
	return model.Condition{}
}
