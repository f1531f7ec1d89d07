// Package sharding is the end-to-end test of namespace sharding on the real stack:
// three agents with --shard 0|1|2 --total-shards 3 together export exactly the
// findings one unsharded agent exports, with no series exported twice, also
// for the expectations that cross namespaces (a Helm release rendering into
// other namespaces, an Argo CD Application managing Secrets in namespaces of
// other shards, ClusterSecretStores authenticating as ServiceAccounts of some
// namespace). The real Argo CD (application controller, repo-server and
// argocd-server) syncs a local Git repository; the real helm installs a chart.
package sharding

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOCRDs: true, ArgoCDServer: true, Flux: true}))
}

const shards = 3

// describing series describe objects or carry times, not findings.
var describing = map[string]bool{
	"driftwatch_externalsecret_sync_age_seconds":           true,
	"driftwatch_secret_last_data_change_timestamp_seconds": true,
	"driftwatch_secret_flips_total":                        true,
	"driftwatch_compare_ready":                             true,
}

// namespaced returns the agent's driftwatch_ series that have a namespace
// label (findings and the objects they name; namespace="" for cluster-scoped
// objects), rendered as strings.
func namespaced(a *cluster.Agent) ([]string, error) {
	all, err := a.Scrape()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range all {
		if _, ok := s.Labels["namespace"]; ok && strings.HasPrefix(s.Name, "driftwatch_") && !describing[s.Name] {
			out = append(out, s.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

// A namespace's findings: a pod reading an optional key its Secret lacks, a pod
// reading an absent Secret, an expected-keys annotation naming a missing key, and
// an ExternalSecret reported Ready over a Secret short by a key (its store is the
// cluster-scoped ClusterSecretStore every shard reads).
func manifests(i int) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: app}
stringData: {DB_USER: admin}
---
apiVersion: v1
kind: Secret
metadata:
  name: legacy-%[1]d
  annotations: {driftwatch.io/expected-keys: "URL, TOKEN"}
stringData: {URL: "https://legacy.example"}
---
apiVersion: v1
kind: Secret
metadata: {name: synced}
stringData: {USER: u}
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - name: app
    image: example/app:1
    env:
    - {name: DB_USER, valueFrom: {secretKeyRef: {name: app, key: DB_USER}}}
    - {name: STRIPE_KEY, valueFrom: {secretKeyRef: {name: app, key: STRIPE_KEY, optional: true}}}
---
apiVersion: v1
kind: Pod
metadata: {name: worker-%[1]d}
spec:
  containers:
  - name: app
    image: example/app:1
    envFrom: [{secretRef: {name: worker-env}}]
`, i)
}

var esGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

func createReadyES(ctx context.Context, t *testing.T, c *cluster.Cluster, ns string) {
	t.Helper()
	es := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "synced", "namespace": ns},
		"spec": map[string]any{
			"refreshInterval": "1h",
			"secretStoreRef":  map[string]any{"name": "shared", "kind": "ClusterSecretStore"},
			"target":          map[string]any{"name": "synced"},
			"data": []any{
				map[string]any{"secretKey": "USER", "remoteRef": map[string]any{"key": "user"}},
				map[string]any{"secretKey": "PASSWORD", "remoteRef": map[string]any{"key": "password"}},
			},
		},
	}}
	got, err := c.Dynamic.Resource(esGVR).Namespace(ns).Create(ctx, es, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	got.Object["status"] = map[string]any{
		"refreshTime": now, "syncedResourceVersion": "1-x", "binding": map[string]any{"name": "synced"},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "SecretSynced", "lastTransitionTime": now}},
	}
	if _, err := c.Dynamic.Resource(esGVR).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// owner returns the shard a namespace's series belong to: the one ShardFilter
// assigns it to, and shard 0 for cluster-scoped objects (namespace "").
func owner(ns string) int {
	if ns == "" {
		return 0
	}
	for i := range shards {
		if agent.ShardFilter(i, shards)(ns) {
			return i
		}
	}
	return -1
}

// namespaceOn creates namespaces (named after the test, random suffix) until
// one lands on shard want.
func namespaceOn(t *testing.T, c *cluster.Cluster, want int) string {
	t.Helper()
	for range 40 {
		if ns := c.NewNamespace(t); owner(ns) == want {
			return ns
		}
	}
	t.Fatalf("40 namespaces, none on shard %d", want)
	return ""
}

func kubectl(ctx context.Context, t *testing.T, c *cluster.Cluster, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(ctx, "", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// expected is a series the unsharded agent must export for a cross-namespace
// case, and exactly one shard with it: the owner of its namespace.
type expected struct {
	what   string
	name   string
	labels map[string]string
}

// helmAcrossNamespaces installs, with the real helm, a release stored in
// namespace A (shard 0) whose chart renders Secret "cross" into B (shard 1),
// Secret "gone" into C (shard 2) and Secret "local" into A; then removes key
// K2 from B's Secret and deletes C's. The shard of B must find K2 missing and
// the shard of C "gone" absent, although neither stores the release.
func helmAcrossNamespaces(ctx context.Context, t *testing.T, c *cluster.Cluster) []expected {
	a, b, cc := namespaceOn(t, c, 0), namespaceOn(t, c, 1), namespaceOn(t, c, 2)
	chart := c.TempDir(t, "chart-spread")
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: spread\nversion: 0.1.0\n",
		"templates/secrets.yaml": `apiVersion: v1
kind: Secret
metadata: {name: cross, namespace: {{ .Values.b }}}
stringData: {K1: one, K2: two}
---
apiVersion: v1
kind: Secret
metadata: {name: gone, namespace: {{ .Values.c }}}
stringData: {K: three}
---
apiVersion: v1
kind: Secret
metadata: {name: local}
stringData: {L1: four, L2: five}
`,
	}
	for p, content := range files {
		full := filepath.Join(chart, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.Helm(ctx, "install", "spread", chart, "--namespace", a, "--set", "b="+b, "--set", "c="+cc, "--wait=false"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	rel, err := c.Client.CoreV1().Secrets(a).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=spread,status=deployed"})
	if err != nil || len(rel.Items) != 1 {
		t.Fatalf("the release Secret in %s: %v, %d found", a, err, len(rel.Items))
	}
	t.Logf("helm: release Secret %s/%s (type %s) renders Secrets into %s, %s and %s", a, rel.Items[0].Name, rel.Items[0].Type, b, cc, a)
	kubectl(ctx, t, c, "patch", "secret", "cross", "-n", b, "--type=json", `-p=[{"op":"remove","path":"/data/K2"}]`)
	kubectl(ctx, t, c, "delete", "secret", "gone", "-n", cc)
	return []expected{
		{"Helm release in " + a + " (shard 0) rendering into " + b + " (shard 1)", "driftwatch_secret_missing_key",
			map[string]string{"namespace": b, "secret": "cross", "key": "K2", "source": "helm", "optional": "false"}},
		{"Helm release in " + a + " (shard 0) rendering into " + cc + " (shard 2)", "driftwatch_secret_absent",
			map[string]string{"namespace": cc, "secret": "gone", "source": "helm"}},
	}
}

// argoAcrossNamespaces has the real Argo CD sync, from a local Git repository,
// an Application in namespace argocd whose manifests put Secret "creds" (keys
// K1, K2) into two namespaces, each on a shard other than argocd's; then K2 is
// removed from both live Secrets (no selfHeal: Argo CD leaves them). Each
// destination's shard must find K2 missing against the desired state it reads
// from the real argocd-server.
func argoAcrossNamespaces(ctx context.Context, t *testing.T, c *cluster.Cluster) []expected {
	g := owner(gitops.ArgoCDNamespace)
	d, e := namespaceOn(t, c, (g+1)%shards), namespaceOn(t, c, (g+2)%shards)
	repo := c.NewGitRepo(t, "spread")
	secret := func(ns string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: %s}\nstringData: {K1: one, K2: two}\n", ns)
	}
	rev := repo.Commit(t, "two Secrets", map[string]string{"app/d.yaml": secret(d), "app/e.yaml": secret(e)})
	app := "spread-" + d
	c.Apply(t, gitops.ArgoCDNamespace, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  source: {repoURL: %q, path: app, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  syncPolicy:
    automated: {prune: false}
`, app, repo.URL, d))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Delete(ctx, app, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		u, err := c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		synced, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
		if sync == "Synced" && phase == "Succeeded" && synced == rev {
			t.Logf("argocd: Application %s/%s Synced at %s (operation Succeeded), Secrets in %s (shard %d) and %s (shard %d); argocd is shard %d",
				gitops.ArgoCDNamespace, app, rev[:8], d, owner(d), e, owner(e), g)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Application %s: sync=%q phase=%q syncResult.revision=%q, want Synced/Succeeded at %s", app, sync, phase, synced, rev)
		}
		time.Sleep(time.Second)
	}
	for _, ns := range []string{d, e} {
		kubectl(ctx, t, c, "patch", "secret", "creds", "-n", ns, "--type=json", `-p=[{"op":"remove","path":"/data/K2"}]`)
	}
	var out []expected
	for _, ns := range []string{d, e} {
		out = append(out, expected{fmt.Sprintf("Argo CD Application in argocd (shard %d) managing a Secret in %s (shard %d)", g, ns, owner(ns)),
			"driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "creds", "key": "K2", "source": "argocd", "optional": "false"}})
	}
	return out
}

// fluxAcrossNamespaces has the real Flux apply, from a Git repository served
// over HTTP, a Kustomization living in a namespace of one shard whose
// targetNamespace is on another: Secret "frozen" (ssa: IfNotPresent, key K1);
// a commit adds K2, which Flux never ships while it reports the revision
// applied. The target's shard, and only it, must export the never-updated
// finding and the key missing against the flux source.
func fluxAcrossNamespaces(ctx context.Context, t *testing.T, c *cluster.Cluster) []expected {
	home := namespaceOn(t, c, 0)
	target := namespaceOn(t, c, 1)
	repo := c.NewGitRepo(t, "flux-spread")
	secret := func(keys string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: frozen, annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}}\nstringData: {" + keys + "}\n"
	}
	rev1 := repo.Commit(t, "K1", map[string]string{"app/s.yaml": secret("K1: one")})
	c.Apply(t, home, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: spread}
spec: {interval: 10m, url: %q, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: spread}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: spread}
  path: ./app
  prune: true
  targetNamespace: %s
