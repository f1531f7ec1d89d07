package argocd

import (
	"slices"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	argodiff "github.com/argoproj/argo-cd/v3/util/argo/diff"
	"github.com/argoproj/argo-cd/v3/util/argo/normalizers"
	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/internal/model"
)

// The controller's RespectIgnoreDifferences step, as Argo CD v3.2.9 runs it
// (controller/sync.go normalizeTargetResources; v2.14.21 has the same): Argo CD's
// own normalizer (util/argo/diff.Normalize, with its jsonPointers and jq
// normalizers), then getMergePatch and applyMergePatch, copied verbatim below
// (they are unexported). It returns the object Argo CD would apply.
func argoRespectIgnoreDifferences(t *testing.T, live, target *unstructured.Unstructured, ignore v1alpha1.ResourceIgnoreDifferences) *unstructured.Unstructured {
	t.Helper()
	dc, err := argodiff.NewDiffConfigBuilder().
		WithDiffSettings([]v1alpha1.ResourceIgnoreDifferences{ignore}, map[string]v1alpha1.ResourceOverride{}, false, normalizers.IgnoreNormalizerOpts{}).
		WithNoCache().Build()
	if err != nil {
		t.Fatal(err)
	}
	normalized, err := argodiff.Normalize([]*unstructured.Unstructured{live}, []*unstructured.Unstructured{target}, dc)
	if err != nil {
		t.Fatal(err)
	}
	normalizedTarget := normalized.Targets[0]
	var lookupPatchMeta *strategicpatch.PatchMetaFromStruct
	versionedObject, err := scheme.Scheme.New(normalizedTarget.GroupVersionKind())
	if err == nil {
		meta, err := strategicpatch.NewPatchMetaFromStruct(versionedObject)
		if err != nil {
			t.Fatal(err)
		}
		lookupPatchMeta = &meta
	}
	livePatch, err := getMergePatch(normalized.Lives[0], live, lookupPatchMeta)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := applyMergePatch(normalizedTarget, livePatch, versionedObject)
	if err != nil {
		t.Fatal(err)
	}
	return patched
}

// getMergePatch: Argo CD v3.2.9 controller/sync.go, verbatim.
func getMergePatch(original, modified *unstructured.Unstructured, lookupPatchMeta *strategicpatch.PatchMetaFromStruct) ([]byte, error) {
	originalJSON, err := original.MarshalJSON()
	if err != nil {
		return nil, err
	}
	modifiedJSON, err := modified.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if lookupPatchMeta != nil {
		return strategicpatch.CreateThreeWayMergePatch(modifiedJSON, modifiedJSON, originalJSON, lookupPatchMeta, true)
	}

	return jsonpatch.CreateMergePatch(originalJSON, modifiedJSON)
}

// applyMergePatch: Argo CD v3.2.9 controller/sync.go, verbatim.
func applyMergePatch(obj *unstructured.Unstructured, patch []byte, versionedObject any) (*unstructured.Unstructured, error) {
	originalJSON, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var patchedJSON []byte
	if versionedObject == nil {
		patchedJSON, err = jsonpatch.MergePatch(originalJSON, patch)
	} else {
		patchedJSON, err = strategicpatch.StrategicMergePatch(originalJSON, patch, versionedObject)
	}
	if err != nil {
		return nil, err
	}

	patchedObj := &unstructured.Unstructured{}
	_, _, err = unstructured.UnstructuredJSONScheme.Decode(patchedJSON, nil, patchedObj)
	if err != nil {
		return nil, err
	}
	return patchedObj, nil
}

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// names returns the values of field key of the list at path.
func names(u *unstructured.Unstructured, key string, path ...string) []string {
	l, _, _ := unstructured.NestedSlice(u.Object, path...)
	var out []string
	for _, x := range l {
		switch v := x.(type) {
		case map[string]any:
			out = append(out, v[key].(string))
		case string:
			out = append(out, v)
		}
	}
	return out
}

// Live ExternalSecret entries as the apiserver returns them: the ESO CRD
// defaults conversionStrategy, decodingStrategy and metadataPolicy.
const esLive = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: api, namespace: shop}
spec:
  refreshInterval: 15s
  secretStoreRef: {name: vault, kind: SecretStore}
  target: {name: api, creationPolicy: Owner, deletionPolicy: Retain}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db-user, version: v1, conversionStrategy: Default, decodingStrategy: None, metadataPolicy: None}}
  - {secretKey: DB_PASS, remoteRef: {key: db-pass, version: v1, conversionStrategy: Default, decodingStrategy: None, metadataPolicy: None}}
`

// Git's ExternalSecret after a commit adding API_TOKEN.
const esTarget = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: api, namespace: shop}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: vault, kind: SecretStore}
  target: {name: api}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db-user, version: v1}}
  - {secretKey: DB_PASS, remoteRef: {key: db-pass, version: v1}}
  - {secretKey: API_TOKEN, remoteRef: {key: api-token, version: v1}}
`

func webhooks(ws string) string {
	return "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: hooks}\nwebhooks:\n" + ws
}

const hookA = `- name: a.example
  clientConfig: {url: "https://a.example", caBundle: Q0E=}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`

const hookAGit = `- name: a.example
  clientConfig: {url: "https://a.example"}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  sideEffects: None
  admissionReviewVersions: [v1]
`

const hookBGit = `- name: b.example
  clientConfig: {url: "https://b.example"}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`

