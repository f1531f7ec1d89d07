package collectors

// The rotation_blocked detector: its metric family (the catalog entry), its
// registry entry and how it emits (detect/rotationblocked.go is the detector).

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var descRotationBlocked = declare(finding.Family{
	Name:     "driftwatch_externalsecret_rotation_blocked",
	Panel:    "rotation blocked",
	Offline:  "needs the ExternalSecret's live status",
	Commands: (*finding.Commands).Object,
	Help: "1 when an ExternalSecret will never bring a value rotated in its store into its Secret by itself: " +
		"refreshPolicy CreatedOnce (created_once) or OnChange (on_change), or refreshInterval 0 (interval_zero). " +
		"ExternalSecrets with a generator source are not reported.",
	Labels:   []string{"namespace", "externalsecret", "reason"},
	Kind:     finding.KindFinding,
	Object:   &finding.ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
	Class:    "Sync health",
	Severity: finding.SevWarning,
})

func init() {
	register(detector{name: "rotation_blocked", requires: []model.Resource{model.ResExternalSecrets},
		emit: emitRotationBlocked, families: []*prometheus.Desc{descRotationBlocked}, perNamespace: true})
}

var rotationEvidence = map[string]string{
	detect.RotationCreatedOnce:  "refreshPolicy CreatedOnce: ESO wrote the Secret once and does not read the store again while the Secret exists; a rotated value reaches it only if the Secret is deleted (ESO writes it anew)",
	detect.RotationOnChange:     "refreshPolicy OnChange: ESO reads the store only when the ExternalSecret's spec or metadata changes; a rotated value waits for the next edit (or a force-sync annotation)",
	detect.RotationIntervalZero: "refreshInterval 0: ESO synced once and does not requeue; a rotated value waits for an edit of the ExternalSecret (or a force-sync annotation)",
}

func emitRotationBlocked(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, b := range detect.RotationBlocked(v, a) {
		if f := e.gauge(descRotationBlocked, 1, b.Namespace, b.ExternalSecret, b.Reason); f != nil {
			f.Evidence = rotationEvidence[b.Reason]
		}
	}
}
