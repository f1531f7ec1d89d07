package kube

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// ProtobufConfig returns a copy of rc that asks for Protocol Buffers, falling back
// to JSON. Use it for the typed clientset only (Secrets, Pods, ServiceAccounts):
// decoding protobuf costs a fraction of JSON during the initial list, as
// kube-state-metrics does. The dynamic client (CRDs: ExternalSecrets, SecretStores,
// Argo CD Applications) has no protobuf encoding and keeps rc as it is.
func ProtobufConfig(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}
