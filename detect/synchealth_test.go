package detect

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestSyncHealth(t *testing.T) {
	const ns = "app"
	now := mt.T0.Add(3 * time.Hour)
	age := func(esName string, d time.Duration, overdue bool) ESSyncAge {
		return ESSyncAge{Namespace: ns, ExternalSecret: esName, Age: d, Overdue: overdue}
	}
	tests := []struct {
		name     string
		objs     []any
		avail    model.Availability
		factor   float64
		notReady []ESNotReady
		ages     []ESSyncAge
		stores   []StoreNotReady
	}{
		{
			name: "Ready, recently synced: an age, nothing else",
			objs: []any{mt.ES(ns, "ok", mt.ESRefreshed(now.Add(-10*time.Minute), time.Hour, true)), mt.SecretStore(ns, "vault")},
			ages: []ESSyncAge{age("ok", 10*time.Minute, false)},
		},
		{
			name: "NotReady: False with reason, Unknown without reason",
			objs: []any{
				mt.ES(ns, "f", mt.ESReady("False", "SecretSyncedError"), mt.ESRefreshed(time.Time{}, time.Hour, true)),
				mt.ES(ns, "u", mt.ESReady("Unknown", ""), mt.ESRefreshed(time.Time{}, time.Hour, true)),
				mt.ES(ns, "none", mt.ESReady("", ""), mt.ESRefreshed(time.Time{}, time.Hour, true)),
			},
			notReady: []ESNotReady{
				{Namespace: ns, ExternalSecret: "f", Reason: "SecretSyncedError"},
				{Namespace: ns, ExternalSecret: "u", Reason: "Unknown"},
			},
		},
		{
			// ESO's first reconcile of an ExternalSecret applied with its store
			// fails while the store is not in its cache: not judged for
			// ESFirstSyncGrace unless it has synced before.
			name: "just created and never synced: NotReady judged after the grace",
			objs: []any{
				mt.Created(mt.ES(ns, "new", mt.ESReady("False", "SecretSyncedError"), mt.ESRefreshed(time.Time{}, time.Hour, true)), now.Add(-ESFirstSyncGrace+time.Second)),
				mt.Created(mt.ES(ns, "older", mt.ESReady("False", "SecretSyncedError"), mt.ESRefreshed(time.Time{}, time.Hour, true)), now.Add(-ESFirstSyncGrace)),
				mt.Created(mt.ES(ns, "synced", mt.ESReady("False", "SecretSyncedError"), mt.ESRefreshed(now.Add(-time.Second), time.Hour, true)), now.Add(-5*time.Second)),
			},
			notReady: []ESNotReady{
				{Namespace: ns, ExternalSecret: "older", Reason: "SecretSyncedError"},
				{Namespace: ns, ExternalSecret: "synced", Reason: "SecretSyncedError"},
			},
			ages: []ESSyncAge{age("synced", time.Second, false)},
		},
		{
			name:     "key removed after a good sync: NotReady and the age keeps growing, overdue",
			objs:     []any{mt.ES(ns, "stale", mt.ESReady("False", "SecretSyncedError"), mt.ESRefreshed(now.Add(-150*time.Minute), time.Hour, true))},
			notReady: []ESNotReady{{Namespace: ns, ExternalSecret: "stale", Reason: "SecretSyncedError"}},
			ages:     []ESSyncAge{age("stale", 150*time.Minute, true)},
		},
		{
			name: "overdue only beyond factor × interval (factor 2)",
			objs: []any{
				mt.ES(ns, "at", mt.ESRefreshed(now.Add(-2*time.Hour), time.Hour, true)),
				mt.ES(ns, "beyond", mt.ESRefreshed(now.Add(-2*time.Hour-time.Second), time.Hour, true)),
				mt.ES(ns, "within", mt.ESRefreshed(now.Add(-90*time.Minute), time.Hour, true)),
			},
			ages: []ESSyncAge{age("at", 2*time.Hour, false), age("beyond", 2*time.Hour+time.Second, true), age("within", 90*time.Minute, false)},
		},
		{
			name:   "fractional factor",
			factor: 1.5,
			objs:   []any{mt.ES(ns, "e", mt.ESRefreshed(now.Add(-100*time.Minute), time.Hour, true))},
			ages:   []ESSyncAge{age("e", 100*time.Minute, true)},
		},
		{
			name:   "factor 0 disables overdue",
			factor: -1,
			objs:   []any{mt.ES(ns, "e", mt.ESRefreshed(now.Add(-100*time.Hour), time.Hour, true))},
			ages:   []ESSyncAge{age("e", 100*time.Hour, false)},
		},
		{
			name: "refreshInterval 0 never refreshes: never overdue",
			objs: []any{mt.ES(ns, "once", mt.ESRefreshed(now.Add(-1000*time.Hour), 0, true))},
			ages: []ESSyncAge{age("once", 1000*time.Hour, false)},
		},
		{
			name: "refreshInterval not set: never overdue",
			objs: []any{mt.ES(ns, "unset", mt.ESRefreshed(now.Add(-1000*time.Hour), 0, false))},
			ages: []ESSyncAge{age("unset", 1000*time.Hour, false)},
		},
		{
			name: "refreshTime in the future (clock skew) clamps to 0",
			objs: []any{mt.ES(ns, "skew", mt.ESRefreshed(now.Add(time.Minute), time.Hour, true))},
			ages: []ESSyncAge{age("skew", 0, false)},
		},
		{
			name: "v1beta1 and undecodable ExternalSecrets",
			objs: []any{
				mt.ES(ns, "old", mt.ESAPIVersion("external-secrets.io/v1beta1"), mt.ESReady("False", "SecretSyncedError"), mt.ESRefreshed(now.Add(-time.Minute), time.Hour, true)),
				mt.ES(ns, "bad", mt.ESDecodeErr("decode: x"), mt.ESReady("False", "X"), mt.ESRefreshed(now.Add(-time.Minute), time.Hour, true)),
			},
			notReady: []ESNotReady{{Namespace: ns, ExternalSecret: "old", Reason: "SecretSyncedError"}},
			ages:     []ESSyncAge{age("old", time.Minute, false)},
		},
		{
			name: "stores not ready, both kinds",
			objs: []any{
				mt.SecretStore(ns, "good"),
				mt.SecretStore(ns, "bad", mt.StoreReady("False", "InvalidProviderConfig")),
				mt.SecretStore(ns, "unk", mt.StoreReady("Unknown", "")),
				mt.SecretStore(ns, "nocond", mt.StoreReady("", "")),
				mt.ClusterSecretStore("cbad", mt.StoreReady("False", "ValidationFailed")),
				mt.ClusterSecretStore("cgood"),
			},
			stores: []StoreNotReady{
				{Namespace: "", Kind: "ClusterSecretStore", Store: "cbad", Reason: "ValidationFailed"},
				{Namespace: ns, Kind: "SecretStore", Store: "bad", Reason: "InvalidProviderConfig"},
				{Namespace: ns, Kind: "SecretStore", Store: "unk", Reason: "Unknown"},
			},
		},
		{
			name: "store with a decode error is skipped",
			objs: []any{func() *model.SecretStore {
				st := mt.SecretStore(ns, "x", mt.StoreReady("False", "Y"))
				st.DecodeErr = "decode: x"
				return st
			}()},
		},
		{
			name: "SecretStores unavailable: only ClusterSecretStores reported",
			objs: []any{
				mt.SecretStore(ns, "bad", mt.StoreReady("False", "R")),
				mt.ClusterSecretStore("cbad", mt.StoreReady("False", "R")),
			},
			avail:  mt.AllBut(model.ResSecretStores),
			stores: []StoreNotReady{{Namespace: "", Kind: "ClusterSecretStore", Store: "cbad", Reason: "R"}},
		},
		{
			name: "ClusterSecretStores unavailable: only SecretStores reported",
			objs: []any{
				mt.SecretStore(ns, "bad", mt.StoreReady("False", "R")),
				mt.ClusterSecretStore("cbad", mt.StoreReady("False", "R")),
			},
			avail:  mt.AllBut(model.ResClusterSecretStores),
			stores: []StoreNotReady{{Namespace: ns, Kind: "SecretStore", Store: "bad", Reason: "R"}},
		},
		{
			name: "ExternalSecrets unavailable: no ExternalSecret output, stores remain",
			objs: []any{
				mt.ES(ns, "f", mt.ESReady("False", "E"), mt.ESRefreshed(now.Add(-5*time.Hour), time.Hour, true)),
				mt.SecretStore(ns, "bad", mt.StoreReady("False", "R")),
			},
			avail:  mt.AllBut(model.ResExternalSecrets),
			stores: []StoreNotReady{{Namespace: ns, Kind: "SecretStore", Store: "bad", Reason: "R"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = mt.All()
			}
			factor := tc.factor
			switch {
			case factor == 0:
				factor = 2
			case factor < 0:
				factor = 0
			}
			s := mt.NewStore(t, tc.objs...)
			got := mt.Read(s, func(v model.View) SyncHealthResult { return SyncHealth(v, avail, now, factor) })
			checkSlice(t, "NotReady", got.NotReady, tc.notReady)
			for i, a := range got.Ages {
				// The emitter reads driftwatch.io/ignore from Meta: it must be
				// the ExternalSecret's own.
				if a.Meta == nil || a.Meta.Namespace != a.Namespace || a.Meta.Name != a.ExternalSecret {
					t.Errorf("age of %s/%s carries the metadata of %+v", a.Namespace, a.ExternalSecret, a.Meta)
				}
				got.Ages[i].Meta = nil
			}
			checkSlice(t, "Ages", got.Ages, tc.ages)
			checkSlice(t, "Stores", got.Stores, tc.stores)
		})
	}
}

