// Package sharding is the end-to-end test of namespace sharding on the real stack:
// three agents with --shard 0|1|2 --total-shards 3 together export exactly the
// findings one unsharded agent exports, with no series exported twice.
package sharding

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOCRDs: true}))
}

const shards = 3

// describing series describe objects or carry times, not findings.
var describing = map[string]bool{
	"driftwatch_externalsecret_sync_age_seconds":           true,
	"driftwatch_secret_last_data_change_timestamp_seconds": true,
	"driftwatch_secret_flips_total":                        true,
	"driftwatch_compare_ready":                             true,
}

// namespaced returns the agent's driftwatch_ series that name a namespace
// (findings and the consumer inventory), rendered as strings.
func namespaced(a *cluster.Agent) ([]string, error) {
	all, err := a.Scrape()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range all {
		if strings.HasPrefix(s.Name, "driftwatch_") && !describing[s.Name] && s.Labels["namespace"] != "" {
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

func TestThreeShardsExportExactlyTheUnshardedFindings(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.Apply(t, "", `
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: shared}
spec:
  provider:
    fake:
      data: [{key: user, value: u}]
`)

	// Namespaces until every shard owns at least two of them (names are random).
	filters := make([]func(string) bool, shards)
	for i := range filters {
		filters[i] = agent.ShardFilter(i, shards)
	}
	owner := func(ns string) int {
		for i, f := range filters {
			if f(ns) {
				return i
			}
		}
		t.Fatalf("namespace %s belongs to no shard", ns)
		return -1
	}
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

	whole := c.StartAgent(t)
	parts := make([]*cluster.Agent, shards)
	for i := range parts {
		parts[i] = c.StartAgent(t, "--shard", fmt.Sprint(i), "--total-shards", fmt.Sprint(shards))
	}
	whole.WaitReady(t, 90*time.Second)
	for _, p := range parts {
		p.WaitReady(t, 90*time.Second)
	}

	// Wait until the unsharded agent reports findings in every test namespace and
	// the shards agree with it; then check once more, exactly.
	var lastDiff string
	deadline := time.Now().Add(90 * time.Second)
	for {
		diff, err := compare(whole, parts, nss, owner)
		if err != nil {
			t.Fatal(err)
		}
		if diff == "" {
			n, _ := namespaced(whole)
			t.Logf("the 3 shards export exactly the unsharded agent's %d namespaced series, none twice", len(n))
			break
		}
		lastDiff = diff
		if time.Now().After(deadline) {
			t.Fatalf("shards and the unsharded agent disagree:\n%s", lastDiff)
		}
		time.Sleep(500 * time.Millisecond)
	}
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
