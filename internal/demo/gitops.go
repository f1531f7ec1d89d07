package demo

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// GitOps part, namespace "gitops": truncated last-applied records, the Argo CD
// ignore-paths trap and a never-converging Application. Expected findings:
//
//   - driftwatch_last_applied_truncated{kind="ExternalSecret",name="orders-keys",cause="truncated_patch"} 1
//     (the Helm chart renders DB_PASSWORD but what was applied already lacked
//     it), and the Helm source then misses DB_PASSWORD in Secret orders-keys;
//   - ...{name="search-keys",cause="reverted_after_apply"} 1 (kubectl applied it
//     in full and still holds spec.data, yet the live list lacks SEARCH_PASS: a
//     mutating webhook stripped it), and the Helm source misses SEARCH_PASS in
//     Secret search-keys;
//   - driftwatch_argocd_ignore_list_trap{application="keys-trap",path="/spec/data/0/remoteRef",respect_ignore_differences="true",effect="rebuilds_list"} 1;
//   - driftwatch_argocd_not_converging{application="stuck",automated="true"} ≈ 1200
//     (OutOfSync at the very revision its last sync applied).
//
// The target Secrets carry their ExternalSecret's last-applied annotation, as ESO
// copies it: it describes an ExternalSecret and must not be judged as a Secret's.
// payments-keys is a healthy look-alike: ADYEN_KEY was added with kubectl edit,
// which took spec.data over (managedFields) without updating the annotation, so
// the annotation is frozen history, not evidence.
// Application "web" ignores /metadata/annotations/foo and is healthy.
func init() { addPart(gitopsPart) }

const gitopsNS = "gitops"

