package detect

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// ESNotReady is an ExternalSecret whose Ready condition is False or Unknown.
type ESNotReady struct {
	Namespace      string
	ExternalSecret string
	Reason         string
}

// ESSyncAge is the age of an ExternalSecret's last successful refresh.
type ESSyncAge struct {
	Namespace      string
	ExternalSecret string
	Age            time.Duration
	// Overdue: the age exceeds OverdueFactor × refreshInterval. An interval of 0
	// means "never refresh" and is never overdue, nor is a refreshPolicy of
	// CreatedOnce or OnChange (ESO does not refresh those on the interval).
	Overdue bool
}

// StoreNotReady is a SecretStore or ClusterSecretStore whose Ready condition is not True.
type StoreNotReady struct {
	Namespace string
	Kind      string
	Store     string
	Reason    string
}

// SyncHealthResult is the output of the sync-health detector.
type SyncHealthResult struct {
	NotReady []ESNotReady
	Ages     []ESSyncAge
	Stores   []StoreNotReady
}

// ESFirstSyncGrace is how long a just-created ExternalSecret that has never
// synced is not reported NotReady. ESO's first reconcile of an ExternalSecret
// applied together with its store (kubectl apply of a folder, a Helm install,
// the controller restarting) often fails because the store is not in its cache
// yet: Ready=False SecretSyncedError, then Ready a moment later (seen on the
// real ESO v0.20.4 in test/e2e/faults, after its CRDs were re-created). A
// really broken new ExternalSecret is reported this much later.
const ESFirstSyncGrace = 15 * time.Second

// SyncHealth reports ExternalSecrets that do not sync, how long ago each last synced,
// and stores that are not ready.
func SyncHealth(v model.View, avail model.Availability, now time.Time, overdueFactor float64) SyncHealthResult {
	var res SyncHealthResult
	if avail[model.ResExternalSecrets] {
		for _, e := range v.ExternalSecrets() {
			if e.DecodeErr != "" {
				continue
			}
			young := e.RefreshTime.IsZero() && now.Sub(e.CreationTimestamp.Time) < ESFirstSyncGrace
			if st := e.Ready.Status; (st == "False" || st == "Unknown") && !young {
				reason := e.Ready.Reason
				if reason == "" {
					reason = "Unknown"
				}
				res.NotReady = append(res.NotReady, ESNotReady{Namespace: e.Namespace, ExternalSecret: e.Name, Reason: reason})
			}
			if e.RefreshTime.IsZero() {
				continue
			}
			age := now.Sub(e.RefreshTime)
			if age < 0 {
				age = 0
			}
			a := ESSyncAge{Namespace: e.Namespace, ExternalSecret: e.Name, Age: age}
			periodic := e.RefreshPolicy == "" || e.RefreshPolicy == "Periodic"
			if periodic && e.RefreshIntervalSet && e.RefreshInterval > 0 && overdueFactor > 0 {
				a.Overdue = float64(age) > overdueFactor*float64(e.RefreshInterval)
			}
			res.Ages = append(res.Ages, a)
		}
	}
	for _, st := range v.Stores() {
		r := model.ResSecretStores
		if st.StoreKind == "ClusterSecretStore" {
			r = model.ResClusterSecretStores
		}
		if !avail[r] || st.DecodeErr != "" {
			continue
		}
		if s := st.Ready.Status; s == "False" || s == "Unknown" {
			reason := st.Ready.Reason
			if reason == "" {
				reason = "Unknown"
			}
			res.Stores = append(res.Stores, StoreNotReady{Namespace: st.Namespace, Kind: st.StoreKind, Store: st.Name, Reason: reason})
		}
	}
	return res
}
