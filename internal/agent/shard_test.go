package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/demo"
	"github.com/driftwatch/driftwatch/internal/helmpayload"
	"github.com/driftwatch/driftwatch/internal/model"
)

// shardHelmRelease is a Helm v3 release Secret (base64 of gzip of the release
// JSON) whose rendered manifest is manifest.
func shardHelmRelease(ns, release, manifest string) *corev1.Secret {
	return helmpayload.Release{Name: release, Namespace: ns, Version: 1, Manifest: manifest}.Secret()
}

func clusterStore(name string, provider map[string]any, ready string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore",
		"metadata": map[string]any{"name": name, "uid": "uid-css-" + name},
		"spec":     map[string]any{"provider": provider},
	}}
	if ready != "" {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": "InvalidProviderConfig"}}}
	}
	return u
}

// shardOf returns the shard ShardFilter assigns ns to.
func shardOf(ns string, shards int) int {
	for i := range shards {
		if agent.ShardFilter(i, shards)(ns) {
			return i
		}
	}
	return -1
}

// nsOnShard returns the first name prefix-N that lands on shard want.
func nsOnShard(prefix string, want, shards int) string {
	for i := 0; ; i++ {
		ns := prefix + "-" + strconv.Itoa(i)
		if shardOf(ns, shards) == want {
			return ns
		}
	}
}

// findingSeries scrapes an agent and returns the series of the findings
// collector's finding and object families (not the agent's own health), as
// strings.
func findingSeries(t *testing.T, base string) []string {
	t.Helper()
	_, body := get(t, base+"/metrics")
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, mf := range mfs {
		f, ok := finding.Lookup(name)
		if !ok || f.Kind == finding.KindHealth || name == "driftwatch_externalsecret_sync_age_seconds" ||
			name == "driftwatch_secret_last_data_change_timestamp_seconds" {
			continue // health is per agent; ages and times move between scrapes
		}
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			out = append(out, name+"{"+strings.Join(ls, ",")+"}")
		}
	}
	sort.Strings(out)
	return out
}

func startAgentOn(t *testing.T, clients agent.Clients, shard, shards int, watch string, eso model.Ref) string {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	cfg := agent.Config{Listen: "127.0.0.1:0", Logger: log, DiscoveryInterval: time.Second,
		Shard: shard, Shards: shards, ShardWatch: watch, OnListen: func(a string) { addrc <- a }}
	cfg.Findings.ESOServiceAccount = eso
	a := agent.New(clients, cfg)
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, cfg); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case addr := <-addrc:
		base := "http://" + addr
		waitReady(t, base)
		return base
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not listen")
	}
	return ""
}

// Three shards together export exactly the unsharded agent's findings, each
// from one shard only, including the expectations that cross namespaces: a
// Helm release stored in one namespace rendering Secrets into namespaces of
// other shards, ClusterSecretStores authenticating as ServiceAccounts of
// namespaces of other shards (jwt, workload identity, ambient auth as ESO's
// own ServiceAccount), and a ClusterSecretStore that is not Ready (a
// cluster-scoped finding: shard 0 exports it). The demo cluster's findings
// come along.
func TestShardsExportTheUnshardedFindingsExactly(t *testing.T) {
	for _, watch := range []string{agent.ShardWatchCluster, agent.ShardWatchNamespaces} {
		t.Run(watch, func(t *testing.T) { testShardsExportTheUnshardedFindings(t, watch) })
	}
}

