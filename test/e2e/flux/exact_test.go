package flux

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/build"
	"github.com/driftwatch/driftwatch/internal/flux/desired"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// layout is one Kustomization of the exactness test: the files it reads
// (paths relative to the repository root) and what its spec adds.
type layout struct {
	name string
	// source: GitRepository (default) or ExternalArtifact.
	source string
	path   string
	spec   string // more spec lines, indented two spaces
	files  map[string]string
	// undetermined: objects (kind/name as applied) driftwatch must report
	// undetermined instead of guessing.
	undetermined []string
}

func es(name, target string, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: %s\nspec:\n  refreshInterval: 1h\n"+
		"  secretStoreRef: {name: exact-store, kind: SecretStore}\n  target: {name: %s, creationPolicy: Owner}\n  data:\n", name, target)
	for _, k := range keys {
		fmt.Fprintf(&b, "  - secretKey: %s\n    remoteRef: {key: db-pass}\n", k)
	}
	return b.String()
}

func sec(name string, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\nstringData:\n", name)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %q\n", k, "v-"+strings.ToLower(k))
	}
	return b.String()
}

func inline(s string) string { // a YAML block for `patch: |`, indented 6
	return "      " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n      ") + "\n"
}

// exactLayouts are the layouts of issue 30's "Why": each a shape the reduced
// builder got wrong, and two public example repositories rebuilt from their
// structure (fluxcd/flux2-kustomize-helm-example, fluxcd/flux2-multi-tenancy)
// with Secrets and ExternalSecrets added.
func exactLayouts(t *testing.T, sops *sopsKeys) []layout {
	L := []layout{
		{name: "prefix-overlay", path: "prefix-overlay/overlay", files: map[string]string{
			"prefix-overlay/base/kustomization.yaml": "resources: [secret.yaml, es.yaml]\nnamePrefix: base-\n",
			"prefix-overlay/base/secret.yaml":        sec("db", "A"),
			"prefix-overlay/base/es.yaml":            es("app", "po-creds", "DB_USER"),
			// the overlay's patch names the base object by its name before the prefix
			"prefix-overlay/overlay/kustomization.yaml": "resources: [../base]\nnameSuffix: -o\npatches:\n- path: patch.yaml\n",
			"prefix-overlay/overlay/patch.yaml":         sec("db", "B"),
		}},
		{name: "spec-patches", path: "spec-patches", files: map[string]string{
			"spec-patches/kustomization.yaml": "resources: [secret.yaml]\nnamePrefix: file-\n",
			"spec-patches/secret.yaml":        sec("db", "A"),
		}, spec: "  patches:\n  - patch: |\n" + inline(sec("db", "C")) +
			// and one by target, naming the object as the patches see it (before the prefix)
			"  - target: {kind: Secret, name: db}\n    patch: |\n" + inline("- op: add\n  path: /stringData/D\n  value: d")},
		{name: "multidoc-patch", path: "multidoc-patch/overlay", files: map[string]string{
			"multidoc-patch/base/kustomization.yaml":    "resources: [all.yaml]\n",
			"multidoc-patch/base/all.yaml":              sec("db", "A") + "---\n" + es("app", "md-creds", "DB_USER"),
			"multidoc-patch/overlay/kustomization.yaml": "resources: [../base]\npatches:\n- path: patches.yaml\n",
			// every document applies; a strategic merge patch of a custom resource replaces its list
			"multidoc-patch/overlay/patches.yaml": sec("db", "B") + "---\n" + es("app", "md-creds", "DB_PASS", "API_TOKEN"),
		}},
		{name: "multidoc-spec-patch", path: "multidoc-spec-patch", files: map[string]string{
			"multidoc-spec-patch/all.yaml": sec("db", "A") + "---\n" + sec("cache", "A"),
		}, spec: "  patches:\n  - patch: |\n" + inline(sec("db", "B")+"---\n"+sec("cache", "C"))},
		{name: "json6902", path: "json6902/overlay", files: map[string]string{
			"json6902/base/kustomization.yaml":    "resources: [secret.yaml]\nnamePrefix: base-\n",
			"json6902/base/secret.yaml":           sec("db", "A"),
			"json6902/overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: o-\npatchesJson6902:\n- target: {version: v1, kind: Secret, name: o-base-db}\n  path: add.yaml\n",
			"json6902/overlay/add.yaml":           "- op: add\n  path: /stringData/F\n  value: f\n",
		}},
		{name: "postbuild", path: "postbuild", files: map[string]string{
			"postbuild/s.yaml":  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-${ENV}\nstringData:\n  ${ENV}_password: x\n  host: ${DB_HOST:=db}\n",
			"postbuild/es.yaml": "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: api-${ENV}\nspec:\n  secretStoreRef: {name: exact-store, kind: SecretStore}\n  target:\n    name: ${TARGET}\n  data:\n  - secretKey: ${ENV}_TOKEN\n    remoteRef: {key: api-token}\n",
		}, spec: "  postBuild:\n    substitute: {ENV: prod, TARGET: pb-creds}\n"},
		{name: "postbuild-from", path: "postbuild-from", files: map[string]string{
			"postbuild-from/s.yaml":     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regional\nstringData:\n  ${REGION}_token: x\n",
			"postbuild-from/value.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: valued\nstringData:\n  region: ${REGION}\n",
		}, spec: "  postBuild:\n    substitute: {UNUSED: x}\n    substituteFrom:\n    - {kind: Secret, name: exact-vars}\n",
			undetermined: []string{"Secret/regional"}},
		{name: "spec-nameprefix", path: "spec-nameprefix", files: map[string]string{
			"spec-nameprefix/kustomization.yaml": "resources: [s.yaml, es.yaml]\nnamePrefix: file-\nnameSuffix: -file\n",
			"spec-nameprefix/s.yaml":             sec("db", "A"),
			"spec-nameprefix/es.yaml":            es("app", "np-creds", "DB_USER"),
		}, spec: "  namePrefix: eu-\n  nameSuffix: -v2\n"},
		{name: "components", path: "components/app", files: map[string]string{
			"components/app/kustomization.yaml": "resources: [s.yaml]\ncomponents: [../comp]\n",
			"components/app/s.yaml":             sec("db", "A"),
			"components/comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- patch: |\n" +
				"    apiVersion: v1\n    kind: Secret\n    metadata: {name: db}\n    stringData: {B: b}\n",
			"components/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [e.yaml]\n",
			"components/extra/e.yaml":             sec("extra", "C"),
		}, spec: "  components: [../extra]\n"},
		{name: "secretgen", path: "secretgen", files: map[string]string{
			"secretgen/kustomization.yaml": "secretGenerator:\n- name: hashed\n  literals: [A=a]\n- name: plain\n  envs: [x.env]\n  options: {disableNameSuffixHash: true}\n" +
				"generatorOptions:\n  labels: {generated: \"yes\"}\n",
			"secretgen/x.env": "B=b\nC=c\n",
		}},
		{name: "list", path: "list", files: map[string]string{
			"list/all.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: one}\n  stringData: {A: a}\n" +
				"- apiVersion: external-secrets.io/v1\n  kind: ExternalSecret\n  metadata: {name: two}\n  spec:\n    secretStoreRef: {name: exact-store, kind: SecretStore}\n" +
				"    target: {name: list-creds}\n    data:\n    - {secretKey: DB_USER, remoteRef: {key: db-user}}\n",
		}},
	}
	if sops != nil {
		L = append(L, sops.layout(t))
	}
	return append(L, helmExampleLayouts()...)
}

