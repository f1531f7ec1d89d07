package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
	s.UpsertExternalSecret(mt.BareES("app", "tokens", mt.ESData("a", "b"), mt.ESStore("SecretStore", "vault"), mt.ESReady("True", "SecretSynced")))
	c := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	want := `
# HELP driftwatch_secret_short_consumer_pods Running pods of a workload that read (env, envFrom, volume, any way) a Secret that lacks expected keys or is absent. Bounded by findings; the page uses it.
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
