package build

import (
	"fmt"
	"strings"
	"testing"
)

// benchFiles is a middling application repository: a base of 40 Secrets,
// 20 ExternalSecrets and 40 ConfigMaps under a kustomization with a prefix,
// an overlay with a patch file and a secretGenerator.
func benchFiles() FS {
	var base strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&base, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s%d\n  labels: {app: a%d}\nstringData:\n  A: a\n  B: b\n  C: c\n---\n", i, i)
		fmt.Fprintf(&base, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\ndata:\n  x: \"%s\"\n---\n", i, strings.Repeat("y", 200))
	}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&base, "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: e%d\nspec:\n  secretStoreRef: {name: st, kind: SecretStore}\n"+
			"  target: {name: t%d}\n  data:\n  - {secretKey: U, remoteRef: {key: u}}\n  - {secretKey: P, remoteRef: {key: p}}\n---\n", i, i)
	}
	return FS{
		"apps/base/kustomization.yaml":     []byte("resources: [all.yaml]\nnamePrefix: base-\n"),
		"apps/base/all.yaml":               []byte(base.String()),
		"apps/prod/kustomization.yaml":     []byte("resources: [../base]\npatches:\n- path: p.yaml\nsecretGenerator:\n- name: gen\n  literals: [K=v]\n"),
		"apps/prod/p.yaml":                 []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s1}\nstringData: {D: d}\n"),
		"clusters/prod/kustomization.yaml": []byte("resources: [../../apps/prod]\n"),
	}
}

// BenchmarkBuild: one Kustomization's build (Flux's generator, kustomize,
// postBuild, the value-free reduction) of benchFiles' 101 objects.
func BenchmarkBuild(b *testing.B) {
	fs := benchFiles()
	ks := map[string]any{"spec": map[string]any{"path": "./clusters/prod", "targetNamespace": "prod",
		"postBuild": map[string]any{"substitute": map[string]any{"ENV": "prod"}}}}
	b.ReportAllocs()
	for b.Loop() {
		r, err := Build(ks, fs)
		if err != nil || len(r.Objects) != 61 {
			b.Fatalf("%v: %d objects", err, len(r.Objects))
		}
	}
}