// helmExampleLayouts rebuild fluxcd/flux2-kustomize-helm-example's structure
// (apps/base, apps/production with a values patch, infrastructure/controllers
// and infrastructure/configs), where three of the four Kustomizations read an
// ExternalArtifact (an ArtifactGenerator's, here written by the test), and
// fluxcd/flux2-multi-tenancy's (tenants/base/dev-team, tenants/production
// with its patch), with Secrets and ExternalSecrets added.
func helmExampleLayouts() []layout {
	suspendedRelease := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\nspec:\n  suspend: true\n  interval: 50m\n" +
		"  chart:\n    spec:\n      chart: podinfo\n      sourceRef: {kind: HelmRepository, name: podinfo}\n  values:\n    redis: {enabled: true}\n"
	return []layout{
		{name: "helm-example-apps", source: "ExternalArtifact", path: "helm-example/apps/production", files: map[string]string{
			"helm-example/apps/base/podinfo/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - release.yaml\n  - secret.yaml\n  - externalsecret.yaml\n",
			"helm-example/apps/base/podinfo/release.yaml":        suspendedRelease,
			"helm-example/apps/base/podinfo/secret.yaml":         sec("podinfo-auth", "username"),
			"helm-example/apps/base/podinfo/externalsecret.yaml": es("podinfo-redis", "podinfo-redis", "password"),
			"helm-example/apps/production/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - ../base/podinfo\npatches:\n  - path: podinfo-values.yaml\n    target:\n      kind: HelmRelease\n  - path: podinfo-auth.yaml\n",
			"helm-example/apps/production/podinfo-values.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n" +
				"spec:\n  values:\n    ingress: {enabled: true}\n",
			"helm-example/apps/production/podinfo-auth.yaml": sec("podinfo-auth", "password"),
		}},
		{name: "helm-example-infra-controllers", source: "ExternalArtifact", path: "helm-example/infrastructure/controllers", files: map[string]string{
			"helm-example/infrastructure/controllers/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - cert-manager.yaml\n",
			"helm-example/infrastructure/controllers/cert-manager.yaml": strings.ReplaceAll(suspendedRelease, "podinfo", "cert-manager") + "---\n" +
				sec("cert-manager-webhook-token", "token"),
		}},
		{name: "helm-example-infra-configs", source: "ExternalArtifact", path: "helm-example/infrastructure/configs", files: map[string]string{
			"helm-example/infrastructure/configs/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - cluster-issuers.yaml\n",
			"helm-example/infrastructure/configs/cluster-issuers.yaml": es("letsencrypt-account", "letsencrypt-account-key", "tls.key"),
		}},
		{name: "multi-tenancy", path: "multi-tenancy/tenants/production", files: map[string]string{
			"multi-tenancy/tenants/base/dev-team/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - rbac.yaml\n  - sync.yaml\n",
			"multi-tenancy/tenants/base/dev-team/rbac.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: dev-team\n---\n" +
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: dev-team-reconciler\nroleRef:\n" +
				"  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n- kind: ServiceAccount\n  name: dev-team\n",
			// the tenant's sync, with its Git credentials (a Secret) and a token from the store
			"multi-tenancy/tenants/base/dev-team/sync.yaml": sec("dev-team-git", "username", "password") + "---\n" + es("dev-team-token", "dev-team-token", "token"),
			"multi-tenancy/tenants/production/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources:\n  - ../base/dev-team\npatches:\n  - path: dev-team-patch.yaml\n",
			"multi-tenancy/tenants/production/dev-team-patch.yaml": sec("dev-team-git", "identity"),
		}},
	}
}

