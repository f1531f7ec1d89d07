package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// DecodeYAML splits multi-document YAML into objects, skipping empty
// documents.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) { return kube.DecodeYAML(data) }

// InstallCRDs server-side applies every CustomResourceDefinition in the
// multi-document YAML (as field manager FieldManager, forcing conflicts) and
// waits until each is Established and its served versions are listed by
// discovery. Client-side apply would fail on ESO's CRDs: their
// last-applied annotation would exceed the size limit.
func (c *Cluster) InstallCRDs(ctx context.Context, data []byte) error {
	objs, err := DecodeYAML(data)
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("%s %q is not a CustomResourceDefinition", o.GetKind(), o.GetName())
		}
		applied, err := c.Dynamic.Resource(crdGVR).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("apply CRD %s: %w", o.GetName(), err)
		}
		crds = append(crds, applied)
	}
	disc := c.Client.Discovery()
	for _, crd := range crds {
		name := crd.GetName()
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		var served []string
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if s, _ := vm["served"].(bool); s {
				served = append(served, fmt.Sprint(vm["name"]))
			}
		}
		err := proc.WaitFor(ctx, 60*time.Second, "CRD "+name+" to be Established and served", c.apiserver, func(ctx context.Context) (bool, error) {
			got, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			established := false
			for _, cond := range conds {
				cm, _ := cond.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					established = true
				}
			}
			if !established {
				return false, nil
			}
			for _, v := range served {
				list, err := disc.ServerResourcesForGroupVersion(group + "/" + v)
				if err != nil {
					return false, err
				}
				found := false
				for _, r := range list.APIResources {
					if r.Name == plural {
						found = true
					}
				}
				if !found {
					return false, fmt.Errorf("%s/%s: %s not in discovery yet", group, v, plural)
				}
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	c.mapper.Reset()
	return nil
}

// ApplyYAML server-side applies every object of the multi-document YAML with
// the admin client as fieldManager (FieldManager if empty), forcing
// conflicts. Namespaced objects without a namespace go to namespace. It
// returns the applied objects as the apiserver returned them.
func (c *Cluster) ApplyYAML(ctx context.Context, namespace string, data []byte, fieldManager string) ([]*unstructured.Unstructured, error) {
	if fieldManager == "" {
		fieldManager = FieldManager
	}
	objs, err := DecodeYAML(data)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := c.mapper.RESTMapping(gvk)
		if err != nil {
			return out, fmt.Errorf("%s %q: %w", gvk, o.GetName(), err)
		}
		ri := c.Dynamic.Resource(m.Resource)
		var applied *unstructured.Unstructured
		opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = namespace
				o.SetNamespace(ns)
			}
			applied, err = ri.Namespace(ns).Apply(ctx, o.GetName(), o, opts)
		} else {
			applied, err = ri.Apply(ctx, o.GetName(), o, opts)
		}
		if err != nil {
			return out, fmt.Errorf("apply %s %q: %w", gvk.Kind, o.GetName(), err)
		}
		out = append(out, applied)
	}
	return out, nil
}

// Apply is ApplyYAML for tests: it fails the test on error.
func (c *Cluster) Apply(t testing.TB, namespace, manifests string) []*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.ApplyYAML(ctx, namespace, []byte(manifests), "")
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return out
}

// RESTMapping maps a kind to its resource through discovery (refreshed when
// the kind is unknown, e.g. right after a CRD was installed).
func (c *Cluster) RESTMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	return c.mapper.RESTMapping(gvk)
}

// resetMapper is a discovery-backed RESTMapper that refreshes itself once on
// an unknown kind.
type resetMapper struct {
	m *restmapper.DeferredDiscoveryRESTMapper
}

func newResetMapper(d discovery.DiscoveryInterface) *resetMapper {
	return &resetMapper{m: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d))}
}

func (r *resetMapper) Reset() { r.m.Reset() }

func (r *resetMapper) RESTMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := r.m.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		r.m.Reset()
		m, err = r.m.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}
