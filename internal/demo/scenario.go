package demo

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Scenario returns the demo's objects: core objects for the clientset and ESO /
// Argo CD objects for the dynamic client. Every failure class has one example in
// namespace "shop"; namespace "healthy" (and the healthy objects in "shop") must
// never appear in a finding. The expected findings are listed in scenario_test.go.
func Scenario(now time.Time) (core []runtime.Object, dyn []runtime.Object) {
	started := now.Add(-2 * time.Hour)
	fresh := now.Add(-5 * time.Minute)
	hourly := map[string]any{"name": "vault", "kind": "SecretStore"}

	// --- healthy: namespace "healthy" and healthy objects in "shop" ---------------
	for _, ns := range []string{"healthy", "shop"} {
		core = append(core,
			secret(ns, "web-config", map[string]string{"A": "alpha-value-1", "B": "bravo-value-2"}, nil),
			pod(ns, "web-5d8f7c9b4-aaaaa", "web", started, []envRef{{"web-config", "A", true}, {"web-config", "B", false}}, []string{"web-config"}),
			pod(ns, "web-5d8f7c9b4-bbbbb", "web", started, []envRef{{"web-config", "A", true}, {"web-config", "B", false}}, nil),
			&corev1.ServiceAccount{ObjectMeta: meta(ns, "default")},
		)
		dyn = append(dyn,
			externalSecret(ns, "web-config", map[string]any{"secretStoreRef": hourly, "refreshInterval": "1h",
				"target": map[string]any{"name": "web-config"}, "data": esData("A", "B")}, "True", "SecretSynced", fresh),
			store("SecretStore", ns, "vault", map[string]any{"vault": map[string]any{"server": "https://vault.example:8200"}}, "True", "Valid"),
		)
	}

	// --- missing keys, source pod + externalsecret; Ready but short ----------------
	// payments-api lacks STRIPE_KEY: the checkout Deployment reads it through an
	// optional secretKeyRef (the silent kind), and the ExternalSecret says Ready.
	core = append(core,
		secret("shop", "payments-api", map[string]string{"DB_PASSWORD": "s3cr3t-db-password", "API_KEY": "ak-0123456789"}, nil),
		pod("shop", "checkout-5d8f7c9b4-x1", "checkout", started, []envRef{{"payments-api", "DB_PASSWORD", false}, {"payments-api", "STRIPE_KEY", true}}, nil),
		pod("shop", "checkout-5d8f7c9b4-x2", "checkout", started, []envRef{{"payments-api", "DB_PASSWORD", false}, {"payments-api", "STRIPE_KEY", true}}, nil),
		pod("shop", "checkout-5d8f7c9b4-x3", "checkout", started, []envRef{{"payments-api", "DB_PASSWORD", false}, {"payments-api", "STRIPE_KEY", true}}, nil),
	)
	dyn = append(dyn, externalSecret("shop", "payments-api", map[string]any{"secretStoreRef": hourly, "refreshInterval": "1h",
		"target": map[string]any{"name": "payments-api", "deletionPolicy": "Delete"},
		"data":   esData("DB_PASSWORD", "API_KEY", "STRIPE_KEY")}, "True", "SecretSynced", fresh))

	// --- absent: envFrom of a Secret nobody created --------------------------------
	core = append(core, pod("shop", "cart-5d8f7c9b4-c1", "cart", started, nil, []string{"feature-flags"}))

	// --- Ready=True SecretMissing: creationPolicy Merge with no target --------------
	dyn = append(dyn, externalSecret("shop", "billing-db", map[string]any{"secretStoreRef": hourly, "refreshInterval": "1h",
		"target": map[string]any{"name": "billing-db", "creationPolicy": "Merge"}, "data": esData("PGPASSWORD")},
		"True", "SecretMissing", fresh))

	// --- not ready and overdue: last good sync three hours ago ----------------------
	core = append(core, secret("shop", "reports", map[string]string{"TOKEN": "rpt-token-value"}, nil))
	dyn = append(dyn, externalSecret("shop", "reports", map[string]any{"secretStoreRef": hourly, "refreshInterval": "1h",
		"target": map[string]any{"name": "reports"}, "data": esData("TOKEN")}, "False", "SecretSyncedError", now.Add(-3*time.Hour)))

	// --- store not ready ---------------------------------------------------------
	dyn = append(dyn, store("SecretStore", "shop", "aws-broken",
		map[string]any{"aws": map[string]any{"service": "SecretsManager", "region": "eu-west-1"}}, "False", "InvalidProviderConfig"))

	// --- Helm: the deployed release renders ledger-creds with a token the live
	// Secret lacks (stringData in the chart); revision 1 is superseded and ignored.
	core = append(core,
		secret("shop", "ledger-creds", map[string]string{"username": "ledger", "password": "p4ss-ledger"}, nil),
		helmRelease("shop", "ledger", 2, "deployed", ledgerManifest),
		helmRelease("shop", "ledger", 1, "superseded", ledgerManifestV1),
	)

	// --- annotation: the chart author lists the keys --------------------------------
	core = append(core, secret("shop", "legacy-api", map[string]string{"URL": "https://legacy.example"},
		map[string]string{"driftwatch.io/expected-keys": "URL,TOKEN"}))

	for _, part := range parts {
		c, d := part(now)
		core, dyn = append(core, c...), append(dyn, d...)
	}
	return core, dyn
}

// parts are further scenario pieces, one file per failure class, added with
// addPart from init functions.
var parts []func(now time.Time) (core, dyn []runtime.Object)

func addPart(p func(now time.Time) (core, dyn []runtime.Object)) { parts = append(parts, p) }

// activities drive changes over time while the demo runs (flips, restarts).
var activities []func(ctx context.Context, d *Demo)

func addActivity(a func(ctx context.Context, d *Demo)) { activities = append(activities, a) }

const ledgerManifest = `---
# Source: ledger/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: ledger-creds
type: Opaque
data:
  username: bGVkZ2Vy
  password: cDRzcy1sZWRnZXI=
stringData:
  token: chart-rendered-token
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ledger-config
data:
  mode: prod
`

const ledgerManifestV1 = `---
apiVersion: v1
kind: Secret
metadata:
  name: ledger-creds
data:
  username: bGVkZ2Vy
  password: cDRzcy1sZWRnZXI=
  legacy: b2xk
`
