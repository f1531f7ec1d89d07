package collectors

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// migrationStore: a compare pair that differs (db), one that matches (ok), a
// duplicate (creds-copy), a Secret whose last-applied copy of its data is stale
// (smtp), an ExternalSecret that deletes with Merge (legacy), and SecretStores
// authenticating as a ServiceAccount without workload-identity annotations.
func migrationStore() *model.Store {
	now := time.Unix(10000, 0)
	s := model.NewStore(nil)
	for _, sec := range []*model.Secret{
		mt.Annotate(mt.SecretValues("mig", "db", "user", "u", "password", "p\n", "old", "o"), model.AnnCompareWith, "db-check"),
		mt.SecretValues("mig", "db-check", "user", "u", "password", "p"),
		mt.Annotate(mt.SecretValues("mig", "ok", "a", "1"), model.AnnCompareWith, "ok-check"),
		mt.SecretValues("mig", "ok-check", "a", "1"),
		mt.SecretValues("mig", "creds", "k", "secret-1"),
		mt.SecretValues("mig", "creds-copy", "k", "secret-1"),
		mt.WithLastApplied(mt.SecretValues("mig", "smtp", "pw", "new"), mt.LastAppliedData("Secret", "pw", "old")),
		mt.SecretValues("mig", "legacy", "t", "x"),
	} {
		s.UpsertSecret(sec, now)
	}
	s.UpsertExternalSecret(mt.BareES("mig", "legacy", mt.ESCreation("Merge"), mt.ESDeletion("Delete"), mt.ESData("t"),
		mt.ESStore("SecretStore", "vault"), mt.ESReady("True", "SecretSynced")), time.Time{})
	s.UpsertServiceAccount(mt.ServiceAccount("mig", "reader"))
	reader := &model.Ref{Namespace: "mig", Name: "reader"}
	s.UpsertStore(mt.SecretStore("mig", "aws", mt.StoreProvider("aws"), mt.StoreAuth("jwt", reader)))
	s.UpsertStore(mt.SecretStore("mig", "gsm", mt.StoreProvider("gcpsm"), mt.StoreAuth("workload_identity", reader)))
	// AWS ambient auth (the SDK's default chain: IRSA, EKS Pod Identity, an
	// instance profile) needs no annotation, and the ESO SA's name is configuration:
	// no finding, whatever the ESO SA looks like.
	s.UpsertStore(mt.ClusterSecretStore("aws-ambient", mt.StoreProvider("aws"), mt.StoreAuth("ambient", nil)))
	return s
}

const migrationWant = `
# HELP driftwatch_compare_mismatch 1 for each key of a compare pair (driftwatch.io/compare-with) that does not match; key is empty when a whole Secret is absent (with --no-key-label: the number of keys per verdict and hint, key empty). verdict: mismatch, missing_from_store, only_in_store, live_secret_absent, store_secret_absent; hint: whitespace or empty.
# TYPE driftwatch_compare_mismatch gauge
driftwatch_compare_mismatch{compare_with="db-check",hint="",key="old",namespace="mig",secret="db",verdict="missing_from_store"} 1
driftwatch_compare_mismatch{compare_with="db-check",hint="whitespace",key="password",namespace="mig",secret="db",verdict="mismatch"} 1
# HELP driftwatch_compare_ready 1 when both Secrets of a compare pair exist and every key matches (safe to adopt), else 0.
# TYPE driftwatch_compare_ready gauge
driftwatch_compare_ready{compare_with="db-check",namespace="mig",secret="db"} 0
driftwatch_compare_ready{compare_with="ok-check",namespace="mig",secret="ok"} 1
# HELP driftwatch_externalsecret_unsafe 1 when an ExternalSecret's configuration can destroy or leak data on adoption or deletion. reason: implicit_creation_policy, owner_over_existing, delete_with_merge, unexpected_keys.
# TYPE driftwatch_externalsecret_unsafe gauge
driftwatch_externalsecret_unsafe{externalsecret="legacy",namespace="mig",reason="delete_with_merge"} 1
# HELP driftwatch_secret_duplicate_credentials 1 when a Secret holds exactly the same data as another Secret of its namespace (duplicate_of, the first in lexical order).
# TYPE driftwatch_secret_duplicate_credentials gauge
driftwatch_secret_duplicate_credentials{duplicate_of="creds",namespace="mig",secret="creds-copy"} 1
# HELP driftwatch_secret_last_applied_data 1 when a Secret's last-applied-configuration annotation holds a copy of its data; stale="true" when the copy differs from live.
# TYPE driftwatch_secret_last_applied_data gauge
driftwatch_secret_last_applied_data{namespace="mig",secret="smtp",stale="true"} 1
# HELP driftwatch_serviceaccount_workload_identity_missing 1 when the ServiceAccount a SecretStore or ClusterSecretStore authenticates as is absent or lacks the provider's workload-identity annotation.
# TYPE driftwatch_serviceaccount_workload_identity_missing gauge
driftwatch_serviceaccount_workload_identity_missing{namespace="mig",provider="aws",reason="annotation_missing",serviceaccount="reader",store="aws",store_kind="SecretStore",store_namespace="mig"} 1
# HELP driftwatch_serviceaccount_workload_identity_info 1 when a GCP store's ServiceAccount has no iam.gke.io/gcp-service-account annotation: optional on GKE (Workload Identity Federation), informational.
# TYPE driftwatch_serviceaccount_workload_identity_info gauge
driftwatch_serviceaccount_workload_identity_info{namespace="mig",provider="gcpsm",reason="annotation_missing",serviceaccount="reader",store="gsm",store_kind="SecretStore",store_namespace="mig"} 1
`

