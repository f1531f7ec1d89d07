package kube

// The informers of the wire path (internal/transform wire.go): Secrets and
// Pods listed and watched through a REST client whose serializer decodes the
// protobuf responses straight into records. The informer, its reflector,
// relists and the watch-list stay client-go's: only the ListerWatcher's
// decoder differs.

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
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

// newCRDClient is a REST client for the custom resources of gv whose JSON
// responses decode through ser (transform.Transformer.CRDSerializer: into
// records).
func newCRDClient(rc *rest.Config, gv schema.GroupVersion, ser runtime.NegotiatedSerializer) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.APIPath = "/apis"
	c.GroupVersion = &gv
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
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
	// No indexers: the model keeps its own indexes, and nothing lists the
	// informer's store by namespace (a namespace index cost a set entry per
	// object: 1.5 MB at 35k objects).
	return cache.NewSharedIndexInformerWithOptions(lw, exemplar, cache.SharedIndexInformerOptions{})
}

// typedSecretClient is a REST client for the core group whose Secret
// responses decode into typed Secrets through ser
// (transform.Transformer.TypedSecretSerializer: responses and watch frames
// wiped once decoded): on wire (the protobuf connection) when set, else on the
// connection of the typed clientset cs (--typed-decode leaves wire nil). It is
// nil, without error, for a clientset with no REST connection (a fake).
func typedSecretClient(cs kubernetes.Interface, wire *rest.Config, ser runtime.NegotiatedSerializer) (rest.Interface, error) {
	if wire != nil {
		return newWireClient(wire, ser)
	}
	if cs == nil {
		return nil, nil
	}
	rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return nil, nil
	}
	// The clientset's base URL and versioned path (its Request.URL with no
	// resource), its HTTP client (transport, TLS, credentials) and its rate
	// limiter; our serializer. The content types are the clientset's
	// (internal/agent ClientsFor: ProtobufConfig).
	base := rc.Get().URL()
	gv := schema.GroupVersion{Version: "v1"}
	return rest.NewRESTClient(base, "", rest.ClientContentConfig{
		AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON,
		ContentType:        runtime.ContentTypeProtobuf,
		GroupVersion:       gv,
		Negotiator:         runtime.NewClientNegotiator(ser, gv),
	}, rc.GetRateLimiter(), rc.Client)
}

// probeSecrets lists one Secret of ns (the degraded-access check of the
// Secret and Helm release resources) through the wiping client when there is
// one, and wipes the values of what it got.
func probeSecrets(ctx context.Context, m *Manager, ns string) error {
	var l *corev1.SecretList
	var err error
	if m.typedSecrets != nil {
		var obj runtime.Object
		obj, err = m.typedSecrets.Get().Namespace(ns).Resource("secrets").
			VersionedParams(&metav1.ListOptions{Limit: 1}, metav1.ParameterCodec).Do(ctx).Get()
		l, _ = obj.(*corev1.SecretList)
	} else {
		l, err = m.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1})
	}
	if l != nil {
		for i := range l.Items {
			for _, v := range l.Items[i].Data {
				clear(v)
			}
		}
	}
	return err
}
