package kube

// Sharding (Options.NamespaceFilter): what a shard keeps of objects of other
// shards' namespaces, before the informer cache and in the model.

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

// transformFor returns the informer transform of res. With a NamespaceFilter
// (sharding), objects of other shards' namespaces are reduced to a name-only stub
// before anything else: the informer cache must keep an entry per object (the
// server cannot filter by a hash of the namespace), but the entry costs a few
// dozen bytes instead of a full record, and the object is never fingerprinted or
// decoded. The handlers ignore stubs. Cross-namespace resources (Helm releases,
// Argo CD Applications) are the exception: every shard transforms them and keeps
// what concerns its own namespaces (resource.reduce).
func (m *Manager) transformFor(res model.Resource) cache.TransformFunc {
	tf := m.recordTransform(res)
	keep := m.opts.NamespaceFilter
	if keep == nil {
		return tf
	}
	if r := resourceOf(res); r.crossNamespace {
		return func(obj any) (any, error) {
			rec, err := tf(obj)
			if err != nil {
				return rec, err
			}
			return r.reduce(rec, keep), nil
		}
	}
	return func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			if ns := o.GetNamespace(); ns != "" && !keep(ns) {
				return transform.Stub(o), nil
			}
		}
		return tf(obj)
	}
}

func (m *Manager) recordTransform(res model.Resource) cache.TransformFunc {
	return resourceOf(res).transform(m.tr)
}

type nsGetter interface {
	GetNamespace() string
	GetName() string
}

func (m *Manager) keep(o nsGetter) bool {
	if m.opts.NamespaceFilter == nil || o.GetNamespace() == "" {
		return true
	}
	return m.opts.NamespaceFilter(o.GetNamespace())
}

// reduceHelmRelease keeps the expectations of a release that are about objects of
// this shard's namespaces (an expectation without a namespace is about the
// release's own). The record itself stays, even with no expectation left: the
// deployed revision is chosen among all of a release's records, and dropping
// one would let an older revision's expectations count.
func reduceHelmRelease(rec any, own func(string) bool) any {
	h, ok := rec.(*model.HelmRelease)
	if !ok {
		return rec
	}
	kept := h.Expectations[:0:0]
	for _, x := range h.Expectations {
		ns := x.Namespace
		if ns == "" {
			ns = h.Namespace
		}
		if own(ns) {
			kept = append(kept, x)
		}
	}
	if len(kept) == len(h.Expectations) {
		return h
	}
	cp := *h
	cp.Expectations = model.Clip(kept)
	return &cp
}

// reduceApplication keeps of an Application of another shard's namespace
// what this shard's own judgements of it need: its identity, whether it is
// being deleted (it then expects nothing), the revision it compares and what
// its last sync operation applied (whether its desired state was delivered,
// detect.GitOpsDesired), and the status.resources entries in this shard's
// namespaces (which decide whether this shard asks the Argo CD API for its
// desired state) with their sync status for Secrets and ExternalSecrets. Its
// own findings (sync state, ignoreDifferences) are reported by the shard
// owning its namespace, from the full record.
func reduceApplication(rec any, own func(string) bool) any {
	a, ok := rec.(*model.ArgoApp)
	if !ok || own(a.Namespace) {
		return rec
	}
	r := &model.ArgoApp{ObjectMeta: model.ObjectMeta{Name: a.Name, Namespace: a.Namespace, UID: a.UID,
		ResourceVersion: a.ResourceVersion}, DecodeErr: a.DecodeErr, Deleting: a.Deleting,
		SyncRevision: a.SyncRevision, SyncRevisions: a.SyncRevisions,
		OperationPhase: a.OperationPhase, OperationRevision: a.OperationRevision, OperationRevisions: a.OperationRevisions}
	for _, x := range a.Resources {
		if x.Namespace != "" && own(x.Namespace) {
			if !argocd.DesiredKind(x.Group, x.Kind) {
				x.Status = "" // churns with every sync; only a Secret's or ExternalSecret's is read here
			}
			r.Resources = append(r.Resources, x)
		}
	}
	for _, o := range a.OperationSynced {
		if own(o.Namespace) {
			r.OperationSynced = append(r.OperationSynced, o)
		}
	}
	return r
}

// sameReducedApplication: two reduced records of an Application of another
// shard's namespace that say the same (reduceApplication's fields).
func sameReducedApplication(old, cur any) bool {
	a, ok1 := old.(*model.ArgoApp)
	b, ok2 := cur.(*model.ArgoApp)
	return ok1 && ok2 && a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID &&
		a.DecodeErr == b.DecodeErr && a.Deleting == b.Deleting &&
		a.SyncRevision == b.SyncRevision && slices.Equal(a.SyncRevisions, b.SyncRevisions) &&
		a.OperationPhase == b.OperationPhase && a.OperationRevision == b.OperationRevision &&
		slices.Equal(a.OperationRevisions, b.OperationRevisions) && slices.Equal(a.OperationSynced, b.OperationSynced) &&
		slices.Equal(a.Resources, b.Resources)
}
