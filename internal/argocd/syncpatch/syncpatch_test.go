package syncpatch

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/driftwatch/driftwatch/internal/argocd/ignorepath"
)

func parse(t *testing.T, s string) ignorepath.Path {
	t.Helper()
	var p ignorepath.Path
	var err error
	if s != "" && s[0] == '/' {
		p, err = ignorepath.ParseJSONPointer(s)
	} else {
		p, err = ignorepath.ParseJQ(s)
	}
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return p
}

func TestPatchFor(t *testing.T) {
	for _, c := range []struct {
		group, kind string
		want        Patch
	}{
		{"", "Secret", StrategicMerge},
		{"", "ConfigMap", StrategicMerge},
		{"apps", "Deployment", StrategicMerge},
		{"admissionregistration.k8s.io", "MutatingWebhookConfiguration", StrategicMerge},
		{"networking.k8s.io", "Ingress", StrategicMerge},
		{"external-secrets.io", "ExternalSecret", JSONMerge},
		{"argoproj.io", "Application", JSONMerge},
		{"apiextensions.k8s.io", "CustomResourceDefinition", JSONMerge}, // not in client-go's scheme
		{"", "NoSuchKind", JSONMerge},
	} {
		if got := PatchFor(c.group, c.kind); got != c.want {
			t.Errorf("%s/%s: %v, want %v", c.group, c.kind, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	const mwc, apps, es = "MutatingWebhookConfiguration", "apps", "external-secrets.io"
	for _, c := range []struct {
		group, kind, path string
		replaces, outside bool
		list              int
	}{
		// Argo CD's documented example: webhooks merge by name.
		{"admissionregistration.k8s.io", mwc, ".webhooks[]?.clientConfig.caBundle", false, false, -1},
		{"admissionregistration.k8s.io", mwc, "/webhooks/0/clientConfig/caBundle", false, false, -1},
		// ... but a webhook's rules are atomic.
		{"admissionregistration.k8s.io", mwc, ".webhooks[].rules[].operations", true, false, 3},
		{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", ".webhooks[]?.clientConfig.caBundle", false, false, -1},
		// containers merge by name; args is atomic; env merges by name.
		{apps, "Deployment", ".spec.template.spec.containers[] | select(.name == \"app\") | .image", false, false, -1},
		{apps, "Deployment", "/spec/template/spec/containers/0/image", false, false, -1},
		{apps, "Deployment", "/spec/template/spec/containers/0/args/1", true, false, 6},
		{apps, "Deployment", ".spec.template.spec.containers[].env[].value", false, false, -1},
		{apps, "Deployment", "/spec/replicas", false, false, -1},
		{apps, "Deployment", ".spec.template.spec.containers", false, false, -1}, // whole list: no element reached
		// volumes merge by name, tolerations are atomic.
		{apps, "StatefulSet", ".spec.template.spec.volumes[].secret.items", false, false, -1},
		{apps, "StatefulSet", ".spec.template.spec.tolerations[0].key", true, false, 4},
		// maps are maps, also with numeric keys.
		{"", "Secret", "/data/0", false, false, -1},
		{"", "ConfigMap", ".metadata.annotations.foo", false, false, -1},
		{"", "Service", "/spec/ports/0/nodePort", false, false, -1},
		// finalizers: a set of scalars.
		{"", "Service", "/metadata/finalizers/0", false, false, -1},
		// fields the type does not have select nothing.
		{apps, "Deployment", "/spec/nosuchfield/0/x", false, true, -1},
		{"", "Secret", ".data.x.y", false, true, -1},
		{"", "ConfigMap", ".metadata[0]", false, true, -1},
		// CRDs: JSON merge patch, any list step replaces the list.
		{es, "ExternalSecret", "/spec/data/0/remoteRef", true, false, 2},
		{es, "ExternalSecret", ".spec.data[].remoteRef.conversionStrategy", true, false, 2},
		{es, "ExternalSecret", ".spec.data[] | select(.secretKey == \"x\") | .remoteRef.version", true, false, 2},
		{es, "ExternalSecret", "/spec/refreshInterval", false, false, -1},
		{es, "ExternalSecret", "/spec/data", false, false, -1},
	} {
		got := Classify(c.group, c.kind, parse(t, c.path))
		if got.Replaces != c.replaces || got.OutsideSchema != c.outside || (c.replaces && got.List != c.list) {
			t.Errorf("%s %s: got %+v, want replaces=%v outside=%v list=%d", c.kind, c.path, got, c.replaces, c.outside, c.list)
		}
	}
}

// TestStrategicAgainstApimachinery runs what Argo CD's normalizeTargetResources
// runs for a built-in kind (strategicpatch.CreateThreeWayMergePatch from the
// normalized live object to the live one, then StrategicMergePatch onto the
// normalized target) on objects where Git added a list entry, and checks that the
// entry survives exactly when Classify says the list is not replaced.
func TestStrategicAgainstApimachinery(t *testing.T) {
	type obj = map[string]any
	webhook := func(name, ca string, ops ...any) obj {
		w := obj{"name": name, "clientConfig": obj{"url": "https://" + name}, "sideEffects": "None",
			"admissionReviewVersions": []any{"v1"}, "rules": []any{obj{"operations": ops}}}
		if ca != "" {
			w["clientConfig"].(obj)["caBundle"] = ca
		}
		return w
	}
	container := func(name, image string, args ...any) obj {
		return obj{"name": name, "image": image, "args": args}
	}
	deploy := func(cs ...any) obj {
		return obj{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": obj{"name": "d"},
			"spec": obj{"template": obj{"spec": obj{"containers": cs}}}}
	}
	mwc := func(ws ...any) obj {
		return obj{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
			"metadata": obj{"name": "m"}, "webhooks": ws}
	}
	for _, c := range []struct {
		name         string
		group, kind  string
		path         string
		live, target obj
		// survives reports whether Git's addition reached the patched target.
		survives func(patched obj) bool
	}{
		{
			name: "caBundle by merge key", group: "admissionregistration.k8s.io", kind: "MutatingWebhookConfiguration",
			path: ".webhooks[]?.clientConfig.caBundle",
			live: mwc(webhook("a", "Q0E=", "CREATE")), target: mwc(webhook("a", "", "CREATE"), webhook("b", "", "CREATE")),
			survives: func(p obj) bool { return len(p["webhooks"].([]any)) == 2 },
		},
		{
			name: "an atomic list inside a merged one", group: "admissionregistration.k8s.io", kind: "MutatingWebhookConfiguration",
			path: ".webhooks[].rules[].operations",
			live: mwc(webhook("a", "", "CREATE")), target: mwc(webhook("a", "", "CREATE", "UPDATE")),
			survives: func(p obj) bool {
				w := p["webhooks"].([]any)[0].(obj)
				return len(w["rules"].([]any)[0].(obj)["operations"].([]any)) == 2
			},
		},
		{
			name: "image by merge key", group: "apps", kind: "Deployment", path: "/spec/template/spec/containers/0/image",
			live:   deploy(container("app", "app:1", "--a")),
			target: deploy(container("app", "app:2", "--a"), container("sidecar", "side:1")),
			survives: func(p obj) bool {
				return len(p["spec"].(obj)["template"].(obj)["spec"].(obj)["containers"].([]any)) == 2
			},
		},
		{
			name: "args are atomic", group: "apps", kind: "Deployment", path: "/spec/template/spec/containers/0/args/0",
			live:   deploy(container("app", "app:1", "--a")),
			target: deploy(container("app", "app:1", "--a", "--b")),
			survives: func(p obj) bool {
				c := p["spec"].(obj)["template"].(obj)["spec"].(obj)["containers"].([]any)[0].(obj)
				return slices.Contains(c["args"].([]any), any("--b"))
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.path)
			res := Classify(c.group, c.kind, p)
			if res.Patch != StrategicMerge {
				t.Fatalf("%s is not strategic", c.kind)
			}
			patched := argoPatchStrategic(t, c.group, c.kind, p, c.live, c.target)
			if got := c.survives(patched); got == res.Replaces {
				t.Fatalf("Classify says replaces=%v, but apimachinery's patch %s Git's entry:\n%v",
					res.Replaces, map[bool]string{true: "kept", false: "dropped"}[got], patched)
			}
		})
	}
}

// argoPatchStrategic mirrors normalizeTargetResources for a strategic kind, with
// the normalization reduced to deleting the path from both objects.
func argoPatchStrategic(t *testing.T, group, kind string, p ignorepath.Path, live, target map[string]any) map[string]any {
	t.Helper()
	typ := TypeFor(group, kind)
	versioned := reflect.New(typ).Interface()
	meta, err := strategicpatch.NewPatchMetaFromStruct(versioned)
	if err != nil {
		t.Fatal(err)
	}
	normLive, normTarget := deepCopy(live), deepCopy(target)
	removePath(normLive, p.Segments) // the root is a map: changed in place
	removePath(normTarget, p.Segments)
	lj, _ := json.Marshal(live)
	nlj, _ := json.Marshal(normLive)
	ntj, _ := json.Marshal(normTarget)
	patch, err := strategicpatch.CreateThreeWayMergePatch(lj, lj, nlj, meta, true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(ntj, patch, versioned)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// removePath deletes what a path of member and list steps selects (no filters)
// and returns the changed value.
func removePath(v any, segs []ignorepath.Segment) any {
	if len(segs) == 0 {
		return v
	}
	s, last := segs[0], len(segs) == 1
	switch x := v.(type) {
	case map[string]any:
		if s.Kind != ignorepath.SegField {
			return x
		}
		if _, ok := x[s.Name]; !ok {
			return x
		}
		if last {
			delete(x, s.Name)
		} else {
			x[s.Name] = removePath(x[s.Name], segs[1:])
		}
		return x
	case []any:
		out := x[:0:0]
		for i, e := range x {
			hit := (s.Kind == ignorepath.SegIndex && s.Index == i) || s.Kind == ignorepath.SegIter
			switch {
			case hit && last:
				// the element goes
			case hit:
				out = append(out, removePath(e, segs[1:]))
			default:
				out = append(out, e)
			}
		}
		return out
	}
	return v
}

func TestSchemeIsClientGo(t *testing.T) {
	// The lookup must use the same scheme Argo CD uses (client-go's).
	if TypeFor("apps", "Deployment") != reflect.TypeOf(mustNew(t, "apps", "v1", "Deployment")).Elem() {
		t.Fatal("Deployment is not apps/v1's type")
	}
}

func mustNew(t *testing.T, g, v, k string) any {
	t.Helper()
	o, err := scheme.Scheme.New(schema.GroupVersionKind{Group: g, Version: v, Kind: k})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
