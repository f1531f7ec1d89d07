package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

// resource is everything the informer layer knows about one watched resource,
// in one place (kube-state-metrics' availableStores): how to watch it, its
// value-free transform, how its records enter and leave the model, and how to
// probe access to it.
type resource struct {
	res model.Resource
	// Core resources: informers of the typed clientset, started at once, one
	// per watched namespace (clusterScoped: one in all).
	core          func(m *Manager, ns string) cache.SharedIndexInformer
	clusterScoped bool
	// onlyClusterWide: watched only when the agent watches every namespace
	// (namespaces: a namespaced install cannot list them).
	onlyClusterWide bool
	// Optional APIs (CRDs): discovered, the first served version wins.
	group    string
	versions []string
	resource string
	// exemplar is the record type of an optional API read through the JSON
	// reader (transform.Transformer.CRDSerializer); nil: the dynamic informer.
	exemplar func() kruntime.Object
	// transform makes the record of an API object (internal/transform/<kind>.go).
	transform func(t *transform.Transformer) cache.TransformFunc
	// upsert and remove keep the model current (the handlers drop records of
	// namespaces other shards own before calling them).
	upsert func(s *model.Store, obj any, now time.Time)
	remove func(s *model.Store, obj any, now time.Time)
	// probe lists one object (the degraded-access check).
	probe func(ctx context.Context, m *Manager, ns string) error
	// crossNamespace resources declare expectations about objects of other
	// namespaces (a Helm release renders into any namespace, an Argo CD
	// Application manages objects in its destinations). With sharding, every
	// shard keeps their records, whatever namespace they live in, reduced by
	// reduce to what concerns its own namespaces: an expectation is evaluated
	// by the shard that owns the namespace of the object it is about.
	crossNamespace bool
	reduce         func(rec any, own func(ns string) bool) any
	// unchanged reports whether a reduced record of another shard's namespace
	// says nothing new (an Application's status churns; what this shard keeps
	// of it rarely changes), so the model is not written.
	unchanged func(old, cur any) bool
}

func (r *resource) optional() bool { return r.group != "" }