`, c.Flux().HTTPURL(repo), target))
	c.Flux().WaitKustomizationApplied(t, home, "spread", rev1, 3*time.Minute)
	rev2 := repo.Commit(t, "K2", map[string]string{"app/s.yaml": secret("K1: one, K2: two")})
	c.Flux().Reconcile(t, gitops.GitRepositoryGVR, home, "spread")
	c.Flux().WaitKustomizationApplied(t, home, "spread", rev2, 3*time.Minute)
	t.Logf("flux: Kustomization %s/spread (shard %d) Ready at %s, Secret frozen in %s (shard %d)", home, owner(home), rev2[:8], target, owner(target))
	return []expected{
		{fmt.Sprintf("Flux Kustomization in %s (shard %d) never updating a Secret in %s (shard %d)", home, owner(home), target, owner(target)),
			"driftwatch_flux_never_updated", map[string]string{"namespace": target, "kind": "Secret", "name": "frozen", "kustomization_namespace": home}},
		{fmt.Sprintf("Flux Kustomization in %s (shard %d) declaring a key of a Secret in %s (shard %d)", home, owner(home), target, owner(target)),
			"driftwatch_secret_missing_key", map[string]string{"namespace": target, "secret": "frozen", "key": "K2", "source": "flux", "optional": "false"}},
	}
}

var cssGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}

// storesAcrossNamespaces creates ClusterSecretStores that authenticate as
// ServiceAccounts of namespaces on different shards: AWS jwt (the SA exists
// without eks.amazonaws.com/role-arn), GCP workload identity (the SA does not
// exist), Azure workload identity (the SA lacks the client-id annotation), GCP
// ambient auth (ESO's own SA, given with --eso-service-account, exists without
// the GKE annotation: info), and one store whose status says Ready=False (a
// cluster-scoped finding: shard 0's). It returns the ESO SA as NAMESPACE/NAME.
func storesAcrossNamespaces(ctx context.Context, t *testing.T, c *cluster.Cluster) (string, []expected) {
	x, y, z, w := namespaceOn(t, c, 1), namespaceOn(t, c, 2), namespaceOn(t, c, 0), namespaceOn(t, c, 2)
	for _, sa := range [][2]string{{x, "aws-reader"}, {z, "az-reader"}, {w, "external-secrets"}} {
		if _, err := c.Client.CoreV1().ServiceAccounts(sa[0]).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa[1]}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	suffix := x // unique per run
	stores := fmt.Sprintf(`apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: aws-jwt-%[5]s}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth: {jwt: {serviceAccountRef: {name: aws-reader, namespace: %[1]s}}}
