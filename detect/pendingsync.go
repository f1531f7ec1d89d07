package detect

// The pending_sync detector: keys a GitOps tool's current revision declares
// that wait for a sync (info, never a page).

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// PendingKey is a key a GitOps tool's current revision declares that the
// Secret lacks while the tool has not delivered that revision: it waits for
// a sync. Info, never a page.
type PendingKey struct {
	Namespace string
	Secret    string
	// Key is "" when the Secret is absent and the desired object names no key.
	Key      string
	Source   Source
	Sync     SyncObject
	Revision string
}

// DetectorPendingSync is the pending-sync detector's name.
const DetectorPendingSync = "pending_sync"

// PendingSync lists, per pending desired object, the keys its target Secret
// lacks (all of them when the Secret is absent).
func PendingSync(v model.View, avail model.Availability) []PendingKey {
	if !avail[model.ResSecrets] {
		return nil
	}
	var out []PendingKey
	seen := map[PendingKey]bool{}
	desired := GitOpsDesired(v)
	for i := range desired {
		d := &desired[i]
		if d.Delivery != Pending || !d.sourceAvailable(avail) {
			continue
		}
		t, ok := DesiredTarget(v, &d.Object)
		if !ok || !v.InScope(t.Namespace) {
			continue
		}
		emit := func(key string) {
			p := PendingKey{Namespace: t.Namespace, Secret: t.Secret, Key: key, Source: d.Source, Sync: d.Sync, Revision: d.Object.Revision}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		s, exists := v.Secret(t.Namespace, t.Secret)
		if !exists && len(t.Keys) == 0 {
			emit("")
		}
		for _, k := range t.Keys {
			if k != "" && (!exists || !s.Keys.Has(k)) {
				emit(k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		if a.Sync != b.Sync {
			return syncLess(a.Sync, b.Sync)
		}
		return a.Source < b.Source
	})
	return out
}
