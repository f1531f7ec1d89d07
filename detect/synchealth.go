package detect

import (
	"cmp"
	"slices"
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
	// Meta is the ExternalSecret's metadata (its driftwatch.io/ignore, read
	// by the emitter without a lookup per series per scrape).
	Meta *model.ObjectMeta
}

// StoreNotReady is a SecretStore or ClusterSecretStore whose Ready condition is not True.
type StoreNotReady struct {
	Namespace string
	Kind      string
	Store     string
	Reason    string
}

// StoreReadFailing is a store from which ESO cannot get the data of some of
// the ExternalSecrets that use it (spec.secretStoreRef), whatever the store's
// own Ready condition says: ESO v0.20.4 keeps a store Ready=True, reason
// ValidationUnknown, while its server is unreachable, its token revoked or
// its client certificate expired (seen on the real ESO in test/e2e/storefaults),
// so a store-level signal has to come from its ExternalSecrets.
type StoreReadFailing struct {
	Namespace string // "" for a ClusterSecretStore
	Kind      string
	Store     string
	// Failing counts the ExternalSecrets whose Ready is False because ESO
	// could not get their data from the provider; Total those that use it.
	Failing int
	Total   int
	// LongestSinceSync is the longest time since a failing ExternalSecret's
	// last successful sync (status.refreshTime); 0 when none ever synced.
	LongestSinceSync time.Duration
	// StoreReady is the store's own Ready condition (status and reason), ""
	// when the store is not known.
	StoreReady       string
	StoreReadyReason string
}

// SyncHealthResult is the output of the sync-health detector.
type SyncHealthResult struct {
	NotReady  []ESNotReady
	Ages      []ESSyncAge
	Stores    []StoreNotReady
	ReadFails []StoreReadFailing
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
	type storeKey struct{ ns, kind, name string }
	reads := map[storeKey]*StoreReadFailing{}
	var readOrder []storeKey
	// The ExternalSecrets come sorted by namespace, and neighbours mostly use
	// the same store: the last one's entry is reused without hashing its key.
	var lastKey storeKey
	var last *StoreReadFailing
	if avail[model.ResExternalSecrets] {
		ess := v.ExternalSecrets()
		res.Ages = make([]ESSyncAge, 0, len(ess)) // one per ExternalSecret that synced, at every scrape
		for _, e := range ess {
			if e.DecodeErr != "" {
				continue
			}
			young := e.RefreshTime.IsZero() && now.Sub(e.CreationTimestamp.Time) < ESFirstSyncGrace
			if e.StoreName != "" && !e.Deleting {
				k := storeKey{e.Namespace, e.StoreKind, e.StoreName}
				if e.StoreKind == "ClusterSecretStore" {
					k.ns = ""
				}
				r := last
				if r == nil || k != lastKey {
					if r = reads[k]; r == nil {
						r = &StoreReadFailing{Namespace: k.ns, Kind: k.kind, Store: k.name}
						reads[k] = r
						readOrder = append(readOrder, k)
					}
					lastKey, last = k, r
				}
				r.Total++
				if e.ProviderReadFailed && !young {
					r.Failing++
					if !e.RefreshTime.IsZero() {
						if d := now.Sub(e.RefreshTime); d > r.LongestSinceSync {
							r.LongestSinceSync = d
						}
					}
				}
			}
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
			a := ESSyncAge{Namespace: e.Namespace, ExternalSecret: e.Name, Age: age, Meta: &e.ObjectMeta}
			periodic := e.RefreshPolicy == "" || e.RefreshPolicy == "Periodic"
			if periodic && e.RefreshIntervalSet && e.RefreshInterval > 0 && overdueFactor > 0 {
				a.Overdue = float64(age) > overdueFactor*float64(e.RefreshInterval)
			}
			res.Ages = append(res.Ages, a)
		}
	}
	storeReady := map[storeKey]model.Condition{}
	for _, st := range v.Stores() {
		r := model.ResSecretStores
		k := storeKey{st.Namespace, st.StoreKind, st.Name}
		if st.StoreKind == "ClusterSecretStore" {
			r = model.ResClusterSecretStores
			k.ns = ""
		}
		storeReady[k] = st.Ready
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
	for _, k := range readOrder {
		r := reads[k]
		if r.Failing == 0 {
			continue
		}
		if c, ok := storeReady[k]; ok {
			r.StoreReady, r.StoreReadyReason = c.Status, c.Reason
		}
		res.ReadFails = append(res.ReadFails, *r)
	}
	slices.SortFunc(res.ReadFails, func(a, b StoreReadFailing) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Store, b.Store))
	})
	return res
}