---
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: gcp-wi-%[5]s}
spec:
  provider:
    gcpsm:
      projectID: p
      auth: {workloadIdentity: {clusterLocation: europe-west1, clusterName: c, serviceAccountRef: {name: absent-sa, namespace: %[2]s}}}
---
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: azure-wi-%[5]s}
spec:
  provider:
    azurekv:
      vaultUrl: https://v.vault.azure.net
      authType: WorkloadIdentity
      serviceAccountRef: {name: az-reader, namespace: %[3]s}
---
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: gcp-ambient-%[5]s}
spec:
  provider:
    gcpsm: {projectID: p}
---
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: broken-%[5]s}
spec:
  provider:
    fake:
      data: [{key: user, value: u}]
`, x, y, z, w, suffix)
	objs := c.Apply(t, "", stores)
	for _, o := range objs {
		name := o.GetName()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = c.Dynamic.Resource(cssGVR).Delete(ctx, name, metav1.DeleteOptions{})
		})
	}
	broken, err := c.Dynamic.Resource(cssGVR).Get(ctx, "broken-"+suffix, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broken.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False",
		"reason": "InvalidProviderConfig", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	if _, err := c.Dynamic.Resource(cssGVR).UpdateStatus(ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	id := func(ns, sa, provider, store, reason string) map[string]string {
		return map[string]string{"namespace": ns, "serviceaccount": sa, "provider": provider, "store_kind": "ClusterSecretStore",
			"store_namespace": "", "store": store + "-" + suffix, "reason": reason}
	}
	where := func(ns string) string { return fmt.Sprintf("%s (shard %d)", ns, owner(ns)) }
	return w + "/external-secrets", []expected{
		{"ClusterSecretStore, AWS jwt, ServiceAccount in " + where(x), "driftwatch_serviceaccount_workload_identity_missing",
			id(x, "aws-reader", "aws", "aws-jwt", "annotation_missing")},
		{"ClusterSecretStore, GCP workload identity, absent ServiceAccount in " + where(y), "driftwatch_serviceaccount_workload_identity_missing",
			id(y, "absent-sa", "gcpsm", "gcp-wi", "sa_absent")},
		{"ClusterSecretStore, Azure workload identity, ServiceAccount in " + where(z), "driftwatch_serviceaccount_workload_identity_missing",
			id(z, "az-reader", "azurekv", "azure-wi", "annotation_missing")},
		{"ClusterSecretStore, GCP ambient auth as ESO's ServiceAccount in " + where(w), "driftwatch_serviceaccount_workload_identity_info",
			id(w, "external-secrets", "gcpsm", "gcp-ambient", "annotation_missing")},
		{"ClusterSecretStore not Ready (cluster-scoped: shard 0)", "driftwatch_secretstore_not_ready",
			map[string]string{"namespace": "", "kind": "ClusterSecretStore", "store": "broken-" + suffix, "reason": "InvalidProviderConfig"}},
	}
}

// applySharedStore creates the ClusterSecretStore "shared" (fake provider) that
// the scenarios' ExternalSecrets read.
func applySharedStore(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	c.Apply(t, "", `
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: shared}
spec:
  provider:
    fake:
      data: [{key: user, value: u}]
