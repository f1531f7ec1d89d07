// Package fullchain is the full-chain end-to-end test: the real stack
// (etcd, kube-apiserver, kube-controller-manager, the real ESO controller,
// the real Flux source-controller and kustomize-controller, ESO's and Argo
// CD's CRDs), the agent as a process, the real Prometheus
// scraping it and evaluating the shipped alert rules, and the real
// Alertmanager posting to a webhook served by the test. Every dashboard
// panel's query is run against that Prometheus.
package fullchain

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true, ArgoCDCRDs: true, Flux: true}))
}
