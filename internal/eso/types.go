// Package eso holds small local mirrors of the External Secrets Operator API types:
// only the fields driftwatch reads. Objects arrive through dynamic informers as
// unstructured maps and are decoded into these structs with
// runtime.DefaultUnstructuredConverter. test/apicompat/eso proves, against ESO's own
// Go types, that every field read here survives the round trip.
package eso

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const Group = "external-secrets.io"

// Versions in order of preference; discovery picks the first one served.
var Versions = []string{"v1", "v1beta1"}

// ExternalSecret mirrors external-secrets.io ExternalSecret (v1 and v1beta1 share
// these fields).
type ExternalSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ExternalSecretSpec   `json:"spec,omitempty"`
	Status            ExternalSecretStatus `json:"status,omitempty"`
}

type ExternalSecretSpec struct {
	SecretStoreRef  SecretStoreRef       `json:"secretStoreRef,omitempty"`
	Target          ExternalSecretTarget `json:"target,omitempty"`
	RefreshInterval *metav1.Duration     `json:"refreshInterval,omitempty"`
	// RefreshPolicy is Periodic (default), CreatedOnce or OnChange.
	RefreshPolicy string                         `json:"refreshPolicy,omitempty"`
	Data          []ExternalSecretData           `json:"data,omitempty"`
	DataFrom      []ExternalSecretDataFromRemote `json:"dataFrom,omitempty"`
}

type SecretStoreRef struct {
	Name string `json:"name,omitempty"`
	Kind string `json:"kind,omitempty"`
}

type ExternalSecretTarget struct {
	Name           string                  `json:"name,omitempty"`
	CreationPolicy string                  `json:"creationPolicy,omitempty"`
	DeletionPolicy string                  `json:"deletionPolicy,omitempty"`
	Template       *ExternalSecretTemplate `json:"template,omitempty"`
}

type ExternalSecretTemplate struct {
	Type         string            `json:"type,omitempty"`
	MergePolicy  string            `json:"mergePolicy,omitempty"`
	Data         map[string]string `json:"data,omitempty"`
	TemplateFrom []TemplateFrom    `json:"templateFrom,omitempty"`
}

type TemplateFrom struct {
	ConfigMap *TemplateRef `json:"configMap,omitempty"`
	Secret    *TemplateRef `json:"secret,omitempty"`
	// Target is Data (default), Annotations or Labels.
	Target  string  `json:"target,omitempty"`
	Literal *string `json:"literal,omitempty"`
}

type TemplateRef struct {
	Name  string            `json:"name"`
	Items []TemplateRefItem `json:"items"`
}

type TemplateRefItem struct {
	Key string `json:"key"`
	// TemplateAs is Values (default: the item key is the Secret key) or
	// KeysAndValues (keys known only at render time).
	TemplateAs string `json:"templateAs,omitempty"`
}

type ExternalSecretData struct {
	SecretKey string                      `json:"secretKey"`
	RemoteRef ExternalSecretDataRemoteRef `json:"remoteRef"`
}

type ExternalSecretDataRemoteRef struct {
	Key      string `json:"key"`
	Property string `json:"property,omitempty"`
}

type ExternalSecretDataFromRemote struct {
	Extract   *ExternalSecretDataRemoteRef `json:"extract,omitempty"`
	Find      *ExternalSecretFind          `json:"find,omitempty"`
	SourceRef *StoreGeneratorSourceRef     `json:"sourceRef,omitempty"`
}

// StoreGeneratorSourceRef is dataFrom[].sourceRef: a generator instead of the
// store (its storeRef is not read).
type StoreGeneratorSourceRef struct {
	GeneratorRef *GeneratorRef `json:"generatorRef,omitempty"`
}

// GeneratorRef names a generator resource (Password, ECRAuthorizationToken...).
type GeneratorRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

