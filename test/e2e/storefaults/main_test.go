// Package storefaults is the store side of the path (issue 32): ESO's real
// `kubernetes` provider reading Secrets from a second kube-apiserver (its own
// etcd, CA, RBAC and token signing: cluster.StartStoreServer), and the faults
// that start at a store — the store unreachable, permission removed, the
// token revoked, the client certificate expired, a key deleted at the
// provider (spec.data, dataFrom.extract, dataFrom.find), a value rotated —
// each observed on the real ESO v0.20.4 first, then judged by the agent, the
// real Prometheus evaluating the shipped rules and the real Alertmanager.
// Every fault is undone and every finding and alert must resolve; a scrape
// monitor fails the test on any page-grade finding outside the two faults
// that must page (a silent shrink a workload reads).
package storefaults

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true}))
}
