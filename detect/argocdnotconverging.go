package detect

// The argocd_not_converging detector: Applications OutOfSync at the revision
// their last successful sync applied.

import (
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// NotConverging is an Application that stays OutOfSync at the very revision its
// last sync operation applied with phase Succeeded: the sync does not change what
// Argo CD compares (an ignore-paths trap, a mutating webhook, a controller that
// rewrites the object), so syncing again will not help.
//
// An Application whose Git revision moved on since its last sync
// (status.sync.revision differs from status.operationState.syncResult.revision)
// is behind, not stuck: a manual-sync Application waits for someone to sync, an
// automated one is about to be synced. It is not reported. Automated says
// whether Argo CD syncs the Application by itself (spec.syncPolicy.automated):
// an automated Application reported here will stay as it is (Argo CD does not
// retry a sync to a revision it already synced successfully, unless selfHeal is
// on); a manual one was synced by someone, and did not converge either.
type NotConverging struct {
	Namespace   string
	Application string
	// Seconds since the last operation finished.
	Seconds   float64
	Automated bool
}

// sameRevision reports whether the app's compared revision(s) are the ones its
// last sync applied (both known).
func sameRevision(app *model.ArgoApp) bool {
	if len(app.SyncRevisions) > 0 || len(app.OperationRevisions) > 0 {
		return len(app.SyncRevisions) > 0 && slices.Equal(app.SyncRevisions, app.OperationRevisions)
	}
	return app.SyncRevision != "" && app.SyncRevision == app.OperationRevision
}

// NotConvergingApps reports Applications whose sync status is OutOfSync at the
// revision their last operation synced with phase Succeeded, more than threshold
// after that operation finished.
func NotConvergingApps(v model.View, avail model.Availability, now time.Time, threshold time.Duration) []NotConverging {
	if !avail[model.ResApplications] {
		return nil
	}
	var out []NotConverging
	for _, app := range v.Apps() {
		if app.DecodeErr != "" || app.Deleting || app.SyncStatus != "OutOfSync" || app.OperationPhase != "Succeeded" ||
			app.OperationFinishedAt.IsZero() || !sameRevision(app) {
			continue
		}
		age := now.Sub(app.OperationFinishedAt)
		if age > threshold {
			out = append(out, NotConverging{Namespace: app.Namespace, Application: app.Name, Seconds: age.Seconds(), Automated: app.Automated})
		}
	}
	return out
}
