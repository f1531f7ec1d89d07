package flux

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// The Flux failures end to end on the real kustomize-controller: a commit adds
// a key or an entry, the Kustomization reports the new revision applied, the
// entry never ships; driftwatch pages (through the real Prometheus and
// Alertmanager) naming the object, the Kustomization and the cause; the fix
// resolves the page. Flux's look-alikes stay quiet throughout.
//
//   - never-updated: a Secret with kustomize.toolkit.fluxcd.io/ssa: IfNotPresent;
//   - ignore trap: an ExternalSecret under spec.ignore /spec/data;
//   - unresolved variable: postBuild.substituteFrom an optional Secret that does
//     not exist, ${DB_HOST} without a default (a warning);
//   - look-alikes: an IfNotPresent Secret Git never changed, a suspended
//     Kustomization behind a commit, a Kustomization whose source is not ready,
//     the same ExternalSecret under a spec.ignore of one element.
func TestFluxFailuresPageAndResolve(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "failures")
	inp := `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`
	two := []string{"DB_USER", "DB_PASS"}
	three := []string{"DB_USER", "DB_PASS", "API_TOKEN"}
	files := func(second bool) map[string]string {
		es, keys := two, []string{"A"}
		if second {
			es, keys = three, []string{"A", "B"}
		}
		return map[string]string{
			"never/s.yaml":     secret("frozen", inp, keys...),
			"quiet/s.yaml":     secret("created-once", inp, "A"),
			"trap/all.yaml":    fakeStore("trap") + "---\n" + externalSecret("trapped", "trap", "", es...),
			"element/all.yaml": fakeStore("elem") + "---\n" + externalSecret("element", "elem", "", es...),
			"paused/s.yaml":    secret("paused", "", keys...),
			"subst/s.yaml":     "apiVersion: v1\nkind: Secret\nmetadata: {name: substituted}\nstringData:\n  DB_HOST: ${DB_HOST}\n",
		}
	}
	rev1 := repo.Commit(t, "first", files(false))
	ks := map[string]string{
		"never":   "",
		"quiet":   "",
		"trap":    "  ignore:\n  - paths: [/spec/data]\n    target: {kind: ExternalSecret, name: trapped}\n",
		"element": "  ignore:\n  - paths: [/spec/data/0]\n    target: {kind: ExternalSecret}\n",
		"paused":  "",
		"subst":   "  postBuild:\n    substituteFrom:\n    - {kind: Secret, name: subst-vars, optional: true}\n",
	}
	manifests := gitRepository("repo", c.Flux().HTTPURL(repo)) + "---\n" + gitRepository("gone", c.Flux().GitServerURL()+"/no-such-repository")
	for name, spec := range ks {
		manifests += "---\n" + kustomization(name, "repo", name, ns, spec)
	}
	// A Kustomization whose source never becomes ready (the repository does not exist).
	manifests += "---\n" + kustomization("unready", "gone", "never", ns, "")
	c.Apply(t, ns, manifests)
	for name := range ks {
		c.Flux().WaitKustomizationApplied(t, ns, name, rev1, waitFlux)
	}
	waitFor(t, waitFlux, "ESO writes trapped and element", func() (bool, string) {
		for _, n := range []string{"trapped", "element"} {
			if !slices.Equal(secretKeyNames(t, c, ns, n), []string{"DB_PASS", "DB_USER"}) {
				return false, n + ": " + secretShape(t, c, ns, n)
			}
		}
		return true, ""
	})
	mergePatchKS(t, c, ns, "paused", `{"spec":{"suspend":true}}`)

	agent := c.StartAgent(t, "--namespaces", ns, "--flux-poll-interval", "2s")
	agent.WaitReady(t, waitAgent)
	hook := promstack.NewWebhook(t)
	ps := promstack.Start(t, c, agent.Addr, hook)

	rev2 := repo.Commit(t, "second: a key and an entry more", files(true))
	c.Flux().Reconcile(t, gitops.GitRepositoryGVR, ns, "repo")
	for _, name := range []string{"never", "quiet", "trap", "element", "subst"} {
		c.Flux().WaitKustomizationApplied(t, ns, name, rev2, waitFlux)
		t.Logf("fact: Kustomization %s after the commit: %s", name, getKS(t, c, ns, name))
	}
	t.Logf("fact: suspended Kustomization: %s", getKS(t, c, ns, "paused"))
	t.Logf("fact: Kustomization without a ready source: %s", getKS(t, c, ns, "unready"))
	// What Flux did: the key and the entry never shipped, the element rule did not block.
	if got := secretKeyNames(t, c, ns, "frozen"); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("frozen (IfNotPresent): keys %v, want [A]", got)
	}
	if got := esEntries(t, c, ns, "trapped"); !slices.Equal(got, two) {
		t.Fatalf("trapped (ignore /spec/data): spec.data %v, want %v", got, two)
	}
	if got := esEntries(t, c, ns, "element"); !slices.Equal(got, three) {
		t.Fatalf("element (ignore /spec/data/0): spec.data %v, want %v", got, three)
	}
	t.Logf("fact: substituted: %s", secretShape(t, c, ns, "substituted"))

	// driftwatch: the findings, on /metrics.
	agent.WaitForSeries(t, "driftwatch_flux_never_updated", map[string]string{"namespace": ns, "kind": "Secret", "name": "frozen",
		"kustomization": "never", "reason": "ssa_if_not_present", "set_in": "git"}, waitAgent)
	agent.WaitForSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "frozen", "key": "B", "source": "flux"}, waitAgent)
	agent.WaitForSeries(t, "driftwatch_flux_ignore_trap", map[string]string{"namespace": ns, "kustomization": "trap", "kind": "ExternalSecret",
		"path": "/spec/data", "biting": "true"}, waitAgent)
	agent.WaitForSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "trapped", "key": "API_TOKEN", "source": "flux"}, waitAgent)
	agent.WaitForSeries(t, "driftwatch_flux_substitute_missing", map[string]string{"namespace": ns, "kustomization": "subst", "name": "subst-vars",
		"variable": "DB_HOST", "reason": "absent"}, waitAgent)
	all, err := agent.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if strings.HasPrefix(s.Name, "driftwatch_flux_") || (s.Name == "driftwatch_secret_missing_key" && s.Labels["source"] == "flux") {
			t.Logf("series: %s", s)
		}
	}
	// The look-alikes: nothing about them.
	// The Kustomization whose source never served an artifact expects
	// nothing and says so (health, not a finding).
	agent.WaitForSeries(t, "driftwatch_flux_kustomization_unjudged", map[string]string{"namespace": ns, "kustomization": "unready", "reason": "no_artifact"}, waitAgent)
	health := func(name string) bool {
		return strings.HasPrefix(name, "driftwatch_flux_artifact") || strings.HasPrefix(name, "driftwatch_flux_kustomization") ||
			name == "driftwatch_flux_undetermined_objects"
	}
	for _, quiet := range []map[string]string{
		{"name": "created-once"}, {"secret": "created-once"}, {"name": "paused"}, {"secret": "paused"},
		{"name": "element"}, {"secret": "element"}, {"kustomization": "element"}, {"kustomization": "unready"},
		{"kustomization": "paused"}, {"kustomization": "quiet"},
	} {
		for _, s := range all {
			match := strings.HasPrefix(s.Name, "driftwatch_flux_") && !health(s.Name) || s.Name == "driftwatch_secret_missing_key" || s.Name == "driftwatch_secret_absent"
			for k, v := range quiet {
				if s.Labels[k] != v {
					match = false
				}
			}
			if match {
				t.Errorf("look-alike reported: %s", s)
			}
		}
	}

	// The pages arrive.
	page := func(alert, label, value string) func(promstack.Message, promstack.Alert) bool {
		return func(m promstack.Message, a promstack.Alert) bool {
			return a.Labels["alertname"] == alert && a.Labels[label] == value && a.Labels["namespace"] == ns && a.Status == "firing"
		}
	}
	_, never := ps.WaitHook(t, hook, 0, 3*time.Minute, "the never-updated page", page("DriftwatchFluxNeverUpdated", "name", "frozen"))
	_, trap := ps.WaitHook(t, hook, 0, 3*time.Minute, "the ignore-trap page", page("DriftwatchFluxIgnoreTrap", "kustomization", "trap"))
	_, subst := ps.WaitHook(t, hook, 0, 3*time.Minute, "the substitution warning", page("DriftwatchFluxSubstituteMissing", "kustomization", "subst"))
	for _, a := range []promstack.Alert{never, trap, subst} {
		t.Logf("alert: %s %v: %s", a.Labels["alertname"], a.Labels["severity"], a.Annotations["description"])
	}
	if never.Labels["severity"] != "critical" || trap.Labels["severity"] != "critical" || subst.Labels["severity"] != "warning" {
		t.Errorf("severities: never-updated %s, trap %s, substitution %s", never.Labels["severity"], trap.Labels["severity"], subst.Labels["severity"])
	}
	if !strings.Contains(never.Annotations["description"], "Kustomization "+ns+"/never") {
		t.Errorf("the never-updated page does not name the Kustomization: %q", never.Annotations["description"])
	}

	// The fixes: drop IfNotPresent in Git, narrow the ignore rule, create the
	// variables' Secret.
	mark := hook.Count()
	fixed := files(true)
	fixed["never/s.yaml"] = secret("frozen", "", "A", "B")
	rev3 := repo.Commit(t, "fix: let Flux update frozen", fixed)
	mergePatchKS(t, c, ns, "trap", `{"spec":{"ignore":[{"paths":["/spec/data/0/remoteRef/version"],"target":{"kind":"ExternalSecret","name":"trapped"}}]}}`)
	c.Apply(t, ns, secret("subst-vars", "", "DB_HOST"))
	c.Flux().Reconcile(t, gitops.GitRepositoryGVR, ns, "repo")
	c.Flux().Reconcile(t, gitops.KustomizationGVR, ns, "subst")
	for _, name := range []string{"never", "trap", "subst"} {
		c.Flux().WaitKustomizationApplied(t, ns, name, rev3, waitFlux)
	}
	waitFor(t, waitFlux, "frozen gets B, trapped gets API_TOKEN", func() (bool, string) {
		a, b := secretKeyNames(t, c, ns, "frozen"), esEntries(t, c, ns, "trapped")
		return slices.Equal(a, []string{"A", "B"}) && slices.Equal(b, three), fmt.Sprint(a, b)
	})
	resolved := func(alert, label, value string) func(promstack.Message, promstack.Alert) bool {
		return func(m promstack.Message, a promstack.Alert) bool {
			return a.Labels["alertname"] == alert && a.Labels[label] == value && a.Labels["namespace"] == ns && a.Status == "resolved"
		}
	}
	ps.WaitHook(t, hook, mark, 3*time.Minute, "the never-updated page resolved", resolved("DriftwatchFluxNeverUpdated", "name", "frozen"))
	ps.WaitHook(t, hook, mark, 3*time.Minute, "the ignore-trap page resolved", resolved("DriftwatchFluxIgnoreTrap", "kustomization", "trap"))
	ps.WaitHook(t, hook, mark, 3*time.Minute, "the substitution warning resolved", resolved("DriftwatchFluxSubstituteMissing", "kustomization", "subst"))
	// No Flux or missing-key notification ever named a look-alike.
	for _, n := range []string{"created-once", "paused", "element", "unready", "quiet"} {
		if _, a, ok := hook.Find(0, func(m promstack.Message, a promstack.Alert) bool {
			name := a.Labels["alertname"]
			if !strings.HasPrefix(name, "DriftwatchFlux") && !strings.HasPrefix(name, "DriftwatchGitOps") &&
				!strings.HasPrefix(name, "DriftwatchSecretMissing") && !strings.HasPrefix(name, "DriftwatchSecretAbsent") {
				return false
			}
			for _, v := range a.Labels {
				if v == n {
					return true
				}
			}
			return false
		}); ok {
			t.Errorf("a notification names the look-alike %s: %v", n, a.Labels)
		}
	}
}

// mergePatchKS patches a Kustomization with a JSON merge patch.
func mergePatchKS(t *testing.T, c *cluster.Cluster, ns, name, patch string) {
	t.Helper()
	if _, err := c.Dynamic.Resource(gitops.KustomizationGVR).Namespace(ns).Patch(ctxT(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch Kustomization %s: %v", name, err)
	}
}