// TestStoreReadFailing: one finding per store whose ExternalSecrets ESO cannot
// read, from the ExternalSecrets (ProviderReadFailed), with the store's own
// condition beside it: ESO keeps an unreachable store Ready=True
// ValidationUnknown (test/e2e/storefaults).
func TestStoreReadFailing(t *testing.T) {
	const ns = "app"
	now := mt.T0.Add(3 * time.Hour)
	failed := func(e *model.ExternalSecret) {
		e.Ready = model.Condition{Status: "False", Reason: "SecretSyncedError"}
		e.ProviderReadFailed = true
	}
	objs := []any{
		// SecretStore "remote": 2 of 3 fail (one last synced 2h ago, one 10m ago).
		mt.ES(ns, "a", mt.ESStore("SecretStore", "remote"), failed, mt.ESRefreshed(now.Add(-2*time.Hour), time.Hour, true)),
		mt.ES(ns, "b", mt.ESStore("SecretStore", "remote"), failed, mt.ESRefreshed(now.Add(-10*time.Minute), time.Hour, true)),
		mt.ES(ns, "c", mt.ESStore("SecretStore", "remote")),
		mt.SecretStore(ns, "remote", mt.StoreReady("True", "ValidationUnknown")),
		// Not Ready for another cause (the target owned by another
		// ExternalSecret): not a store read failure.
		mt.ES(ns, "owned", mt.ESStore("SecretStore", "vault"), mt.ESReady("False", "SecretSyncedError")),
		mt.SecretStore(ns, "vault"),
		// A ClusterSecretStore used from two namespaces: one finding, namespace "".
		mt.ES("x", "c1", mt.ESStore("ClusterSecretStore", "shared"), failed, mt.ESRefreshed(time.Time{}, time.Hour, true)),
		mt.ES("y", "c2", mt.ESStore("ClusterSecretStore", "shared"), failed),
		mt.ClusterSecretStore("shared", mt.StoreReady("False", "InvalidProviderConfig")),
		// Just created, never synced: within ESFirstSyncGrace it is not judged.
		mt.Created(mt.ES(ns, "new", mt.ESStore("SecretStore", "fresh"), failed, mt.ESRefreshed(time.Time{}, time.Hour, true)), now.Add(-time.Second)),
		// Being deleted: expects nothing.
		mt.ES(ns, "gone", mt.ESStore("SecretStore", "gone"), failed, func(e *model.ExternalSecret) { e.Deleting = true }),
		// Its store is not known to the agent.
		mt.ES(ns, "orphan", mt.ESStore("SecretStore", "missing"), failed),
		// "remote" again after other stores (in name order): the same entry.
		mt.ES(ns, "p", mt.ESStore("SecretStore", "remote")),
	}
	s := mt.NewStore(t, objs...)
	got := mt.Read(s, func(v model.View) SyncHealthResult { return SyncHealth(v, mt.All(), now, 3) })
	want := []StoreReadFailing{
		{Namespace: "", Kind: "ClusterSecretStore", Store: "shared", Failing: 2, Total: 2, LongestSinceSync: 3 * time.Hour, StoreReady: "False", StoreReadyReason: "InvalidProviderConfig"},
		{Namespace: ns, Kind: "SecretStore", Store: "missing", Failing: 1, Total: 1, LongestSinceSync: 3 * time.Hour},
		{Namespace: ns, Kind: "SecretStore", Store: "remote", Failing: 2, Total: 4, LongestSinceSync: 2 * time.Hour, StoreReady: "True", StoreReadyReason: "ValidationUnknown"},
	}
	checkSlice(t, "ReadFails", got.ReadFails, want)

	// ExternalSecrets unavailable: nothing from them.
	got = mt.Read(s, func(v model.View) SyncHealthResult { return SyncHealth(v, mt.AllBut(model.ResExternalSecrets), now, 3) })
	checkSlice(t, "ReadFails", got.ReadFails, nil)
}