// liveObject is a Secret's data keys or an ExternalSecret's spec.data
// secretKeys, as the cluster holds them.
func liveKeys(t *testing.T, c *cluster.Cluster, kind, ns, name string) ([]string, bool) {
	t.Helper()
	switch kind {
	case "Secret":
		s, err := c.Client.CoreV1().Secrets(ns).Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		var keys []string
		for k := range s.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys, true
	case "ExternalSecret":
		if _, err := c.Dynamic.Resource(esGVR).Namespace(ns).Get(ctxT(t), name, metav1.GetOptions{}); err != nil {
			return nil, false
		}
		keys := esEntries(t, c, ns, name)
		sort.Strings(keys)
		return keys, true
	}
	return nil, false
}

// TestFluxBuildExactness applies one repository through the real
// kustomize-controller and through driftwatch's build (internal/desired.Build
// on the artifact source-controller serves, with each Kustomization as the
// apiserver returns it: what the agent does), and compares, object by object,
// the kind, namespace and name of every Secret and ExternalSecret, with a
// Secret's data keys and an ExternalSecret's spec.data secretKeys. Zero
// differences; an object driftwatch cannot determine is reported undetermined
// (and counted by the agent), never guessed. Then the agent runs on the same
// cluster: every layout is judged (nothing unjudged) and quiet.
func TestFluxBuildExactness(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "exact")
	layouts := exactLayouts(t, newSOPSKeys(t))
	files := map[string]string{}
	for _, l := range layouts {
		for p, b := range l.files {
			files[p] = b
		}
	}
	rev := repo.Commit(t, "the layouts", files)

	// The store every ExternalSecret reads (ESO writes their targets), and
	// the variables of postBuild-from (a Secret driftwatch never reads the
	// values of).
	c.Apply(t, ns, strings.Replace(fakeStore("exact-store"), "      - {key: api-token, value: e2e-api-token}\n",
		"      - {key: api-token, value: e2e-api-token}\n      - {key: db-user, value: u}\n", 1)+"---\n"+
		"apiVersion: v1\nkind: Secret\nmetadata: {name: exact-vars}\nstringData: {REGION: eu}\n")
	for _, l := range layouts {
		if l.name == "sops" {
			c.Apply(t, ns, gitops.SOPSDecryptionSecretYAML("sops-age", newSOPSKeysOnce.identity))
		}
	}
	c.Apply(t, ns, gitRepository("exact", c.Flux().HTTPURL(repo)))
	waitFor(t, waitFlux, "source-controller serves the layouts", func() (bool, string) {
		_, _, _, obj, err := c.Flux().Condition(ctxT(t), gitops.GitRepositoryGVR, ns, "exact", "Ready")
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision")
		return strings.HasSuffix(r, rev), r
	})
	_, _, _, gitObj, err := c.Flux().Condition(ctxT(t), gitops.GitRepositoryGVR, ns, "exact", "Ready")
	if err != nil {
		t.Fatal(err)
	}
	art, _, _ := unstructured.NestedMap(gitObj.Object, "status", "artifact")
	// The ExternalArtifacts an ArtifactGenerator would produce: here they
	// serve the whole artifact (the Kustomizations' paths select the folder).
	for _, l := range layouts {
		if l.source == "ExternalArtifact" {
			c.Flux().WriteExternalArtifact(t, ns, l.name, art)
		}
	}
	var manifests []string
	for _, l := range layouts {
		src := "GitRepository"
		if l.source != "" {
			src = l.source
		}
		m := kustomization(l.name, "exact", l.path, ns, l.spec)
		if src == "ExternalArtifact" {
			m = strings.Replace(m, "sourceRef: {kind: GitRepository, name: exact}", "sourceRef: {kind: ExternalArtifact, name: "+l.name+"}", 1)
		}
		manifests = append(manifests, m)
	}
	t0 := time.Now()
	c.Apply(t, ns, strings.Join(manifests, "---\n"))
	for _, l := range layouts {
		c.Flux().WaitKustomizationApplied(t, ns, l.name, rev, waitFlux)
	}
	t.Logf("fact: kustomize-controller applied the %d Kustomizations in %s", len(layouts), time.Since(t0).Round(time.Millisecond))

	// driftwatch's build of the same artifact, as the agent makes it.
	fetcher := &desired.Fetcher{AllowedHosts: []string{strings.TrimPrefix(c.Flux().StorageURL(), "http://")},
		AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	url, _ := art["url"].(string)
	digest, _ := art["digest"].(string)
	revision, _ := art["revision"].(string)
	fs, err := fetcher.Fetch(ctxT(t), flux.Artifact{URL: url, Digest: digest, Revision: revision})
	if err != nil {
		t.Fatalf("fetch the artifact as the agent does: %v", err)
	}
	defer fs.Wipe()
	compared, undetermined := 0, 0
	for _, l := range layouts {
		ks := getKS(t, c, ns, l.name)
		obj, err := c.Dynamic.Resource(gitops.KustomizationGVR).Namespace(ns).Get(ctxT(t), l.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		res, err := build.Build(obj.Object, fs)
		took := time.Since(t0)
		if err != nil {
			t.Errorf("%s: driftwatch's build fails where kustomize-controller applied %s: %v", l.name, ks.LastApplied, err)
			continue
		}
		// What Flux applied: the Secrets and ExternalSecrets of the inventory.
		applied := map[string]bool{}
		for _, id := range ks.Inventory {
			o, ok := flux.ParseInventoryID(id)
			if ok && (o.Kind == "Secret" || o.Kind == "ExternalSecret") {
				applied[o.Kind+" "+o.Namespace+"/"+o.Name] = true
			}
		}
		var lines []string
		// An object whose name driftwatch could not determine stands for
		// one applied object of its kind and namespace.
		unnamed := map[string]int{}
		for _, o := range res.Objects {
			id := o.Kind + " " + o.Namespace + "/" + o.Name
			if o.Undetermined != "" {
				undetermined++
				if !expectedUndetermined(l, o) {
					t.Errorf("%s: %s is undetermined (%s), which it should not be", l.name, id, o.Undetermined)
				}
				lines = append(lines, id+" undetermined ("+o.Undetermined+")")
				if applied[id] {
					delete(applied, id)
				} else {
					unnamed[o.Kind+" "+o.Namespace]++
				}
				continue
			}
			compared++
			if !applied[id] {
				t.Errorf("%s: driftwatch builds %s, which kustomize-controller did not apply (inventory %v)", l.name, id, ks.Inventory)
				continue
			}
			delete(applied, id)
			live, ok := liveKeys(t, c, o.Kind, o.Namespace, o.Name)
			if !ok {
				t.Errorf("%s: %s is in the inventory but not in the cluster", l.name, id)
				continue
			}
			if want := sortedKeys(o); !slices.Equal(live, want) {
				t.Errorf("%s: %s: driftwatch builds keys %v, kustomize-controller applied %v", l.name, id, want, live)
			}
			lines = append(lines, fmt.Sprintf("%s %v", id, live))
		}
		for _, u := range l.undetermined {
			found := false
			for _, o := range res.Objects {
				found = found || o.Undetermined != "" && strings.HasPrefix(o.Kind+"/"+o.Name, u)
			}
			if !found {
				t.Errorf("%s: %s is not reported undetermined", l.name, u)
			}
		}
		for id := range applied {
			kindNS, _, _ := strings.Cut(id, "/")
			if unnamed[kindNS] > 0 {
				unnamed[kindNS]--
				lines = append(lines, "applied "+id+" (the undetermined one)")
				continue
			}
			t.Errorf("%s: kustomize-controller applied %s, which driftwatch's build lacks", l.name, id)
		}
		t.Logf("fact: %s (%s %s): built in %s: %s", l.name, srcKind(l), l.path, took.Round(time.Millisecond), strings.Join(lines, "; "))
	}
	t.Logf("fact: %d layouts, %d objects compared with what kustomize-controller applied, %d reported undetermined", len(layouts), compared, undetermined)
	if compared < 25 {
		t.Errorf("only %d objects compared", compared)
	}

	// The agent on the same cluster: every layout judged, none reported.
	t1 := time.Now()
	agent := c.StartAgent(t, "--namespaces", ns, "--flux-poll-interval", "2s")
	agent.WaitReady(t, waitAgent)
	defer func() {
		t.Logf("fact: the agent judged every layout %s after its start", time.Since(t1).Round(time.Millisecond))
	}()
	var all []scrape.Series
	waitFor(t, waitAgent, "the agent builds every layout", func() (bool, string) {
		all, err = agent.Scrape()
		if err != nil {
			return false, err.Error()
		}
		var unjudged, undet []string
		for _, s := range all {
			if s.Name == "driftwatch_flux_kustomization_unjudged" {
				unjudged = append(unjudged, s.Labels["kustomization"]+":"+s.Labels["reason"])
			}
			if s.Name == "driftwatch_flux_undetermined_objects" {
				undet = append(undet, fmt.Sprintf("%s=%v", s.Labels["kustomization"], s.Value))
			}
		}
		pending := 0
		for _, s := range all {
			if s.Name == "driftwatch_secret_key_pending_sync" && s.Labels["namespace"] == ns {
				pending++
			}
		}
		// postbuild-from and sops hold one undetermined object each: both built.
		return len(unjudged) == 0 && len(undet) == 2 && pending == 0, fmt.Sprintf("unjudged %v, undetermined %v, pending %d", unjudged, undet, pending)
	})
	for _, s := range all {
		if s.Name == "driftwatch_flux_undetermined_objects" || strings.HasPrefix(s.Name, "driftwatch_flux_kustomizations_unjudged") {
			t.Logf("series: %s", s)
		}
		if s.Labels["namespace"] != ns && s.Labels["kustomization_namespace"] != ns {
			continue
		}
		if strings.HasPrefix(s.Name, "driftwatch_flux_") && s.Name != "driftwatch_flux_undetermined_objects" ||
			s.Name == "driftwatch_secret_missing_key" || s.Name == "driftwatch_secret_absent" || s.Name == "driftwatch_gitops_synced_entries_missing" ||
			strings.Contains(s.Name, "last_applied") {
			t.Errorf("a layout Flux delivered is reported: %s", s)
		}
	}
}

func srcKind(l layout) string {
	if l.source != "" {
		return l.source
	}
	return "GitRepository"
}

// expectedUndetermined: the layout names the object (kind/name, or a
// prefix of it for a generated name) among those driftwatch cannot
// determine.
func expectedUndetermined(l layout, o model.Declared) bool {
	for _, u := range l.undetermined {
		if strings.HasPrefix(o.Kind+"/"+o.Name, u) {
			return true
		}
	}
	return false
}

func sortedKeys(o model.Declared) []string {
	var keys []string
	if o.ES != nil {
		keys = append(keys, o.ES.DataKeys...)
	} else {
		keys = append(keys, o.Keys...)
	}
	sort.Strings(keys)
	return keys
}
