// Package corpus is the real-world corpus end-to-end test (issue 14): objects
// no one on this project wrote, installed the way users install them, on the
// real stack (kube-apiserver, etcd, kube-controller-manager with its token,
// Deployment, ReplicaSet and StatefulSet controllers, the real ESO controller),
// watched by the agent, scraped by the real Prometheus with the shipped rules,
// alerting through the real Alertmanager:
//
//   - Argo CD v2.14.21's stock manifests/install.yaml (kubectl apply: the CRDs
//     server-side, the rest client-side, into namespace argocd);
//   - ESO v0.20.4's Helm chart (helm install, a real release Secret) with ESO's
//     cert-controller running, so the webhook Secret is filled as in real
//     clusters, then a helm upgrade that changes labels only;
//   - a ServiceAccount token Secret, everyday kubectl patch/edit/label/annotate,
//     a Secret deleted and re-created with the same data, an ExternalSecret
//     with creationPolicy None, a Secret that gained a key while a running pod
//     reads another key, and an agent restart.
//
// The healthy corpus must produce no page-grade series at any scrape after
// readiness during at least two minutes of that churn, and the chain must
// deliver no page; the real faults (Argo CD without its argocd-redis Secret, a
// key removed from a consumed Secret) must be found and clear once fixed.
//
// See corpus_test.go for what the real components did in these runs.
package corpus

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func TestMain(m *testing.M) {
	// Argo CD's CRDs come from its install.yaml (kubectl apply --server-side),
	// not from the stack's copy of the Application CRD.
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true}))
}
