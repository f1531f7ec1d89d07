package lint

import (
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/flux/build"
)

// With --flux-source a Kustomization is built with the agent's build (Flux's
// own): its ignore rules are judged against the objects it really applies
// (renamed by the path's prefix), not against the rule's target alone.
func TestFluxSourceBuild(t *testing.T) {
	ks := func(name, target string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  sourceRef: {kind: GitRepository, name: repo}
  targetNamespace: shop
  ignore:
  - paths: ["/spec/data"]
    target: {kind: ExternalSecret, name: ` + target + `}
`
	}
	// kustomize-controller matches spec.ignore targets on the object it
	// applies: the build renames db to eu-db.
	in := ks("by-applied-name", "eu-db") + "---\n" + ks("by-git-name", "db")
	src := build.FS{
		"apps/kustomization.yaml": []byte("resources: [es.yaml]\nnamePrefix: eu-\n"),
		"apps/es.yaml": []byte("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: db}\nspec:\n" +
			"  secretStoreRef: {name: s, kind: SecretStore}\n  target: {name: db}\n  data:\n  - {secretKey: A, remoteRef: {key: a}}\n"),
	}
	traps := func(r *Report) []string {
		var out []string
		for _, f := range r.Findings {
			if f.Rule == "flux_ignore_trap" {
				out = append(out, strings.Fields(f.Message)[1])
			}
		}
		return out
	}
	if got := traps(lintString(t, in, Options{FluxSource: src})); len(got) != 1 || got[0] != "flux-system/by-applied-name" {
		t.Errorf("with --flux-source: traps %v, want only flux-system/by-applied-name (the rule naming db selects nothing kustomize-controller applies)", got)
	}
	if got := traps(lintString(t, in, Options{})); len(got) != 2 {
		t.Errorf("without --flux-source: traps %v, want both (judged from the rule's target alone)", got)
	}

	// A build that fails (a remote base): judged from the spec alone, said so.
	src["apps/kustomization.yaml"] = []byte("resources: [https://example.invalid/x.yaml]\n")
	r := lintString(t, in, Options{FluxSource: src})
	said := false
	for _, a := range r.Assumptions {
		said = said || strings.Contains(a.Message, "not built from --flux-source") && strings.Contains(a.Message, "remote_base")
	}
	if !said {
		t.Errorf("no assumption says the build failed: %v", got(r))
	}
}
