package eso

// Fully populated upstream objects built with ESO's own Go types. The v1beta1 file
// is generated from this one by gen-v1beta1.sh (`go generate`).

import (
	"time"

	esv1 "github.com/external-secrets/external-secrets/apis/externalsecrets/v1"
	esmeta "github.com/external-secrets/external-secrets/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func v1Fixtures() fixtures {
	apiVersion := esv1.SchemeGroupVersion.String()
	t0 := metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	t1 := metav1.NewTime(time.Date(2025, 3, 4, 6, 7, 8, 0, time.UTC))
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("uid-" + name), ResourceVersion: "42", Generation: 3,
			Labels:      map[string]string{"app": "payments"},
			Annotations: map[string]string{"note": "fixture"},
		}
	}
	conditions := []esv1.SecretStoreStatusCondition{{
		Type: esv1.SecretStoreReady, Status: corev1.ConditionFalse, Reason: "InvalidProviderConfig",
		Message: "unable to validate store", LastTransitionTime: t1,
	}}

	es := &esv1.ExternalSecret{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: esv1.ExtSecretKind},
		ObjectMeta: meta("db-credentials", "payments"),
		Spec: esv1.ExternalSecretSpec{
			SecretStoreRef:  esv1.SecretStoreRef{Name: "aws-store", Kind: esv1.ClusterSecretStoreKind},
			RefreshPolicy:   esv1.RefreshPolicyPeriodic,
			RefreshInterval: &metav1.Duration{Duration: 90 * time.Minute},
			Target: esv1.ExternalSecretTarget{
				Name:           "db-credentials-target",
				CreationPolicy: esv1.CreatePolicyMerge,
				DeletionPolicy: esv1.DeletionPolicyRetain,
				Immutable:      true,
				Template: &esv1.ExternalSecretTemplate{
					Type:          corev1.SecretTypeDockerConfigJson,
					EngineVersion: esv1.TemplateEngineV2,
					MergePolicy:   esv1.MergePolicyMerge,
					Metadata: esv1.ExternalSecretTemplateMetadata{
						Annotations: map[string]string{"a": "b"}, Labels: map[string]string{"c": "d"},
					},
					Data: map[string]string{
						".dockerconfigjson": `{"auths":{"r":{"auth":"{{ .token | b64enc }}"}}}`,
						"dsn":               "postgres://{{ .user }}@db/{{ .name }}",
					},
					TemplateFrom: []esv1.TemplateFrom{
						{
							ConfigMap: &esv1.TemplateRef{Name: "tpl-cm", Items: []esv1.TemplateRefItem{
								{Key: "config.yaml", TemplateAs: esv1.TemplateScopeValues},
								{Key: "extra", TemplateAs: esv1.TemplateScopeKeysAndValues},
							}},
							Target: esv1.TemplateTargetData,
						},
						{
							Secret: &esv1.TemplateRef{Name: "tpl-secret", Items: []esv1.TemplateRefItem{
								{Key: "annotations.tpl", TemplateAs: esv1.TemplateScopeKeysAndValues},
							}},
							Target: esv1.TemplateTargetAnnotations,
						},
						{
							Literal: ref(`{{ range $k, $v := . }}{{ $k }}: {{ $v }}{{ end }}`),
							Target:  esv1.TemplateTargetLabels,
						},
					},
				},
			},
			Data: []esv1.ExternalSecretData{
				{SecretKey: "password", RemoteRef: esv1.ExternalSecretDataRemoteRef{
					Key: "prod/db", Property: "password", Version: "AWSCURRENT",
					MetadataPolicy: esv1.ExternalSecretMetadataPolicyNone, ConversionStrategy: esv1.ExternalSecretConversionDefault,
					DecodingStrategy: esv1.ExternalSecretDecodeNone,
				}},
				{SecretKey: "user", RemoteRef: esv1.ExternalSecretDataRemoteRef{Key: "prod/db-user", Property: "name"},
					SourceRef: &esv1.StoreSourceRef{SecretStoreRef: esv1.SecretStoreRef{Name: "other", Kind: esv1.SecretStoreKind}}},
			},
			DataFrom: []esv1.ExternalSecretDataFromRemoteRef{
				{Extract: &esv1.ExternalSecretDataRemoteRef{Key: "prod/app", Property: "config", Version: "3"}},
				{Find: &esv1.ExternalSecretFind{
					Path: ref("prod/"), Name: &esv1.FindName{RegExp: "^app-.*"},
					Tags: map[string]string{"team": "payments", "env": "prod"},
				}},
				{SourceRef: &esv1.StoreGeneratorSourceRef{GeneratorRef: &esv1.GeneratorRef{
					APIVersion: "generators.external-secrets.io/v1alpha1", Kind: "Password", Name: "db-password"}}},
			},
		},
		Status: esv1.ExternalSecretStatus{
			RefreshTime:           t0,
			SyncedResourceVersion: "1-abcdef",
			Binding:               corev1.LocalObjectReference{Name: "db-credentials-target"},
			Conditions: []esv1.ExternalSecretStatusCondition{
				{Type: esv1.ExternalSecretReady, Status: corev1.ConditionTrue, Reason: esv1.ConditionReasonSecretSynced,
					Message: "secret synced", LastTransitionTime: t1},
				{Type: esv1.ExternalSecretDeleted, Status: corev1.ConditionFalse, Reason: esv1.ConditionReasonSecretDeleted,
					Message: "not deleted", LastTransitionTime: t0},
			},
		},
	}

	store := func(kind, name, ns string, p *esv1.SecretStoreProvider) any {
		spec := esv1.SecretStoreSpec{Controller: "dev", Provider: p, RefreshInterval: 300}
		status := esv1.SecretStoreStatus{Conditions: conditions, Capabilities: esv1.SecretStoreReadWrite}
		if kind == esv1.ClusterSecretStoreKind {
			spec.Conditions = []esv1.ClusterSecretStoreCondition{{Namespaces: []string{"payments"}}}
			return &esv1.ClusterSecretStore{
				TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
				ObjectMeta: meta(name, ""), Spec: spec, Status: status,
			}
		}
		return &esv1.SecretStore{
			TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
			ObjectMeta: meta(name, ns), Spec: spec, Status: status,
		}
	}
	sa := func(name string) *esmeta.ServiceAccountSelector {
		return &esmeta.ServiceAccountSelector{Name: name, Namespace: ref("identity"), Audiences: []string{"sts.amazonaws.com"}}
	}
	key := func(name, k string) esmeta.SecretKeySelector {
		return esmeta.SecretKeySelector{Name: name, Namespace: ref("creds"), Key: k}
	}

	stores := []any{
		store(esv1.SecretStoreKind, "aws-jwt", "payments", &esv1.SecretStoreProvider{AWS: &esv1.AWSProvider{
			Service: esv1.AWSServiceSecretsManager, Region: "eu-west-1", Role: "arn:aws:iam::1:role/read",
			ExternalID: "ext", AdditionalRoles: []string{"arn:aws:iam::1:role/extra"},
			Auth: esv1.AWSAuth{JWTAuth: &esv1.AWSJWTAuth{ServiceAccountRef: sa("eso-aws")}},
		}}),
		store(esv1.ClusterSecretStoreKind, "aws-keys", "", &esv1.SecretStoreProvider{AWS: &esv1.AWSProvider{
			Service: esv1.AWSServiceParameterStore, Region: "us-east-1",
			Auth: esv1.AWSAuth{SecretRef: &esv1.AWSAuthSecretRef{
				AccessKeyID:     key("aws-creds", "access-key-id"),
				SecretAccessKey: key("aws-creds", "secret-access-key"),
			}},
		}}),
		store(esv1.SecretStoreKind, "azure-wi", "payments", &esv1.SecretStoreProvider{AzureKV: &esv1.AzureKVProvider{
			AuthType: ptrTo(esv1.AzureWorkloadIdentity), VaultURL: ref("https://kv.vault.azure.net"),
			TenantID: ref("tenant-1"), EnvironmentType: esv1.AzureEnvironmentPublicCloud,
			ServiceAccountRef: sa("eso-azure"), IdentityID: ref("identity-1"),
			AuthSecretRef: &esv1.AzureKVAuth{
				ClientID: ptrTo(key("azure-creds", "client-id")),
				TenantID: ptrTo(key("azure-creds", "tenant-id")),
			},
		}}),
		store(esv1.ClusterSecretStoreKind, "gcp-wi", "", &esv1.SecretStoreProvider{GCPSM: &esv1.GCPSMProvider{
			ProjectID: "proj-1", Location: "europe-west1",
			Auth: esv1.GCPSMAuth{WorkloadIdentity: &esv1.GCPWorkloadIdentity{
				ServiceAccountRef: *sa("eso-gcp"), ClusterLocation: "europe-west1", ClusterName: "prod", ClusterProjectID: "proj-0",
			}},
		}}),
		store(esv1.SecretStoreKind, "gcp-key", "payments", &esv1.SecretStoreProvider{GCPSM: &esv1.GCPSMProvider{
			ProjectID: "proj-2",
			Auth: esv1.GCPSMAuth{SecretRef: &esv1.GCPSMAuthSecretRef{
				SecretAccessKey: key("gcp-creds", "sa.json"),
			}},
		}}),
		store(esv1.SecretStoreKind, "vault-k8s", "payments", &esv1.SecretStoreProvider{Vault: &esv1.VaultProvider{
			Server: "https://vault:8200", Path: ref("secret"), Version: esv1.VaultKVStoreV2,
			Auth: &esv1.VaultAuth{Kubernetes: &esv1.VaultKubernetesAuth{
				Path: "kubernetes", Role: "eso-reader", ServiceAccountRef: sa("eso-vault"),
			}},
		}}),
	}
	return fixtures{externalSecrets: []any{es}, stores: stores}
}