`)
}

func TestThreeShardsExportExactlyTheUnshardedFindings(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	applySharedStore(t, c)

	// Namespaces until every shard owns at least two of them (names are random).
	perShard := make([]int, shards)
	var nss []string
	for len(nss) < 24 {
		ns := c.NewNamespace(t)
		nss = append(nss, ns)
		perShard[owner(ns)]++
		if min(perShard[0], perShard[1], perShard[2]) >= 2 {
			break
		}
	}
	if min(perShard[0], perShard[1], perShard[2]) < 2 {
		t.Fatalf("24 namespaces did not cover the 3 shards twice: %v", perShard)
	}
	for i, ns := range nss {
		c.Apply(t, ns, manifests(i))
		createReadyES(ctx, t, c, ns)
	}
	t.Logf("%d namespaces, per shard %v", len(nss), perShard)

	var cases []expected
	cases = append(cases, helmAcrossNamespaces(ctx, t, c)...)
	cases = append(cases, argoAcrossNamespaces(ctx, t, c)...)
	cases = append(cases, fluxAcrossNamespaces(ctx, t, c)...)
	esoSA, stores := storesAcrossNamespaces(ctx, t, c)
	cases = append(cases, stores...)

	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte(c.ArgoCD().Token(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--eso-service-account", esoSA, "--argocd-server", c.ArgoCD().ServerURL(), "--argocd-insecure",
		"--argocd-token-file", tokenFile, "--argocd-poll-interval", "2s"}
	whole := c.StartAgent(t, common...)
	// Two sets of shards, one per --shard-watch mode.
	modes := []string{"cluster", "namespaces"}
	sets := make([][]*cluster.Agent, len(modes))
	for m, mode := range modes {
		sets[m] = make([]*cluster.Agent, shards)
		for i := range sets[m] {
			sets[m][i] = c.StartAgent(t, append([]string{"--shard", fmt.Sprint(i), "--total-shards", fmt.Sprint(shards), "--shard-watch", mode}, common...)...)
		}
	}
	whole.WaitReady(t, 90*time.Second)
	for _, set := range sets {
		for _, p := range set {
			p.WaitReady(t, 90*time.Second)
		}
	}
	// A namespace created while the agents run: the namespace-scoped shards
	// start its watches then.
	late := c.NewNamespace(t)
	c.Apply(t, late, manifests(len(nss)))
	createReadyES(ctx, t, c, late)
	nss = append(nss, late)
	t.Logf("namespace %s (shard %d) created after the agents were ready", late, owner(late))

	// Wait until the unsharded agent reports every case and findings in every
	// test namespace, and the shards agree with it; then check once more, exactly.
	for m, parts := range sets {
		var lastDiff string
		deadline := time.Now().Add(2 * time.Minute)
		for {
			diff, err := compare(whole, parts, nss, owner)
			if err != nil {
				t.Fatal(err)
			}
			caseDiff, report, err := checkCases(whole, parts, cases)
			if err != nil {
				t.Fatal(err)
			}
			if diff == "" && caseDiff == "" {
				n, _ := namespaced(whole)
				t.Logf("--shard-watch %s: the 3 shards export exactly the unsharded agent's %d series with a namespace label, none twice", modes[m], len(n))
				t.Logf("--shard-watch %s: cross-namespace cases, series from 1 agent and from 3 shards:\n%s", modes[m], report)
				break
			}
			lastDiff = strings.TrimSpace(diff + "\n" + caseDiff)
			if time.Now().After(deadline) {
				t.Fatalf("--shard-watch %s: shards and the unsharded agent disagree:\n%s\ncases:\n%s", modes[m], lastDiff, report)
			}
			time.Sleep(time.Second)
		}
	}
}

// checkCases returns "" when the unsharded agent exports a series of every case
// and exactly one shard does, the owner of its namespace; and a report of what
// each agent exports for each case.
func checkCases(whole *cluster.Agent, parts []*cluster.Agent, cases []expected) (string, string, error) {
	w, err := whole.Scrape()
	if err != nil {
		return "", "", err
	}
	ps := make([][]scrape.Series, len(parts))
	for i, p := range parts {
		if ps[i], err = p.Scrape(); err != nil {
			return "", "", err
		}
	}
	var problems []string
	var report strings.Builder
	for _, cs := range cases {
		fmt.Fprintf(&report, "- %s\n", cs.what)
		got := scrape.Find(w, cs.name, cs.labels)
		if len(got) == 0 {
			problems = append(problems, fmt.Sprintf("%s: the unsharded agent does not export %s%v", cs.what, cs.name, cs.labels))
			fmt.Fprintf(&report, "    1 agent:  none\n")
		}
		for _, s := range got {
			fmt.Fprintf(&report, "    1 agent:  %s\n", s)
		}
		var from []int
		for i := range parts {
			for _, s := range scrape.Find(ps[i], cs.name, cs.labels) {
				from = append(from, i)
				fmt.Fprintf(&report, "    shard %d:  %s\n", i, s)
			}
		}
		if want := owner(cs.labels["namespace"]); len(from) != 1 || from[0] != want {
			problems = append(problems, fmt.Sprintf("%s: exported by shards %v, want exactly shard %d", cs.what, from, want))
		}
	}
	return strings.Join(problems, "\n"), report.String(), nil
}

// compare returns "" when the union of the shards' namespaced series equals the
// unsharded agent's, no series appears in two shards, every series of a shard
// belongs to one of its namespaces, and every test namespace has findings.
// Otherwise it describes the difference. Scrape errors are returned as errors.
func compare(whole *cluster.Agent, parts []*cluster.Agent, nss []string, owner func(string) int) (string, error) {
	want, err := namespaced(whole)
	if err != nil {
		return "", err
	}
	var problems []string
	seen := map[string]int{}
	for i, p := range parts {
		got, err := namespaced(p)
		if err != nil {
			return "", err
		}
		for _, s := range got {
			if j, dup := seen[s]; dup {
				problems = append(problems, fmt.Sprintf("duplicate: shard %d and shard %d both export %s", j, i, s))
			}
			seen[s] = i
		}
	}
	wantSet := map[string]bool{}
	for _, s := range want {
		wantSet[s] = true
		if _, ok := seen[s]; !ok {
			problems = append(problems, "only the unsharded agent exports "+s)
		}
	}
	for s, i := range seen {
		if !wantSet[s] {
			problems = append(problems, fmt.Sprintf("only shard %d exports %s", i, s))
		}
		m := nsLabel.FindStringSubmatch(s)
		if m == nil {
			problems = append(problems, "no namespace label in "+s)
			continue
		}
		if ns := m[1]; owner(ns) != i {
			problems = append(problems, fmt.Sprintf("shard %d exports a series of namespace %s, which belongs to shard %d: %s", i, ns, owner(ns), s))
		}
	}
	for _, ns := range nss {
		n := 0
		for _, s := range want {
			if strings.Contains(s, `namespace="`+ns+`"`) && strings.HasPrefix(s, "driftwatch_secret_missing_key{") {
				n++
			}
		}
		if n < 2 {
			problems = append(problems, fmt.Sprintf("namespace %s: %d missing_key findings so far, want at least 2", ns, n))
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "\n"), nil
}

var nsLabel = regexp.MustCompile(`[{,]namespace="([^"]*)"`)
