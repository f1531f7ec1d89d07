// Package node runs driftwatch and real workloads on a real node: the
// stack's kubelet, containerd and kube-proxy (cluster.Options.Node), images
// built offline from this repository (the workload in test/e2e/images/envnames
// and driftwatch's own Dockerfile), the chart installed with the real helm.
package node

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{Node: true, ESOController: true}))
}
