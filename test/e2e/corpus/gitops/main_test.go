// Package gitops is the GitOps corpus end-to-end test (issue 22): what Argo CD
// users run every day, installed the way they install it, on the real stack
// with the real Argo CD v3.2.9 (application controller, repo-server and
// argocd-server, the agent reading desired state through --argocd-server) and
// the real ESO v0.20.4 controller, watched by the agent, scraped by the real
// Prometheus with the shipped rules, alerting through the real Alertmanager:
//
//   - an Application that installs ESO v0.20.4's own Helm chart (its CRDs
//     included, generated into the chart as ESO's release does) from a local
//     Git repository with ServerSideApply=true and the webhook caBundle in
//     ignoreDifferences, as ESO's release notes and issues tell Argo CD users;
//   - an automated Application delivering a Secret, ExternalSecrets (one with
//     templateFrom literal and KeysAndValues items, one with deletionPolicy
//     Delete whose provider has nothing) and a Deployment reading them;
//   - a manual-sync Application one commit behind, the commit adding keys to a
//     Secret and an ExternalSecret, synced by someone later.
//
// The healthy corpus must produce no page-grade series and no warning- or
// critical-grade finding at any scrape after readiness (the manual sync's
// waiting keys are info), and the chain must deliver no page; the real fault
// (a key removed from an Argo CD-delivered Secret that a running pod reads)
// must page and resolve once Argo CD syncs it back.
//
// See gitops_test.go for what the real components did in these runs.
package gitops

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true, ArgoCDServer: true}))
}
