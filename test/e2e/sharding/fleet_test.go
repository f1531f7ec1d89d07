package sharding

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// Two clusters queried together, as a fleet is through Thanos, Mimir or
// federation with a `cluster` label: cluster "east" runs three shards,
// cluster "west" one unsharded agent, both over the same namespace (so the
// same namespace and Secrets in both). One real Prometheus scrapes all four
// with the cluster as a target label and evaluates the shipped rules; the
// real Alertmanager posts to the test. Every alert must come once per
// cluster, name its cluster, and never once per shard.
func TestFleetPagesOncePerClusterNamingIt(t *testing.T) {
	c := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	applySharedStore(t, c)
	ns := c.NewNamespace(t)
	c.Apply(t, ns, manifests(0))
	createReadyES(ctx, t, c, ns)

	var targets []promstack.Target
	for i := range shards {
		a := c.StartAgent(t, "--shard", fmt.Sprint(i), "--total-shards", fmt.Sprint(shards))
		a.WaitReady(t, 90*time.Second)
		targets = append(targets, promstack.Target{Addr: a.Addr, Labels: map[string]string{"cluster": "east"}})
	}
	west := c.StartAgent(t)
	west.WaitReady(t, 90*time.Second)
	targets = append(targets, promstack.Target{Addr: west.Addr, Labels: map[string]string{"cluster": "west"}})
	t.Logf("namespace %s belongs to east's shard %d", ns, owner(ns))

	hook := promstack.NewWebhook(t)
	ps := promstack.StartTargets(t, c, targets, hook)

	// What manifests(0) breaks, as alerts: worker-env absent and read by a
	// pod (page), the ExternalSecret Ready over a short Secret (page), and a
	// key only an optional reference names (warning).
	alerts := []string{"DriftwatchSecretAbsentConsumed", "DriftwatchExternalSecretReadyButShort", "DriftwatchSecretOptionalKeyMissing"}
	for _, name := range alerts {
		for _, cl := range []string{"east", "west"} {
			_, a := ps.WaitHook(t, hook, 0, 2*time.Minute, name+" of cluster "+cl, func(m promstack.Message, a promstack.Alert) bool {
				return a.Status == "firing" && a.Labels["alertname"] == name && a.Labels["namespace"] == ns && a.Labels["cluster"] == cl
			})
			if _, ok := a.Labels["instance"]; ok {
				t.Errorf("%s of %s carries instance %q: a page must not depend on which agent pod reported it", name, cl, a.Labels["instance"])
			}
			t.Logf("received: %s %v: %s", a.Status, a.Labels, a.Annotations["summary"])
		}
	}

	// Prometheus agrees: exactly one firing alert per alert name and cluster,
	// although east's series come from three agents.
	q := fmt.Sprintf(`count by (alertname, cluster) (ALERTS{alertstate="firing", namespace=%q})`, ns)
	got, err := ps.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	seen := map[string]bool{}
	for _, s := range got {
		k := s.Metric["alertname"] + "/" + s.Metric["cluster"]
		seen[k] = true
		lines = append(lines, fmt.Sprintf("%s %v", k, s.Value[1]))
		if s.Value[1] != "1" {
			t.Errorf("%s: %v firing alerts, want 1", k, s.Value[1])
		}
		if c := s.Metric["cluster"]; c != "east" && c != "west" {
			t.Errorf("an alert without its cluster: %v", s.Metric)
		}
	}
	sort.Strings(lines)
	t.Logf("%s:\n  %s", q, strings.Join(lines, "\n  "))
	for _, name := range alerts {
		for _, cl := range []string{"east", "west"} {
			if !seen[name+"/"+cl] {
				t.Errorf("Prometheus has no firing %s for cluster %s", name, cl)
			}
		}
	}
	// And the series themselves: east's come from one shard each.
	dup := fmt.Sprintf(`count by (__name__, namespace, secret, externalsecret, key, source) ({__name__=~"driftwatch_secret_missing_key|driftwatch_secret_absent|driftwatch_externalsecret_ready_but_short", cluster="east", namespace=%q}) > 1`, ns)
	if got, err := ps.Query(dup); err != nil || len(got) > 0 {
		t.Errorf("%s: %v (err %v): a finding exported by two of east's shards", dup, got, err)
	}
}
