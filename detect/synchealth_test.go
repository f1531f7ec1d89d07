package detect

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

func TestSyncHealth(t *testing.T) {
	const ns = "app"
	now := fxT0.Add(3 * time.Hour)
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
			objs: []any{es(ns, "ok", esRefreshed(now.Add(-10*time.Minute), time.Hour, true)), secretStore("SecretStore", ns, "vault", "True", "Valid")},
			ages: []ESSyncAge{age("ok", 10*time.Minute, false)},
		},
		{
			name: "NotReady: False with reason, Unknown without reason",
			objs: []any{
				es(ns, "f", esReady("False", "SecretSyncedError"), esRefreshed(time.Time{}, time.Hour, true)),
				es(ns, "u", esReady("Unknown", ""), esRefreshed(time.Time{}, time.Hour, true)),
				es(ns, "none", esReady("", ""), esRefreshed(time.Time{}, time.Hour, true)),
			},
			notReady: []ESNotReady{
				{Namespace: ns, ExternalSecret: "f", Reason: "SecretSyncedError"},
				{Namespace: ns, ExternalSecret: "u", Reason: "Unknown"},
			},
		},
		{
			name:     "key removed after a good sync: NotReady and the age keeps growing, overdue",
			objs:     []any{es(ns, "stale", esReady("False", "SecretSyncedError"), esRefreshed(now.Add(-150*time.Minute), time.Hour, true))},
			notReady: []ESNotReady{{Namespace: ns, ExternalSecret: "stale", Reason: "SecretSyncedError"}},
			ages:     []ESSyncAge{age("stale", 150*time.Minute, true)},
		},
		{
			name: "overdue only beyond factor × interval (factor 2)",
			objs: []any{
				es(ns, "at", esRefreshed(now.Add(-2*time.Hour), time.Hour, true)),
				es(ns, "beyond", esRefreshed(now.Add(-2*time.Hour-time.Second), time.Hour, true)),
				es(ns, "within", esRefreshed(now.Add(-90*time.Minute), time.Hour, true)),
			},
			ages: []ESSyncAge{age("at", 2*time.Hour, false), age("beyond", 2*time.Hour+time.Second, true), age("within", 90*time.Minute, false)},
		},
		{
			name:   "fractional factor",
			factor: 1.5,
			objs:   []any{es(ns, "e", esRefreshed(now.Add(-100*time.Minute), time.Hour, true))},
			ages:   []ESSyncAge{age("e", 100*time.Minute, true)},
		},
		{
			name:   "factor 0 disables overdue",
			factor: -1,
			objs:   []any{es(ns, "e", esRefreshed(now.Add(-100*time.Hour), time.Hour, true))},
			ages:   []ESSyncAge{age("e", 100*time.Hour, false)},
		},
		{
			name: "refreshInterval 0 never refreshes: never overdue",
			objs: []any{es(ns, "once", esRefreshed(now.Add(-1000*time.Hour), 0, true))},
			ages: []ESSyncAge{age("once", 1000*time.Hour, false)},
		},
		{
			name: "refreshInterval not set: never overdue",
			objs: []any{es(ns, "unset", esRefreshed(now.Add(-1000*time.Hour), 0, false))},
			ages: []ESSyncAge{age("unset", 1000*time.Hour, false)},
		},
		{
			name: "refreshTime in the future (clock skew) clamps to 0",
			objs: []any{es(ns, "skew", esRefreshed(now.Add(time.Minute), time.Hour, true))},
			ages: []ESSyncAge{age("skew", 0, false)},
		},
		{
			name: "v1beta1 and undecodable ExternalSecrets",
			objs: []any{
				es(ns, "old", esAPIVersion("external-secrets.io/v1beta1"), esReady("False", "SecretSyncedError"), esRefreshed(now.Add(-time.Minute), time.Hour, true)),
				es(ns, "bad", esDecodeErr("decode: x"), esReady("False", "X"), esRefreshed(now.Add(-time.Minute), time.Hour, true)),
			},
			notReady: []ESNotReady{{Namespace: ns, ExternalSecret: "old", Reason: "SecretSyncedError"}},
			ages:     []ESSyncAge{age("old", time.Minute, false)},
		},
		{
			name: "stores not ready, both kinds",
			objs: []any{
				secretStore("SecretStore", ns, "good", "True", "Valid"),
				secretStore("SecretStore", ns, "bad", "False", "InvalidProviderConfig"),
				secretStore("SecretStore", ns, "unk", "Unknown", ""),
				secretStore("SecretStore", ns, "nocond", "", ""),
				secretStore("ClusterSecretStore", "", "cbad", "False", "ValidationFailed"),
				secretStore("ClusterSecretStore", "", "cgood", "True", "Valid"),
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
				st := secretStore("SecretStore", ns, "x", "False", "Y")
				st.DecodeErr = "decode: x"
				return st
			}()},
		},
		{
			name: "SecretStores unavailable: only ClusterSecretStores reported",
			objs: []any{
				secretStore("SecretStore", ns, "bad", "False", "R"),
				secretStore("ClusterSecretStore", "", "cbad", "False", "R"),
			},
			avail:  allBut(model.ResSecretStores),
			stores: []StoreNotReady{{Namespace: "", Kind: "ClusterSecretStore", Store: "cbad", Reason: "R"}},
		},
		{
			name: "ClusterSecretStores unavailable: only SecretStores reported",
			objs: []any{
				secretStore("SecretStore", ns, "bad", "False", "R"),
				secretStore("ClusterSecretStore", "", "cbad", "False", "R"),
			},
			avail:  allBut(model.ResClusterSecretStores),
			stores: []StoreNotReady{{Namespace: ns, Kind: "SecretStore", Store: "bad", Reason: "R"}},
		},
		{
			name: "ExternalSecrets unavailable: no ExternalSecret output, stores remain",
			objs: []any{
				es(ns, "f", esReady("False", "E"), esRefreshed(now.Add(-5*time.Hour), time.Hour, true)),
				secretStore("SecretStore", ns, "bad", "False", "R"),
			},
			avail:  allBut(model.ResExternalSecrets),
			stores: []StoreNotReady{{Namespace: ns, Kind: "SecretStore", Store: "bad", Reason: "R"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = availAll()
			}
			factor := tc.factor
			switch {
			case factor == 0:
				factor = 2
			case factor < 0:
				factor = 0
			}
			s := newStore(t, tc.objs...)
			got := readView(s, func(v model.View) SyncHealthResult { return SyncHealth(v, avail, now, factor) })
			checkSlice(t, "NotReady", got.NotReady, tc.notReady)
			checkSlice(t, "Ages", got.Ages, tc.ages)
			checkSlice(t, "Stores", got.Stores, tc.stores)
		})
	}
}
