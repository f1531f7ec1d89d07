package flux

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/lint"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
)

// TestFluxBehaviour records what the real kustomize-controller does when a
// commit adds a key to a Secret or an entry to an ExternalSecret's spec.data
// that it will not (or will) apply, and asserts it: these are the premises of
// driftwatch's Flux detectors. Every case is one Kustomization; each logs its
// status and the live objects' key names as `fact:` lines (values never).
//
//   - ssa: IfNotPresent on the objects in Git: created once, never patched.
//   - ssa: Ignore / reconcile: disabled in Git on an object created outside
//     Flux: never applied; on an object that does not exist: never created.
//   - reconcile: disabled set on the live object only (kubectl annotate).
//   - spec.ignore JSON pointers: the whole spec.data list, one element, a field
//     inside an element; a Secret's whole data map and one key.
//   - postBuild.substituteFrom with optional: true naming a Secret that does
//     not exist, and one that lacks the variable; a required one that is
//     missing.
func TestFluxBehaviour(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "behaviour")
	inp := `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`
	ign := `kustomize.toolkit.fluxcd.io/ssa: Ignore`
	dis := `kustomize.toolkit.fluxcd.io/reconcile: disabled`
	two := []string{"DB_USER", "DB_PASS"}
	three := []string{"DB_USER", "DB_PASS", "API_TOKEN"}
	subst := "apiVersion: v1\nkind: Secret\nmetadata: {name: %s}\nstringData:\n  DB_HOST: ${DB_HOST}\n  DB_PORT: ${DB_PORT:=5432}\n"
	files := func(second bool) map[string]string {
		es, keys := two, []string{"A"}
		if second {
			es, keys = three, []string{"A", "B"}
		}
		return map[string]string{
			"ifnotpresent/all.yaml": fakeStore("inp") + "---\n" + externalSecret("inp-es", "inp", inp, es...) + "---\n" + secret("inp-secret", inp, keys...) + "---\n" +
				// fluxcd/pkg/ssa matches its selectors on labels too, the value in any case.
				strings.Replace(secret("inp-label", "", keys...), "annotations: {}", "labels: {kustomize.toolkit.fluxcd.io/ssa: ifnotpresent}", 1),
			"ignored/all.yaml":      secret("ign-secret", ign, keys...) + "---\n" + secret("ign-new", ign, keys...) + "---\n" + secret("dis-secret", dis, keys...),
			"livedisabled/all.yaml": secret("live-disabled", "", keys...),
			"ignore/all.yaml": fakeStore("il") + "---\n" + externalSecret("il-list", "il", "", es...) + "---\n" +
				externalSecret("il-elem", "il", "", es...) + "---\n" + externalSecret("il-field", "il", "", es...) + "---\n" +
				secret("is-map", "", keys...) + "---\n" + secret("is-key", "", keys...),
			"subst-missing/s.yaml":  strings.ReplaceAll(subst, "%s", "sub-missing"),
			"subst-lacking/s.yaml":  strings.ReplaceAll(subst, "%s", "sub-lacking"),
			"subst-required/s.yaml": strings.ReplaceAll(subst, "%s", "sub-required"),
		}
	}
	rev1 := repo.Commit(t, "first", files(false))

	// Objects Flux is told to leave alone, created outside it first; the
	// Secret substituteFrom names, without the variable.
	c.Apply(t, ns, secret("ign-secret", "", "A")+"---\n"+secret("dis-secret", "", "A")+"---\n"+secret("vars", "", "OTHER"))

	ignoreRules := `  ignore:
  - paths: ["/spec/data"]
    target: {kind: ExternalSecret, name: il-list}
  - paths: ["/spec/data/0"]
    target: {kind: ExternalSecret, name: il-elem}
  - paths: ["/spec/data/0/remoteRef/conversionStrategy"]
    target: {kind: ExternalSecret, name: il-field}
  - paths: ["/data"]
    target: {kind: Secret, name: is-map}
  - paths: ["/data/A"]
    target: {kind: Secret, name: is-key}
`
	substFrom := func(name string, optional bool) string {
		return "  postBuild:\n    substituteFrom:\n    - {kind: Secret, name: " + name + ", optional: " + map[bool]string{true: "true", false: "false"}[optional] + "}\n"
	}
	ks := map[string]string{
		"ifnotpresent":   "",
		"ignored":        "",
		"livedisabled":   "",
		"ignore":         ignoreRules,
		"subst-missing":  substFrom("vars-missing", true),
		"subst-lacking":  substFrom("vars", true),
		"subst-required": substFrom("vars-required", false),
	}
	manifests := gitRepository("repo", c.Flux().HTTPURL(repo))
	for name, spec := range ks {
		manifests += "---\n" + kustomization(name, "repo", name, ns, spec)
	}
	c.Apply(t, ns, manifests)

	applied := func(rev string, names ...string) {
		t.Helper()
		for _, n := range names {
			c.Flux().WaitKustomizationApplied(t, ns, n, rev, waitFlux)
		}
	}
	all := []string{"ifnotpresent", "ignored", "livedisabled", "ignore", "subst-missing"}
	applied(rev1, all...)
	waitFor(t, waitFlux, "ESO writes inp-es and il-*", func() (bool, string) {
		for _, n := range []string{"inp-es", "il-list", "il-elem", "il-field"} {
			if !slices.Equal(secretKeyNames(t, c, ns, n), []string{"DB_PASS", "DB_USER"}) {
				return false, n + ": " + secretShape(t, c, ns, n)
			}
		}
		return true, ""
	})
	// A required substituteFrom Secret that is missing fails the build; so
	// does, with strict substitution (kustomize-controller's default from
	// v1.9), a variable missing while another one is defined.
	for _, n := range []string{"subst-required", "subst-lacking"} {
		waitFor(t, waitFlux, n+" fails", func() (bool, string) {
			s := getKS(t, c, ns, n)
			return s.Ready == "False" && s.LastApplied == "", s.String()
		})
	}
	for _, n := range append(all, "subst-required", "subst-lacking") {
		t.Logf("fact: rev1 Kustomization %s: %s", n, getKS(t, c, ns, n))
	}
	if got := secretShape(t, c, ns, "ign-new"); got != "absent" {
		t.Errorf("ign-new (ssa: Ignore, not in the cluster): want never created, got %s", got)
	}
	// Live annotation only: kubectl annotate, as users freeze an object.
	if out, err := c.Kubectl(ctxT(t), "", "-n", ns, "annotate", "secret", "live-disabled", "kustomize.toolkit.fluxcd.io/reconcile=disabled"); err != nil {
		t.Fatalf("kubectl annotate: %v\n%s", err, out)
	}

	rev2 := repo.Commit(t, "second: a key and an entry more", files(true))
	c.Flux().Reconcile(t, gitops.GitRepositoryGVR, ns, "repo")
	applied(rev2, all...)
	time.Sleep(3 * time.Second) // ESO reacts to the ExternalSecrets that changed

	for _, n := range all {
		t.Logf("fact: rev2 Kustomization %s: %s", n, getKS(t, c, ns, n))
	}
	for _, n := range []string{"inp-secret", "inp-label", "ign-secret", "ign-new", "dis-secret", "live-disabled", "is-map", "is-key", "sub-missing", "sub-lacking", "inp-es", "il-list", "il-elem", "il-field"} {
		t.Logf("fact: rev2 Secret %s: %s", n, secretShape(t, c, ns, n))
	}
	for _, n := range []string{"inp-es", "il-list", "il-elem", "il-field"} {
		t.Logf("fact: rev2 ExternalSecret %s spec.data: %v", n, esEntries(t, c, ns, n))
	}

	// What kustomize-controller did, checked.
	wantSecret := map[string][]string{
		"inp-secret":    {"A"},      // IfNotPresent: never patched
		"inp-label":     {"A"},      // the same, as a label, lower case
		"ign-secret":    {"A"},      // ssa: Ignore: never applied
		"dis-secret":    {"A"},      // reconcile: disabled in Git
		"live-disabled": {"A"},      // reconcile: disabled on the live object
		"is-map":        {"A"},      // ignore /data: no drift outside it, no apply
		"is-key":        {"A", "B"}, // ignore /data/A: /data/B is drift, applied
	}
	for n, want := range wantSecret {
		if got := secretKeyNames(t, c, ns, n); !slices.Equal(got, want) {
			t.Errorf("Secret %s: keys %v, want %v", n, got, want)
		}
	}
	wantES := map[string][]string{
		"inp-es":   two,   // IfNotPresent
		"il-list":  two,   // ignore /spec/data: the new entry never ships
		"il-elem":  three, // ignore /spec/data/0: element 0 unchanged, the list ships
		"il-field": three, // a defaulted field inside element 0: ships
	}
	for n, want := range wantES {
		if got := esEntries(t, c, ns, n); !slices.Equal(got, want) {
			t.Errorf("ExternalSecret %s: spec.data %v, want %v", n, got, want)
		}
	}
	// agent lint over the second commit's files flags exactly the objects in
	// Git that kustomize-controller left behind by their own metadata (not
	// live-disabled: its annotation is on the live object only, which a
	// rendering cannot show; not is-map and il-list: their trap is the
	// Kustomization's spec.ignore, flux_ignore_trap).
	var rendered strings.Builder
	for _, dir := range []string{"ifnotpresent", "ignored", "livedisabled", "ignore"} {
		rendered.WriteString(files(true)[dir+"/all.yaml"] + "---\n")
	}
	docs, probs := lint.ParseStream("rev2.yaml", []byte(rendered.String()))
	report := lint.Evaluate(&lint.Input{Docs: docs, Problems: probs, Files: 1}, lint.Options{Namespace: ns})
	var flagged []string
	for _, f := range report.Findings {
		if f.Rule == "flux_never_updated" {
			flagged = append(flagged, f.Object.Kind+"/"+f.Object.Name+" "+f.Labels["reason"])
			t.Logf("fact: agent lint: %s", f.Message)
		}
	}
	slices.Sort(flagged)
	if want := []string{"ExternalSecret/inp-es ssa_if_not_present", "Secret/dis-secret reconcile_disabled", "Secret/ign-new ssa_ignore",
		"Secret/ign-secret ssa_ignore", "Secret/inp-label ssa_if_not_present", "Secret/inp-secret ssa_if_not_present"}; !slices.Equal(flagged, want) {
		t.Errorf("agent lint flux_never_updated on rev2's files: %q, want %q", flagged, want)
	}

	// The optional substituteFrom Secret is missing and no other variable is
	// defined: substitution does not run (substituteStrategy WithVariables),
	// ${DB_HOST} and ${DB_PORT:=5432} ship as text, Ready=True.
	if got := secretShape(t, c, ns, "sub-missing"); got != "DB_HOST(10 bytes), DB_PORT(16 bytes)" {
		t.Errorf("Secret sub-missing: %s, want the literal ${DB_HOST} (10 bytes) and ${DB_PORT:=5432} (16 bytes)", got)
	}
	if got := secretShape(t, c, ns, "sub-lacking"); got != "absent" {
		t.Errorf("Secret sub-lacking: %s, want never applied", got)
	}
}