// resources is the table of watched resources, in model.AllResources order.
var resources = []*resource{
	{res: model.ResSecrets,
		core: func(m *Manager, ns string) cache.SharedIndexInformer {
			if m.wireSecrets != nil {
				return newWireInformer(m.wireSecrets, "secrets", ns, &model.Secret{}, m.tweak("type!="+transform.HelmReleaseType, ""))
			}
			if m.typedSecrets != nil {
				return newWireInformer(m.typedSecrets, "secrets", ns, &corev1.Secret{}, m.tweak("type!="+transform.HelmReleaseType, ""))
			}
			return coreinformers.NewFilteredSecretInformer(m.cs, ns, 0, nil, m.tweak("type!="+transform.HelmReleaseType, ""))
		},
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.Secret },
		upsert: func(s *model.Store, obj any, now time.Time) {
			if o, ok := obj.(*model.Secret); ok && o.Type != transform.HelmReleaseType {
				s.UpsertSecret(o, now)
			}
		},
		remove: func(s *model.Store, obj any, now time.Time) {
			if o, ok := obj.(*model.Secret); ok {
				s.DeleteSecret(o.Namespace, o.Name, now)
			}
		},
		probe: probeSecrets},
	{res: model.ResPods,
		core: func(m *Manager, ns string) cache.SharedIndexInformer {
			if m.wirePods != nil {
				return newWireInformer(m.wirePods, "pods", ns, &model.Pod{}, m.tweak("", ""))
			}
			return coreinformers.NewFilteredPodInformer(m.cs, ns, 0, nil, m.tweak("", ""))
		},
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.Pod },
		upsert: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.Pod); ok {
				s.UpsertPod(o)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.Pod); ok {
				s.DeletePod(o.Namespace, o.Name)
			}
		},
		probe: func(ctx context.Context, m *Manager, ns string) error {
			_, err := m.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
	{res: model.ResServiceAccounts,
		core: func(m *Manager, ns string) cache.SharedIndexInformer {
			return coreinformers.NewFilteredServiceAccountInformer(m.cs, ns, 0, nil, m.tweak("", ""))
		},
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.ServiceAccount },
		upsert: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.ServiceAccount); ok {
				s.UpsertServiceAccount(o)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.ServiceAccount); ok {
				s.DeleteServiceAccount(o.Namespace, o.Name)
			}
		},
		probe: func(ctx context.Context, m *Manager, ns string) error {
			_, err := m.cs.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
	{res: model.ResExternalSecrets, group: eso.Group, versions: eso.Versions, resource: "externalsecrets",
		exemplar:  func() kruntime.Object { return &model.ExternalSecret{} },
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.ExternalSecret },
		upsert: func(s *model.Store, obj any, now time.Time) {
			if o, ok := obj.(*model.ExternalSecret); ok {
				s.UpsertExternalSecret(o, now)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.ExternalSecret); ok {
				s.DeleteExternalSecret(o.Namespace, o.Name)
			}
		}},
	{res: model.ResSecretStores, group: eso.Group, versions: eso.Versions, resource: "secretstores",
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.SecretStore("SecretStore") },
		upsert:    upsertStore, remove: removeStore},
	{res: model.ResClusterSecretStores, group: eso.Group, versions: eso.Versions, resource: "clustersecretstores", clusterScoped: true,
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.SecretStore("ClusterSecretStore") },
		upsert:    upsertStore, remove: removeStore},
	{res: model.ResHelmReleases,
		core: func(m *Manager, ns string) cache.SharedIndexInformer {
			if m.typedSecrets != nil {
				return newWireInformer(m.typedSecrets, "secrets", ns, &corev1.Secret{}, m.tweak("type="+transform.HelmReleaseType, "owner=helm,status=deployed"))
			}
			return coreinformers.NewFilteredSecretInformer(m.cs, ns, 0, nil, m.tweak("type="+transform.HelmReleaseType, "owner=helm,status=deployed"))
		},
		transform:      func(t *transform.Transformer) cache.TransformFunc { return t.HelmRelease },
		crossNamespace: true, reduce: reduceHelmRelease,
		upsert: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.HelmRelease); ok {
				s.UpsertHelmRelease(o)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.HelmRelease); ok {
				s.DeleteHelmRelease(o.Namespace, o.Name)
			}
		},
		probe: probeSecrets},
	{res: model.ResApplications, group: argocd.Group, versions: []string{argocd.Version}, resource: "applications",
		transform:      func(t *transform.Transformer) cache.TransformFunc { return t.Application },
		crossNamespace: true, reduce: reduceApplication, unchanged: sameReducedApplication,
		upsert: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.ArgoApp); ok {
				s.UpsertApp(o)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.ArgoApp); ok {
				s.DeleteApp(o.Namespace, o.Name)
			}
		}},
	{res: model.ResNamespaces, clusterScoped: true, onlyClusterWide: true,
		core: func(m *Manager, _ string) cache.SharedIndexInformer {
			return coreinformers.NewNamespaceInformer(m.cs, 0, nil)
		},
		transform: func(t *transform.Transformer) cache.TransformFunc { return t.Namespace },
		upsert: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.Namespace); ok {
				s.UpsertNamespace(o)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.Namespace); ok {
				s.DeleteNamespace(o.Name)
			}
		},
		probe: func(ctx context.Context, m *Manager, _ string) error {
			_, err := m.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
}

func init() { resources = append(resources, fluxResources()...) }

func upsertStore(s *model.Store, obj any, _ time.Time) {
	if o, ok := obj.(*model.SecretStore); ok {
		s.UpsertStore(o)
	}
}

func removeStore(s *model.Store, obj any, _ time.Time) {
	if o, ok := obj.(*model.SecretStore); ok {
		s.DeleteStore(o.StoreKind, o.Namespace, o.Name)
	}
}

// resourceOf returns a resource's table entry.
func resourceOf(res model.Resource) *resource {
	for _, r := range resources {
		if r.res == res {
			return r
		}
	}
	panic("kube: unknown resource " + string(res))
}
