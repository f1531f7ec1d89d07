package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestRotationBlocked(t *testing.T) {
	policy, interval := mt.ESRefreshPolicy, mt.ESRefreshInterval
	store := mt.NewStore(t,
		mt.ES("shop", "periodic"),                             // 1h, the default policy
		mt.ES("shop", "default-interval", interval(0, false)), // absent: the CRD's 1h
		mt.ES("shop", "periodic-explicit", policy("Periodic")),
		mt.ES("shop", "once", policy("CreatedOnce")),   // never again
		mt.ES("shop", "on-change", policy("OnChange")), // only on edits
		mt.ES("shop", "zero", interval(0, true)),       // synced once
		mt.ES("shop", "zero-periodic", policy("Periodic"), interval(0, true)),
		mt.ES("shop", "once-zero", policy("CreatedOnce"), interval(0, true)), // one finding, the policy's
		mt.ES("shop", "password", policy("CreatedOnce"), mt.ESGenerated(1)),  // a generated password: made once on purpose
		mt.ES("shop", "password-zero", interval(0, true), mt.ESGenerated(1)),
		mt.ES("shop", "broken", policy("CreatedOnce"), mt.ESDecodeErr("decode: spec.data: not a list")),
	)
	got := mt.Read(store, func(v model.View) []RotationBlock { return RotationBlocked(v, mt.All()) })
	checkSlice(t, "blocked", got, []RotationBlock{
		{Namespace: "shop", ExternalSecret: "on-change", Reason: RotationOnChange},
		{Namespace: "shop", ExternalSecret: "once", Reason: RotationCreatedOnce},
		{Namespace: "shop", ExternalSecret: "once-zero", Reason: RotationCreatedOnce},
		{Namespace: "shop", ExternalSecret: "zero", Reason: RotationIntervalZero},
		{Namespace: "shop", ExternalSecret: "zero-periodic", Reason: RotationIntervalZero},
	})
	// No ExternalSecret cache, no verdict.
	if got := mt.Read(store, func(v model.View) []RotationBlock {
		return RotationBlocked(v, mt.AllBut(model.ResExternalSecrets))
	}); len(got) != 0 {
		t.Errorf("unavailable ExternalSecrets: %v", got)
	}
}