func gitopsPart(now time.Time) (core, dyn []runtime.Object) {
	fresh := now.Add(-5 * time.Minute)
	vault := map[string]any{"name": "vault", "kind": "SecretStore"}
	// The managedFields real kubectl leaves (docs/design.md, "Precision"):
	// client-side apply owns the annotation and spec.data; kubectl edit of the
	// list takes f:spec.f:data over and leaves the annotation as it was.
	applied := func(at time.Time, withData bool) metav1.ManagedFieldsEntry {
		spec := `"f:spec":{".":{},"f:refreshInterval":{},"f:secretStoreRef":{".":{},"f:kind":{},"f:name":{}},"f:target":{".":{},"f:creationPolicy":{},"f:deletionPolicy":{},"f:name":{}}}`
		if withData {
			spec = `"f:spec":{".":{},"f:data":{},"f:refreshInterval":{},"f:secretStoreRef":{".":{},"f:kind":{},"f:name":{}},"f:target":{".":{},"f:creationPolicy":{},"f:deletionPolicy":{},"f:name":{}}}`
		}
		return flipsEntry("kubectl-client-side-apply", at, metav1.NewFieldsV1(
			`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},`+spec+`}`))
	}
	es := func(name string, live, lastApplied []string, edited bool) *unstructured.Unstructured {
		spec := map[string]any{"secretStoreRef": vault, "refreshInterval": "1h",
			"target": map[string]any{"name": name, "creationPolicy": "Owner"}, "data": esData(live...)}
		u := externalSecret(gitopsNS, name, spec, "True", "SecretSynced", fresh)
		u.SetAnnotations(map[string]string{lastAppliedAnn: esLastApplied(name, lastApplied)})
		mf := []metav1.ManagedFieldsEntry{applied(now.Add(-2*time.Hour), !edited)}
		if edited {
			mf = append(mf, flipsEntry("kubectl-edit", now.Add(-time.Hour), metav1.NewFieldsV1(`{"f:spec":{"f:data":{}}}`)))
		}
		for i := range mf {
			mf[i].APIVersion = "external-secrets.io/v1"
		}
		u.SetManagedFields(mf)
		return u
	}
	target := func(name string, keys ...string) runtime.Object {
		data := map[string]string{}
		for _, k := range keys {
			data[k] = "demo-" + k
		}
		applied := map[string][]string{"payments-keys": {"STRIPE_KEY", "PAYPAL_KEY"},
			"orders-keys": {"DB_URL", "DB_USER"}, "search-keys": {"SEARCH_USER", "SEARCH_PASS"}}[name]
		s := secret(gitopsNS, name, data, map[string]string{lastAppliedAnn: esLastApplied(name, applied)})
		// Written by ESO: its controller ownerReference and managed label.
		ctrl := true
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret",
			Name: name, UID: types.UID("uid-es-" + gitopsNS + "-" + name), Controller: &ctrl}}
		s.Labels = map[string]string{"reconcile.external-secrets.io/managed": "true"}
		return s
	}

	dyn = append(dyn,
		es("payments-keys", []string{"STRIPE_KEY", "PAYPAL_KEY", "ADYEN_KEY"}, []string{"STRIPE_KEY", "PAYPAL_KEY"}, true),
		es("orders-keys", []string{"DB_URL", "DB_USER"}, []string{"DB_URL", "DB_USER"}, false),
		es("search-keys", []string{"SEARCH_USER"}, []string{"SEARCH_USER", "SEARCH_PASS"}, false),
		store("SecretStore", gitopsNS, "vault", map[string]any{"vault": map[string]any{"server": "https://vault.example:8200"}}, "True", "Valid"),
	)
	core = append(core,
		target("payments-keys", "STRIPE_KEY", "PAYPAL_KEY", "ADYEN_KEY"),
		target("orders-keys", "DB_URL", "DB_USER"),
		target("search-keys", "SEARCH_USER"),
		helmRelease(gitopsNS, "orders", 1, "deployed", ordersManifest),
	)

	esRes := func(name string) map[string]any {
		return map[string]any{"group": "external-secrets.io", "version": "v1", "kind": "ExternalSecret",
			"namespace": gitopsNS, "name": name, "status": "Synced"}
	}
	dyn = append(dyn,
		argoApp("keys-trap", map[string]any{
			"ignoreDifferences": []any{map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret",
				"jsonPointers": []any{"/spec/data/0/remoteRef"}}},
			"syncPolicy": map[string]any{"automated": map[string]any{}, "syncOptions": []any{"RespectIgnoreDifferences=true"}},
		}, "Synced", "Succeeded", now.Add(-time.Hour), esRes("payments-keys")),
		argoApp("web", map[string]any{
			"ignoreDifferences": []any{map[string]any{"group": "apps", "kind": "Deployment",
				"jsonPointers": []any{"/metadata/annotations/foo"}}},
		}, "Synced", "Succeeded", now.Add(-time.Hour),
			map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": gitopsNS, "name": "web", "status": "Synced"}),
		argoApp("stuck", map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{}}},
			"OutOfSync", "Succeeded", now.Add(-20*time.Minute), esRes("search-keys")),
	)
	// A manual-sync Application a commit behind: Git adds ROTATION_HINT to
	// cdn-token, nobody synced yet (info only: the key waits for the sync).
	core = append(core, secret(gitopsNS, "cdn-token", map[string]string{"TOKEN": "cdn-token-value"}, nil))
	behind := argoApp("cdn", map[string]any{}, "OutOfSync", "Succeeded", now.Add(-3*time.Hour),
		map[string]any{"version": "v1", "kind": "Secret", "namespace": gitopsNS, "name": "cdn-token", "status": "OutOfSync"})
	_ = unstructured.SetNestedField(behind.Object, argoBehindRevision, "status", "sync", "revision")
	dyn = append(dyn, behind)
	return core, dyn
}