func deployment(args string, containers string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: "app:1", args: ` + args + `}
` + containers
}

// TestDetectorAgreesWithArgoCDSyncPatch runs Argo CD's RespectIgnoreDifferences
// step on live and Git objects where Git added a list entry, and checks
// driftwatch's ignore-list-trap detector against what Argo CD would apply: an
// entry Argo CD drops is a trap (page when the ignored part is always in live),
// one Argo CD ships is never a page.
func TestDetectorAgreesWithArgoCDSyncPatch(t *testing.T) {
	esIgnore := func(form string, paths ...string) v1alpha1.ResourceIgnoreDifferences {
		d := v1alpha1.ResourceIgnoreDifferences{Group: "external-secrets.io", Kind: "ExternalSecret"}
		if form == "jq" {
			d.JQPathExpressions = paths
		} else {
			d.JSONPointers = paths
		}
		return d
	}
	esKeys := func(u *unstructured.Unstructured) []string { return names(u, "secretKey", "spec", "data") }
	for _, c := range []struct {
		name         string
		live, target string
		ignore       v1alpha1.ResourceIgnoreDifferences
		// shipped reports whether Git's addition is in what Argo CD applies.
		shipped func(*unstructured.Unstructured) bool
		effect  detect.TrapEffect // driftwatch's verdict ("" = no finding)
	}{
		{"CRD-defaulted field, jsonPointer", esLive, esTarget, esIgnore("pointer", "/spec/data/0/remoteRef/conversionStrategy"),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, detect.EffectRebuildsList},
		{"CRD-defaulted field, jq", esLive, esTarget, esIgnore("jq", ".spec.data[].remoteRef.decodingStrategy"),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, detect.EffectRebuildsList},
		{"field set in Git and live", esLive, esTarget, esIgnore("jq", ".spec.data[]?.remoteRef.version"),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, detect.EffectRebuildsListIfPresent},
		{"field live lacks", esLive, esTarget, esIgnore("jq", ".spec.data[].remoteRef.property"),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, detect.EffectRebuildsListIfPresent},
		{"one element by filter", esLive, esTarget, esIgnore("jq", `.spec.data[] | select(.secretKey == "DB_USER") | .remoteRef.metadataPolicy`),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, detect.EffectRebuildsListIfPresent},
		{"whole elements", esLive, esTarget, esIgnore("jq", ".spec.data[]"),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, detect.EffectRebuildsList},
		{"scalar", esLive, esTarget, esIgnore("pointer", "/spec/refreshInterval"),
			func(u *unstructured.Unstructured) bool { return slices.Contains(esKeys(u), "API_TOKEN") }, ""},
		{"webhooks merge by name (Argo CD's example)", webhooks(hookA), webhooks(hookAGit + hookBGit),
			v1alpha1.ResourceIgnoreDifferences{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration",
				JQPathExpressions: []string{".webhooks[]?.clientConfig.caBundle"}},
			func(u *unstructured.Unstructured) bool { return len(names(u, "name", "webhooks")) == 2 }, ""},
		{"a webhook's rules are atomic", webhooks(hookA), webhooks(hookAGit),
			v1alpha1.ResourceIgnoreDifferences{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration",
				JQPathExpressions: []string{".webhooks[].rules[].operations"}},
			func(u *unstructured.Unstructured) bool {
				ws, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
				rules, _, _ := unstructured.NestedSlice(ws[0].(map[string]any), "rules")
				return len(rules) == 2
			}, detect.EffectRebuildsListIfPresent},
		{"containers merge by name", deployment("[--a]", ""), deployment("[--a]", "      - {name: sidecar, image: \"side:1\"}\n"),
			v1alpha1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/template/spec/containers/0/image"}},
			func(u *unstructured.Unstructured) bool {
				return len(names(u, "name", "spec", "template", "spec", "containers")) == 2
			}, ""},
		{"args are atomic", deployment("[--a]", ""), deployment("[--a, --b]", ""),
			v1alpha1.ResourceIgnoreDifferences{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/template/spec/containers/0/args/0"}},
			func(u *unstructured.Unstructured) bool {
				cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
				return slices.Contains(args, "--b")
			}, detect.EffectRebuildsList},
	} {
		t.Run(c.name, func(t *testing.T) {
			live, target := obj(t, c.live), obj(t, c.target)
			applied := argoRespectIgnoreDifferences(t, live, target, c.ignore)
			shipped := c.shipped(applied)

			gvk := live.GroupVersionKind()
			s := model.NewStore(nil)
			s.UpsertApp(&model.ArgoApp{ObjectMeta: model.ObjectMeta{Namespace: "argocd", Name: "app"}, RespectIgnoreDifferences: true,
				SyncStatus: "Synced", Resources: []model.ArgoResource{{Group: gvk.Group, Kind: gvk.Kind, Namespace: "shop", Name: live.GetName()}},
				IgnoreDifferences: []model.IgnoreDifference{{Group: c.ignore.Group, Kind: c.ignore.Kind,
					JSONPointers: c.ignore.JSONPointers, JQPathExpressions: c.ignore.JQPathExpressions}}})
			var traps []detect.Trap
			s.Read(func(v model.View) {
				traps = detect.IgnoreListTraps(v, model.Availability{model.ResApplications: true})
			})
			var effect detect.TrapEffect
			if len(traps) > 0 {
				effect = traps[0].Effect
			}
			t.Logf("Argo CD applies Git's addition: %v; driftwatch: %q", shipped, effect)
			if !shipped && effect == "" {
				t.Fatalf("Argo CD drops Git's entry, driftwatch reports nothing; applied:\n%v", applied.Object)
			}
			if shipped && effect == detect.EffectRebuildsList {
				t.Fatalf("Argo CD ships Git's entry, driftwatch would page; applied:\n%v", applied.Object)
			}
			if effect != c.effect {
				t.Fatalf("driftwatch: %q, want %q", effect, c.effect)
			}
		})
	}
}
