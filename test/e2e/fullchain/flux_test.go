package fullchain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
)

// fluxScenario has the real Flux (source-controller and kustomize-controller
// v1.9.6, from a Git repository the stack serves) apply three Kustomizations
// into ns, then a second commit that never ships where it should not:
//
//   - never: Secret frozen carries kustomize.toolkit.fluxcd.io/ssa: IfNotPresent;
//     the commit adds key B (driftwatch_flux_never_updated);
//   - trap: ExternalSecret trapped under spec.ignore /spec/data; the commit adds
//     the entry API_TOKEN (driftwatch_flux_ignore_trap, biting);
//   - subst: ${SMTP_HOST} without a default, substituteFrom an optional Secret
//     that does not exist (driftwatch_flux_substitute_missing).
//
// It returns when every Kustomization reports the second commit applied.
func fluxScenario(t *testing.T, c *cluster.Cluster, ns string) {
	t.Helper()
	const wait = 2 * time.Minute
	repo := c.NewGitRepo(t, "fullchain")
	es := func(keys ...string) string {
		var b strings.Builder
		b.WriteString(fakeStore("flux-store", "db-user", "app", "db-pass", "e2e-flux-db-pass", "api-token", "e2e-flux-api-token"))
		b.WriteString("---\napiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: trapped}\nspec:\n" +
			"  refreshInterval: 10s\n  secretStoreRef: {name: flux-store, kind: SecretStore}\n  target: {name: trapped}\n  data:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  - {secretKey: %s, remoteRef: {key: %s}}\n", k, strings.ReplaceAll(strings.ToLower(k), "_", "-"))
		}
		return b.String()
	}
	files := func(second bool) map[string]string {
		frozen := "apiVersion: v1\nkind: Secret\nmetadata: {name: frozen, annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}}\nstringData:\n  A: frozen-a\n"
		entries := []string{"DB_USER", "DB_PASS"}
		if second {
			frozen += "  B: frozen-b\n"
			entries = append(entries, "API_TOKEN")
		}
		return map[string]string{
			"never/s.yaml":  frozen,
			"trap/all.yaml": es(entries...),
			"subst/s.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: notify-config}\nstringData:\n  SMTP_HOST: ${SMTP_HOST}\n",
		}
	}
	rev1 := repo.Commit(t, "first", files(false))
	ks := map[string]string{
		"never": "",
		"trap":  "  ignore:\n  - paths: [/spec/data]\n    target: {kind: ExternalSecret, name: trapped}\n",
		"subst": "  postBuild:\n    substituteFrom:\n    - {kind: Secret, name: subst-vars, optional: true}\n",
	}
	manifests := gitops.GitRepositoryYAML("repo", c.Flux().HTTPURL(repo))
	for name, spec := range ks {
		manifests += "---\n" + gitops.KustomizationYAML(name, "repo", name, ns, spec)
	}
	c.Apply(t, ns, manifests)
	for name := range ks {
		c.Flux().WaitKustomizationApplied(t, ns, name, rev1, wait)
	}
	rev2 := repo.Commit(t, "second: a key and an entry more", files(true))
	c.Flux().Reconcile(t, gitops.GitRepositoryGVR, ns, "repo")
	for name := range ks {
		c.Flux().WaitKustomizationApplied(t, ns, name, rev2, wait)
	}
}