func testShardsExportTheUnshardedFindings(t *testing.T, watch string) {
	const shards = 3
	relNS := nsOnShard("releases", 0, shards)
	destB := nsOnShard("dest", 1, shards)
	destC := nsOnShard("dest", 2, shards)
	idsX := nsOnShard("ids", 1, shards)
	idsY := nsOnShard("ids", 2, shards)
	esoNS := nsOnShard("eso", 1, shards)

	d := demo.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	manifest := fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata: {name: cross, namespace: %s}
stringData: {K1: a, K2: b}
---
apiVersion: v1
kind: Secret
metadata: {name: gone, namespace: %s}
stringData: {K: c}
---
apiVersion: v1
kind: Secret
metadata: {name: local}
stringData: {L1: d, L2: e}
`, destB, destC)
	for _, o := range []*corev1.Secret{
		shardHelmRelease(relNS, "spread", manifest),
		{ObjectMeta: metav1.ObjectMeta{Namespace: destB, Name: "cross"}, Data: map[string][]byte{"K1": []byte("x")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: relNS, Name: "local"}, Data: map[string][]byte{"L1": []byte("y")}},
	} {
		if err := d.Core().Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, sa := range []*corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Namespace: idsX, Name: "aws-reader"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: esoNS, Name: "external-secrets"}},
	} {
		if err := d.Core().Tracker().Add(sa); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []*unstructured.Unstructured{
		clusterStore("aws-jwt", map[string]any{"aws": map[string]any{"service": "SecretsManager", "region": "eu-west-1",
			"auth": map[string]any{"jwt": map[string]any{"serviceAccountRef": map[string]any{"name": "aws-reader", "namespace": idsX}}}}}, "True"),
		clusterStore("gcp-wi", map[string]any{"gcpsm": map[string]any{"projectID": "p",
			"auth": map[string]any{"workloadIdentity": map[string]any{"clusterLocation": "europe-west1", "clusterName": "c",
				"serviceAccountRef": map[string]any{"name": "gone", "namespace": idsY}}}}}, "True"),
		clusterStore("azure-ambient", map[string]any{"azurekv": map[string]any{"vaultUrl": "https://v.vault.azure.net", "authType": "WorkloadIdentity"}}, "True"),
		clusterStore("broken", map[string]any{"fake": map[string]any{}}, "False"),
	} {
		if err := d.Dynamic().Tracker().Add(u); err != nil {
			t.Fatal(err)
		}
	}
	// The namespaces, as objects (the demo's fake cluster has none): the
	// namespace-scoped watches follow them.
	nss := map[string]bool{}
	ctx := context.Background()
	if l, err := d.Core().CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, x := range l.Items {
			nss[x.Namespace] = true
		}
	}
	if l, err := d.Core().CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, x := range l.Items {
			nss[x.Namespace] = true
		}
	}
	if l, err := d.Core().CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, x := range l.Items {
			nss[x.Namespace] = true
		}
	}
	for _, gvr := range []schema.GroupVersionResource{{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"},
		{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}, {Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}} {
		l, err := d.Dynamic().Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range l.Items {
			nss[x.GetNamespace()] = true
		}
	}
	for _, ns := range []string{destC, idsY} { // namespaces of absent objects
		nss[ns] = true
	}
	for ns := range nss {
		if err := d.Core().Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	clients := d.Clients()

	// The ESO ServiceAccount lives in esoNS here: every agent is told so.
	eso := model.Ref{Namespace: esoNS, Name: "external-secrets"}
	whole := startAgentOn(t, clients, 0, 1, "", eso)
	parts := make([]string, shards)
	for i := range parts {
		parts[i] = startAgentOn(t, clients, i, shards, watch, eso)
	}

	wantCross := []string{
		fmt.Sprintf(`driftwatch_secret_missing_key{key="K2",namespace=%q,optional="false",secret="cross",source="helm"}`, destB),
		fmt.Sprintf(`driftwatch_secret_absent{namespace=%q,secret="gone",source="helm"}`, destC),
		fmt.Sprintf(`driftwatch_secret_missing_key{key="L2",namespace=%q,optional="false",secret="local",source="helm"}`, relNS),
		fmt.Sprintf(`driftwatch_serviceaccount_workload_identity_missing{namespace=%q,provider="aws",reason="annotation_missing",serviceaccount="aws-reader",store="aws-jwt",store_kind="ClusterSecretStore",store_namespace=""}`, idsX),
		fmt.Sprintf(`driftwatch_serviceaccount_workload_identity_missing{namespace=%q,provider="gcpsm",reason="sa_absent",serviceaccount="gone",store="gcp-wi",store_kind="ClusterSecretStore",store_namespace=""}`, idsY),
		fmt.Sprintf(`driftwatch_serviceaccount_workload_identity_info{namespace=%q,provider="azurekv",reason="annotation_missing",serviceaccount="external-secrets",store="azure-ambient",store_kind="ClusterSecretStore",store_namespace=""}`, esoNS),
		`driftwatch_secretstore_not_ready{kind="ClusterSecretStore",namespace="",reason="InvalidProviderConfig",store="broken"}`,
	}
	var problems []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		problems = problems[:0]
		want := findingSeries(t, whole)
		for _, s := range wantCross {
			if !slices.Contains(want, s) {
				problems = append(problems, "the unsharded agent does not export "+s)
			}
		}
		seen := map[string]int{}
		for i, p := range parts {
			for _, s := range findingSeries(t, p) {
				if j, dup := seen[s]; dup {
					problems = append(problems, fmt.Sprintf("shards %d and %d both export %s", j, i, s))
				}
				seen[s] = i
				ns := s[strings.Index(s, `namespace="`)+len(`namespace="`):]
				ns = ns[:strings.IndexByte(ns, '"')]
				if owner := shardOf(ns, shards); ns != "" && owner != i || ns == "" && i != 0 {
					problems = append(problems, fmt.Sprintf("shard %d exports %s of namespace %q (shard %d's)", i, s, ns, owner))
				}
			}
		}
		for _, s := range want {
			if _, ok := seen[s]; !ok {
				problems = append(problems, "only the unsharded agent exports "+s)
			}
		}
		for s, i := range seen {
			if !slices.Contains(want, s) {
				problems = append(problems, fmt.Sprintf("only shard %d exports %s", i, s))
			}
		}
		if len(problems) == 0 {
			t.Logf("%d finding series, each from one shard", len(want))
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(problems)
			t.Fatalf("shards and the unsharded agent disagree:\n%s", strings.Join(problems, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