type ExternalSecretFind struct {
	Path *string           `json:"path,omitempty"`
	Name *FindName         `json:"name,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

type FindName struct {
	RegExp string `json:"regexp,omitempty"`
}

type ExternalSecretStatus struct {
	RefreshTime metav1.Time `json:"refreshTime,omitempty"`
	// SyncedResourceVersion is what ESO last synced: "<metadata.generation>-<hash
	// of labels and annotations>" (its getResourceVersion).
	SyncedResourceVersion string            `json:"syncedResourceVersion,omitempty"`
	Conditions            []StatusCondition `json:"conditions,omitempty"`
}

type StatusCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Message is read only to classify it (ProviderReadFailed) and is never
	// kept: a condition message can carry provider text, and has carried a
	// value (external-secrets#5884).
	Message            string      `json:"message,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// SecretStore mirrors SecretStore and ClusterSecretStore.
type SecretStore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SecretStoreSpec   `json:"spec,omitempty"`
	Status            SecretStoreStatus `json:"status,omitempty"`
}

type SecretStoreSpec struct {
	Provider *SecretStoreProvider `json:"provider,omitempty"`
}

type SecretStoreStatus struct {
	Conditions []StatusCondition `json:"conditions,omitempty"`
}

// SecretStoreProvider lists the providers whose identity driftwatch checks; any
// other provider is recognised by name only (see ProviderName).
type SecretStoreProvider struct {
	AWS     *AWSProvider     `json:"aws,omitempty"`
	AzureKV *AzureKVProvider `json:"azurekv,omitempty"`
	GCPSM   *GCPSMProvider   `json:"gcpsm,omitempty"`
	Vault   *VaultProvider   `json:"vault,omitempty"`
}

type ServiceAccountSelector struct {
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
}

type SecretKeySelector struct {
	Name      string  `json:"name,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
	Key       string  `json:"key,omitempty"`
}

type AWSProvider struct {
	Service string  `json:"service"`
	Region  string  `json:"region"`
	Role    string  `json:"role,omitempty"`
	Auth    AWSAuth `json:"auth,omitempty"`
}

type AWSAuth struct {
	SecretRef *struct {
		AccessKeyID SecretKeySelector `json:"accessKeyIDSecretRef,omitempty"`
	} `json:"secretRef,omitempty"`
	JWTAuth *struct {
		ServiceAccountRef *ServiceAccountSelector `json:"serviceAccountRef,omitempty"`
	} `json:"jwt,omitempty"`
}

type AzureKVProvider struct {
	AuthType          *string                 `json:"authType,omitempty"`
	VaultURL          *string                 `json:"vaultUrl"`
	TenantID          *string                 `json:"tenantId,omitempty"`
	AuthSecretRef     *AzureKVAuth            `json:"authSecretRef,omitempty"`
	ServiceAccountRef *ServiceAccountSelector `json:"serviceAccountRef,omitempty"`
	IdentityID        *string                 `json:"identityId,omitempty"`
}

type AzureKVAuth struct {
	ClientID *SecretKeySelector `json:"clientId,omitempty"`
}

type GCPSMProvider struct {
	ProjectID string    `json:"projectID,omitempty"`
	Auth      GCPSMAuth `json:"auth,omitempty"`
}

type GCPSMAuth struct {
	SecretRef *struct {
		SecretAccessKey SecretKeySelector `json:"secretAccessKeySecretRef,omitempty"`
	} `json:"secretRef,omitempty"`
	WorkloadIdentity *struct {
		ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`
	} `json:"workloadIdentity,omitempty"`
}

type VaultProvider struct {
	Server string     `json:"server"`
	Auth   *VaultAuth `json:"auth,omitempty"`
}

type VaultAuth struct {
	Kubernetes *struct {
		ServiceAccountRef *ServiceAccountSelector `json:"serviceAccountRef,omitempty"`
		Role              string                  `json:"role"`
	} `json:"kubernetes,omitempty"`
}

// MsgProviderReadFailed is how ESO's Ready condition message begins when the
// controller could not get an ExternalSecret's data from its provider (the
// store unreachable, the credential refused, a remoteRef key or property
// missing): msgErrorGetSecretData in ESO v0.20.4's externalsecret_controller.go,
// with reason SecretSyncedError. Later versions append details after it.
const MsgProviderReadFailed = "could not get secret data from provider"

// ProviderReadFailed reports whether a Ready condition says ESO could not get
// the data from the provider.
func ProviderReadFailed(c StatusCondition) bool {
	return c.Status == "False" && strings.HasPrefix(c.Message, MsgProviderReadFailed)
}
