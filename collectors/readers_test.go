package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// The headline incident: an ExternalSecret's target lacks a key and the workload
// reads the Secret whole (envFrom), so no pod names the key. The page needs to
// know the Secret is read: driftwatch_secret_short_consumer_pods says so, bounded
// by findings (a Secret without a finding gets no series, whoever reads it).
func TestShortConsumerPodsNameEnvFromReaders(t *testing.T) {
	now := time.Unix(10000, 0)
	s := model.NewStore(nil)
	s.UpsertSecret(mt.Secret("app", "tokens", "a"), now)
	s.UpsertSecret(mt.Secret("app", "fine", "a"), now)
	for _, n := range []string{"api-1", "api-2", "api-3"} {
		s.UpsertPod(mt.WithWorkload(mt.Pod("app", n, mt.EnvFrom("tokens"), mt.EnvFrom("fine")), "Deployment", "api"))
	}
	s.UpsertPod(mt.WithWorkload(mt.WithPhase(mt.Pod("app", "done", mt.EnvFrom("tokens")), "Succeeded"), "Job", "migrate"))
	s.UpsertExternalSecret(mt.BareES("app", "tokens", mt.ESData("a", "b"), mt.ESStore("SecretStore", "vault"), mt.ESReady("True", "SecretSynced")), time.Time{})
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	want := `
# HELP driftwatch_secret_short_consumer_pods Running pods of a workload that read (env, envFrom, volume, any way but imagePullSecrets) a Secret that lacks expected keys or is absent. Bounded by findings; the page uses it.
# TYPE driftwatch_secret_short_consumer_pods gauge
driftwatch_secret_short_consumer_pods{namespace="app",secret="tokens",workload="api",workload_kind="Deployment"} 3
# HELP driftwatch_secret_missing_key_consumer_pods Pods of a workload that expect keys the Secret lacks (or the Secret itself, when absent).
# TYPE driftwatch_secret_missing_key_consumer_pods gauge
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"driftwatch_secret_short_consumer_pods", "driftwatch_secret_missing_key_consumer_pods"); err != nil {
		t.Fatal(err)
	}
}

// A Secret read only as an imagePullSecret: its readers are named on the
// finding ("who reads this") and in the inventory, but they are not the page
// alerts' consumer condition (driftwatch_secret_short_consumer_pods): a
// missing pull Secret fails loudly in the kubelet, never a page.
func TestImagePullReadersNamedNotPaged(t *testing.T) {
	now := time.Unix(10000, 0)
	s := model.NewStore(nil)
	// The ExternalSecret renders a .dockerconfigjson its target lacks.
	s.UpsertSecret(mt.Secret("app", "regcred", "config.json"), now)
	for i := range 2 {
		s.UpsertPod(mt.DeployPod("app", "web", i, mt.ImagePull("regcred")))
	}
	s.UpsertExternalSecret(mt.BareES("app", "regcred", mt.ESData(".dockerconfigjson"), mt.ESStore("SecretStore", "vault"),
		mt.ESReady("False", "SecretSyncedError")), time.Time{})
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }, Inventory: true})
	want := `
# HELP driftwatch_secret_short_consumer_pods Running pods of a workload that read (env, envFrom, volume, any way but imagePullSecrets) a Secret that lacks expected keys or is absent. Bounded by findings; the page uses it.
# TYPE driftwatch_secret_short_consumer_pods gauge
# HELP driftwatch_secret_missing_key_consumer_pods Pods of a workload that expect keys the Secret lacks (or the Secret itself, when absent).
# TYPE driftwatch_secret_missing_key_consumer_pods gauge
# HELP driftwatch_secret_consumer_pods Inventory: running pods of a workload that consume a Secret.
# TYPE driftwatch_secret_consumer_pods gauge
driftwatch_secret_consumer_pods{namespace="app",secret="regcred",workload="web",workload_kind="Deployment"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"driftwatch_secret_short_consumer_pods", "driftwatch_secret_missing_key_consumer_pods", "driftwatch_secret_consumer_pods"); err != nil {
		t.Fatal(err)
	}
	var named bool
	for _, f := range c.Typed() {
		if f.Metric == "driftwatch_secret_missing_key" && f.Object.Name == "regcred" {
			named = len(f.Consumers) == 1 && f.Consumers[0] == finding.Consumer{Kind: "Deployment", Name: "web", Pods: 2}
		}
	}
	if !named {
		t.Errorf("the missing-key finding on regcred does not name Deployment web (2 pods) as a reader: %+v", c.Typed())
	}
}
