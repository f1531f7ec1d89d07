package collectors

// The pending_sync detector: its metric family (the catalog entry), its
// registry entry and how it emits (detect/pendingsync.go is the detector, over
// the GitOps desired state of detect/gitops.go). syncLabels and syncDesc are
// shared with synced_entries_missing.

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// syncLabels are the labels that name the GitOps object delivering desired
// state: sync_kind (Application), sync_namespace, sync_name.
var syncLabels = []string{"sync_kind", "sync_namespace", "sync_name"}

var (
	descPendingSync = declare(finding.Family{
		Name:     "driftwatch_secret_key_pending_sync",
		NoPanel:  "no failure: keys of a revision the GitOps tool has not delivered yet ship with its next sync (a manual sync, a sync window), and counted with the failures they would mark namespaces that only wait for a planned sync; the investigation dashboard's \"Waiting for a sync (info)\" table lists them",
		Offline:  "needs what the GitOps tool reports it synced and the live Secret",
		Commands: pendingSyncCommands,
		Help: "1 for each key the revision a GitOps tool compares now declares (source argocd: an Application's target state) that the Secret lacks, " +
			"while the tool has not delivered that revision (a manual sync not yet run, a sync window, automated sync off, a sync running or failed): " +
			"the key ships with the next sync. Info: a sync waiting for a person is not a fault.",
		Labels:   append([]string{"namespace", "secret", "key", "source"}, syncLabels...),
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "GitOps delivery",
		Severity: finding.SevInfo,
	})
)

func init() {
	// The Applications are read through the desired state
	// (detect.GitOpsDesired), which stamps the global generation.
	register(detector{name: detect.DetectorPendingSync, requires: []model.Resource{model.ResSecrets},
		emit: emitPendingSync, perNamespace: true, families: []*prometheus.Desc{descPendingSync}})
}

func emitPendingSync(e *emitter, v model.View, a model.Availability, _ time.Time) {
	type group struct {
		ns, secret string
		src        detect.Source
		sync       detect.SyncObject
	}
	counts := map[group]int{}
	var order []group
	for _, p := range detect.PendingSync(v, a) {
		if e.cfg.NoKeyLabel {
			g := group{p.Namespace, p.Secret, p.Source, p.Sync}
			if counts[g] == 0 {
				order = append(order, g)
			}
			counts[g]++
			continue
		}
		if f := e.gauge(descPendingSync, 1, p.Namespace, p.Secret, p.Key, string(p.Source), p.Sync.Kind, p.Sync.Namespace, p.Sync.Name); f != nil {
			f.Evidence = fmt.Sprintf("%s has not yet delivered revision %s, which declares %s; the Secret lacks it until the next sync",
				syncDesc(v, p.Sync), p.Revision, keyOrSecret(p.Key, p.Namespace, p.Secret))
		}
	}
	for _, g := range order {
		if f := e.gauge(descPendingSync, float64(counts[g]), g.ns, g.secret, "", string(g.src), g.sync.Kind, g.sync.Namespace, g.sync.Name); f != nil {
			f.Evidence = fmt.Sprintf("%s has not yet delivered its current revision, which declares %d key(s) the Secret lacks", syncDesc(v, g.sync), counts[g])
		}
	}
}

func keyOrSecret(key, ns, secret string) string {
	if key == "" {
		return "Secret " + ns + "/" + secret
	}
	return "key " + key
}

// syncDesc names a sync object and what it last did: "Application
// argocd/shop (last sync Succeeded at r1)".
func syncDesc(v model.View, s detect.SyncObject) string {
	d := s.Kind + " " + s.Namespace + "/" + s.Name
	if s.Kind == "Application" {
		if app, ok := v.App(s.Namespace, s.Name); ok && app.OperationPhase != "" {
			d += fmt.Sprintf(" (last sync %s at %s)", app.OperationPhase, app.OperationRevisionKey())
		}
	}
	return d
}

func pendingSyncCommands(c *finding.Commands) {
	applicationSyncCommand(c)
	c.SecretKeys(c.Name())
	if c.F.Labels["sync_kind"] == "Application" {
		c.Fix("sync the Application when the change is meant to ship", "argocd app sync "+c.L("sync_name")+" --app-namespace "+c.L("sync_namespace"))
	}
}
