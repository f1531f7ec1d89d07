package kube

// The informers of the wire path (internal/transform wire.go): Secrets and
// Pods listed and watched through a REST client whose serializer decodes the
// protobuf responses straight into records. The informer, its reflector,
// relists and the watch-list stay client-go's: only the ListerWatcher's
// decoder differs.

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// newWireClient is a REST client for the core group whose responses decode
// through ser (transform.Transformer.WireSerializer: into records; protobuf
// requested, JSON accepted).
func newWireClient(rc *rest.Config, ser runtime.NegotiatedSerializer) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.APIPath = "/api"
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.NegotiatedSerializer = ser
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// newWireInformer is the informer of kind (secrets or pods) in namespace ns
// through the wire client, with the list options tweak sets.
func newWireInformer(c rest.Interface, resource, ns string, exemplar runtime.Object, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&o)
			}
			return c.Get().Namespace(ns).Resource(resource).VersionedParams(&o, metav1.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			if tweak != nil {
				tweak(&o)
			}
			return c.Get().Namespace(ns).Resource(resource).VersionedParams(&o, metav1.ParameterCodec).Watch(ctx)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(lw, exemplar, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
}