// What the demo's Argo CD API stand-in (Transport) answers for the
// managed resources of an Application: keys-trap's payments-keys declares
// KLARNA_KEY, an entry the ignore rule kept from shipping although Argo CD
// synced the revision (driftwatch_gitops_synced_entries_missing, and the argocd
// source misses the key in the Secret); cdn's Secret declares ROTATION_HINT at
// a revision not synced yet (driftwatch_secret_key_pending_sync, info).
var argoManaged = map[string]string{
	"keys-trap": `{"items":[{"group":"external-secrets.io","kind":"ExternalSecret","namespace":"gitops","name":"payments-keys",` +
		`"targetState":"{\"apiVersion\":\"external-secrets.io/v1\",\"kind\":\"ExternalSecret\",\"metadata\":{\"name\":\"payments-keys\",\"namespace\":\"gitops\"},` +
		`\"spec\":{\"secretStoreRef\":{\"name\":\"vault\",\"kind\":\"SecretStore\"},\"target\":{\"name\":\"payments-keys\",\"creationPolicy\":\"Owner\"},` +
		`\"data\":[{\"secretKey\":\"STRIPE_KEY\"},{\"secretKey\":\"PAYPAL_KEY\"},{\"secretKey\":\"ADYEN_KEY\"},{\"secretKey\":\"KLARNA_KEY\"}]}}"}]}`,
	"cdn": `{"items":[{"kind":"Secret","namespace":"gitops","name":"cdn-token",` +
		`"targetState":"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"cdn-token\",\"namespace\":\"gitops\"},\"data\":{\"TOKEN\":null,\"ROTATION_HINT\":null}}"}]}`,
}

// argoBehindRevision is the revision Git is at for Application cdn; its last
// sync ran at argoApp's revision.
const argoBehindRevision = "9b0e7d1"

const lastAppliedAnn = "kubectl.kubernetes.io/last-applied-configuration"

// esLastApplied renders what kubectl apply stores: the applied manifest as
// compact JSON (an ExternalSecret holds no values).
func esLastApplied(name string, keys []string) string {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": name, "namespace": gitopsNS},
		"spec": map[string]any{"secretStoreRef": map[string]any{"name": "vault", "kind": "SecretStore"},
			"refreshInterval": "1h", "target": map[string]any{"name": name, "creationPolicy": "Owner"}, "data": esData(keys...)},
	})
	return string(b)
}

func argoApp(name string, spec map[string]any, sync, phase string, finished time.Time, resources ...map[string]any) *unstructured.Unstructured {
	spec["project"] = "default"
	spec["destination"] = map[string]any{"server": "https://kubernetes.default.svc", "namespace": gitopsNS}
	spec["source"] = map[string]any{"repoURL": "https://git.example/platform/apps.git", "path": name, "targetRevision": "main"}
	res := make([]any, 0, len(resources))
	for _, r := range resources {
		res = append(res, r)
	}
	return unstr(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": gitopsNS, "name": name, "uid": "uid-app-" + name},
		"spec":     spec,
		"status": map[string]any{
			"sync":      map[string]any{"status": sync, "revision": "4f1c2a9"},
			"health":    map[string]any{"status": "Healthy"},
			"resources": res,
			"operationState": map[string]any{"phase": phase,
				"operation":  map[string]any{"sync": map[string]any{"revision": "4f1c2a9"}},
				"syncResult": map[string]any{"revision": "4f1c2a9"},
				"startedAt":  finished.Add(-30 * time.Second).UTC().Format(time.RFC3339),
				"finishedAt": finished.UTC().Format(time.RFC3339)},
		},
	})
}

// ordersManifest is the orders chart's rendering: both ExternalSecrets in full.
const ordersManifest = `---
# Source: orders/templates/externalsecrets.yaml
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: orders-keys
spec:
  secretStoreRef: {name: vault, kind: SecretStore}
  target: {name: orders-keys}
  data:
  - {secretKey: DB_URL, remoteRef: {key: demo/DB_URL}}
  - {secretKey: DB_USER, remoteRef: {key: demo/DB_USER}}
  - {secretKey: DB_PASSWORD, remoteRef: {key: demo/DB_PASSWORD}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: search-keys
spec:
  secretStoreRef: {name: vault, kind: SecretStore}
  target: {name: search-keys}
  data:
  - {secretKey: SEARCH_USER, remoteRef: {key: demo/SEARCH_USER}}
  - {secretKey: SEARCH_PASS, remoteRef: {key: demo/SEARCH_PASS}}
`
