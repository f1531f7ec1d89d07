package demo

import (
	"encoding/base64"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Migration and identity examples, namespace "migration". Expected findings:
//
//	driftwatch_compare_mismatch{namespace="migration",secret="orders-db",compare_with="orders-db-check",key="password",verdict="mismatch",hint="whitespace"} 1
//	driftwatch_compare_ready{namespace="migration",secret="orders-db",compare_with="orders-db-check"} 0
//	driftwatch_externalsecret_unsafe{namespace="migration",externalsecret="legacy-api",reason="delete_with_merge"} 1
//	driftwatch_externalsecret_unsafe{namespace="migration",externalsecret="mailer",reason="implicit_creation_policy"} 1
//	driftwatch_secret_duplicate_credentials{namespace="migration",secret="payments-creds-copy",duplicate_of="payments-creds"} 1
//	driftwatch_secret_last_applied_data{namespace="migration",secret="smtp",stale="true"} 1
//	driftwatch_serviceaccount_workload_identity_missing{namespace="migration",serviceaccount="eso-reader",provider="aws",
//	    store_kind="SecretStore",store_namespace="migration",store="aws-irsa-broken",reason="annotation_missing"} 1
//
// The healthy counterparts (aws-irsa with an annotated SA, the ExternalSecrets'
// explicit policies, the check copy's ownerReference) must not appear.
func init() { addPart(migrationPart) }

func migrationPart(now time.Time) (core, dyn []runtime.Object) {
	const ns = "migration"
	fresh := now.Add(-5 * time.Minute)
	vault := map[string]any{"name": "vault", "kind": "SecretStore"}
	yes := true

	// Seed technique: orders-db is live; an ExternalSecret syncs the store's value
	// to orders-db-check, and the pair is compared continuously. The store's
	// password lacks the trailing newline the live one has.
	check := secret(ns, "orders-db-check", map[string]string{"username": "orders", "password": "Zq8-live-orders-pw"}, nil)
	check.OwnerReferences = []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret",
		Name: "orders-db-check", UID: "uid-es-migration-orders-db-check", Controller: &yes}}
	core = append(core,
		secret(ns, "orders-db", map[string]string{"username": "orders", "password": "Zq8-live-orders-pw\n"},
			map[string]string{"driftwatch.io/compare-with": "orders-db-check"}),
		check,
	)
	dyn = append(dyn,
		store("SecretStore", ns, "vault", map[string]any{"vault": map[string]any{"server": "https://vault.example:8200"}}, "True", "Valid"),
		externalSecret(ns, "orders-db-check", map[string]any{"secretStoreRef": vault, "refreshInterval": "1h",
			"target": map[string]any{"name": "orders-db-check", "creationPolicy": "Owner"}, "data": esData("username", "password")},
			"True", "SecretSynced", fresh),
	)

	// Adoption: deletionPolicy Delete on a Merge target deletes keys from a Secret
	// ESO does not own.
	core = append(core, secret(ns, "legacy-api", map[string]string{"API_TOKEN": "lg-4f1c9e0b7a"}, nil))
	dyn = append(dyn, externalSecret(ns, "legacy-api", map[string]any{"secretStoreRef": vault, "refreshInterval": "1h",
		"target": map[string]any{"name": "legacy-api", "creationPolicy": "Merge", "deletionPolicy": "Delete"},
		"data":   esData("API_TOKEN")}, "True", "SecretSynced", fresh))

	// Adoption: the manifest kubectl applied set no creationPolicy (defaulted to
	// Owner). The target is ESO's own, so owner_over_existing does not apply.
	mailerSecret := secret(ns, "mailer", map[string]string{"SMTP_USER": "mailer"}, nil)
	mailerSecret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret",
		Name: "mailer", UID: "uid-es-migration-mailer", Controller: &yes}}
	core = append(core, mailerSecret)
	mailerSpec := map[string]any{"secretStoreRef": vault, "refreshInterval": "1h",
		"target": map[string]any{"name": "mailer"}, "data": esData("SMTP_USER")}
	mailer := externalSecret(ns, "mailer", mailerSpec, "True", "SecretSynced", fresh)
	applied, _ := json.Marshal(map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "mailer", "namespace": ns}, "spec": mailerSpec})
	mailer.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)})
	// Client-side apply created it: its entry owns the annotation and, defaulted
	// by the CRD in the same request, spec.target.creationPolicy.
	mailerMF := flipsEntry("kubectl-client-side-apply", now.Add(-time.Hour), metav1.NewFieldsV1(
		`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},`+
			`"f:spec":{".":{},"f:data":{},"f:refreshInterval":{},"f:secretStoreRef":{".":{},"f:kind":{},"f:name":{}},"f:target":{".":{},"f:creationPolicy":{},"f:deletionPolicy":{},"f:name":{}}}}`))
	mailerMF.APIVersion = "external-secrets.io/v1"
	mailer.SetManagedFields([]metav1.ManagedFieldsEntry{mailerMF})
	if spec, ok := mailer.Object["spec"].(map[string]any); ok { // the CRD defaults what was not applied
		spec["target"] = map[string]any{"name": "mailer", "creationPolicy": "Owner", "deletionPolicy": "Retain"}
	}
	dyn = append(dyn, mailer)

	// Duplicate credentials: a forgotten check copy.
	creds := map[string]string{"STRIPE_SECRET": "sk_demo_9f8e7d6c5b4a", "WEBHOOK_SECRET": "whsec_demo_0a1b2c3d"}
	core = append(core, secret(ns, "payments-creds", creds, nil), secret(ns, "payments-creds-copy", creds, nil))

	// last-applied holds a copy of the data, and the live value has since rotated.
	laSecret, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "smtp", "namespace": ns}, "type": "Opaque",
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("smtp-old-password"))}})
	core = append(core, secret(ns, "smtp", map[string]string{"password": "smtp-rotated-password"},
		map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(laSecret)}))

	// Workload identity: IRSA store whose ServiceAccount lacks the role ARN, next
	// to a healthy one.
	okSA := &corev1.ServiceAccount{ObjectMeta: meta(ns, "eso-reader-ok")}
	okSA.Annotations = map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/eso-reader"}
	core = append(core, &corev1.ServiceAccount{ObjectMeta: meta(ns, "eso-reader")}, okSA)
	irsa := func(name, sa string) *unstructured.Unstructured {
		return store("SecretStore", ns, name, map[string]any{"aws": map[string]any{"service": "SecretsManager", "region": "eu-west-1",
			"auth": map[string]any{"jwt": map[string]any{"serviceAccountRef": map[string]any{"name": sa}}}}}, "True", "Valid")
	}
	dyn = append(dyn, irsa("aws-irsa-broken", "eso-reader"), irsa("aws-irsa", "eso-reader-ok"))
	return core, dyn
}
