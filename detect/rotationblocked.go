package detect

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// Why an ExternalSecret will not pick up a rotation in its store (the reason
// label of driftwatch_externalsecret_rotation_blocked).
const (
	// RotationCreatedOnce: refreshPolicy CreatedOnce. ESO writes the Secret
	// once and never reads the store again while the Secret stays valid.
	RotationCreatedOnce = "created_once"
	// RotationOnChange: refreshPolicy OnChange. ESO reads the store only when
	// the ExternalSecret's spec or metadata changes.
	RotationOnChange = "on_change"
	// RotationIntervalZero: refreshInterval 0 with the periodic policy (the
	// default). ESO syncs once and does not requeue.
	RotationIntervalZero = "interval_zero"
)

// RotationBlock is an ExternalSecret that will never bring a value rotated
// in its store into its Secret by itself.
type RotationBlock struct {
	Namespace      string
	ExternalSecret string
	Reason         string
}

// RotationBlocked reports the ExternalSecrets whose refresh settings stop
// rotations at the store (ESO v0.20.4 shouldRefresh/shouldRefreshPeriodic:
// CreatedOnce refreshes only while never synced; OnChange only when the synced
// resourceVersion differs from the object's; Periodic with an interval <= 0
// only before the first sync). An ExternalSecret with a generator source
// (dataFrom[].sourceRef.generatorRef) is not reported: a generated password is
// meant to be made once, and ESO's docs pair generators with these settings.
// One whose spec could not be decoded is not judged.
func RotationBlocked(v model.View, avail model.Availability) []RotationBlock {
	if !avail[model.ResExternalSecrets] {
		return nil
	}
	var out []RotationBlock
	for _, e := range v.ExternalSecrets() {
		if e.DecodeErr != "" || e.DataFromGenerators > 0 {
			continue
		}
		reason := ""
		switch e.RefreshPolicy {
		case "CreatedOnce":
			reason = RotationCreatedOnce
		case "OnChange":
			reason = RotationOnChange
		case "", "Periodic":
			// An absent refreshInterval is the CRD's default, 1h.
			if e.RefreshIntervalSet && e.RefreshInterval <= 0 {
				reason = RotationIntervalZero
			}
		}
		if reason != "" {
			out = append(out, RotationBlock{Namespace: e.Namespace, ExternalSecret: e.Name, Reason: reason})
		}
	}
	return out
}