var migrationMetrics = []string{"driftwatch_compare_mismatch", "driftwatch_compare_ready", "driftwatch_externalsecret_unsafe",
	"driftwatch_secret_duplicate_credentials", "driftwatch_secret_last_applied_data",
	"driftwatch_serviceaccount_workload_identity_missing", "driftwatch_serviceaccount_workload_identity_info"}

func TestMigrationCollector(t *testing.T) {
	c := NewFindings(migrationStore(), mt.HealthAll(), Config{Now: func() time.Time { return time.Unix(10000, 0) },
		ESOServiceAccount: model.Ref{Namespace: "platform", Name: "eso"}})
	if err := testutil.CollectAndCompare(c, strings.NewReader(migrationWant), migrationMetrics...); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{ESOServiceAccount: model.Ref{Namespace: "eso-system"}}
	c.defaults()
	if c.ESOServiceAccount != (model.Ref{Namespace: "eso-system", Name: "external-secrets"}) || c.FlapThreshold != 2 ||
		c.NotConvergingThreshold != DefaultNotConvergingThreshold || c.OverdueFactor != 3 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestCompareNoKeyLabel(t *testing.T) {
	c := NewFindings(migrationStore(), mt.HealthAll(), Config{NoKeyLabel: true})
	want := `
# HELP driftwatch_compare_mismatch 1 for each key of a compare pair (driftwatch.io/compare-with) that does not match; key is empty when a whole Secret is absent (with --no-key-label: the number of keys per verdict and hint, key empty). verdict: mismatch, missing_from_store, only_in_store, live_secret_absent, store_secret_absent; hint: whitespace or empty.
# TYPE driftwatch_compare_mismatch gauge
driftwatch_compare_mismatch{compare_with="db-check",hint="",key="",namespace="mig",secret="db",verdict="missing_from_store"} 1
driftwatch_compare_mismatch{compare_with="db-check",hint="whitespace",key="",namespace="mig",secret="db",verdict="mismatch"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "driftwatch_compare_mismatch"); err != nil {
		t.Fatal(err)
	}
}

// Each detector stays silent (and says so) without the resources it needs.
func TestMigrationDetectorsGated(t *testing.T) {
	h := mt.HealthAll()
	h[model.ResServiceAccounts] = false
	h[model.ResExternalSecrets] = false
	c := NewFindings(migrationStore(), h, Config{})
	for _, m := range []string{"driftwatch_serviceaccount_workload_identity_missing", "driftwatch_serviceaccount_workload_identity_info",
		"driftwatch_externalsecret_unsafe"} {
		if n := testutil.CollectAndCount(c, m); n != 0 {
			t.Errorf("%s: %d series while its resources are unavailable", m, n)
		}
	}
	if n := testutil.CollectAndCount(c, "driftwatch_secret_duplicate_credentials"); n != 1 {
		t.Errorf("duplicates need only Secrets: %d series", n)
	}
	h = mt.HealthAll()
	h[model.ResSecrets] = false
	c = NewFindings(migrationStore(), h, Config{})
	for _, m := range []string{"driftwatch_compare_ready", "driftwatch_compare_mismatch", "driftwatch_secret_duplicate_credentials"} {
		if n := testutil.CollectAndCount(c, m); n != 0 {
			t.Errorf("%s: %d series before Secrets sync", m, n)
		}
	}
}
