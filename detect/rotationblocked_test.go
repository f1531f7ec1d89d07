package detect

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

func TestRotationBlocked(t *testing.T) {
	policy := func(p string) func(*model.ExternalSecret) {
		return func(e *model.ExternalSecret) { e.RefreshPolicy = p }
	}
	interval := func(d time.Duration, set bool) func(*model.ExternalSecret) {
		return func(e *model.ExternalSecret) { e.RefreshInterval, e.RefreshIntervalSet = d, set }
	}
	generated := func(e *model.ExternalSecret) { e.DataFrom, e.DataFromGenerators = 1, 1 }
	store := newStore(t,
		es("shop", "periodic"),                              // 1h, the default policy
		es("shop", "default-interval", interval(0, false)),  // absent: the CRD's 1h
		es("shop", "periodic-explicit", policy("Periodic")), // refreshes
		es("shop", "once", policy("CreatedOnce")),           // never again
		es("shop", "on-change", policy("OnChange")),         // only on edits
		es("shop", "zero", interval(0, true)),               // synced once
		es("shop", "zero-periodic", policy("Periodic"), interval(0, true)),
		es("shop", "once-zero", policy("CreatedOnce"), interval(0, true)), // one finding, the policy's
		es("shop", "password", policy("CreatedOnce"), generated),          // a generated password: made once on purpose
		es("shop", "password-zero", interval(0, true), generated),
		es("shop", "broken", policy("CreatedOnce"), esDecodeErr("decode: spec.data: not a list")),
	)
	got := readView(store, func(v model.View) []RotationBlock { return RotationBlocked(v, availAll()) })
	checkSlice(t, "blocked", got, []RotationBlock{
		{Namespace: "shop", ExternalSecret: "on-change", Reason: RotationOnChange},
		{Namespace: "shop", ExternalSecret: "once", Reason: RotationCreatedOnce},
		{Namespace: "shop", ExternalSecret: "once-zero", Reason: RotationCreatedOnce},
		{Namespace: "shop", ExternalSecret: "zero", Reason: RotationIntervalZero},
		{Namespace: "shop", ExternalSecret: "zero-periodic", Reason: RotationIntervalZero},
	})
	// No ExternalSecret cache, no verdict.
	if got := readView(store, func(v model.View) []RotationBlock {
		return RotationBlocked(v, allBut(model.ResExternalSecrets))
	}); len(got) != 0 {
		t.Errorf("unavailable ExternalSecrets: %v", got)
	}
}
