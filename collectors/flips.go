package collectors

// The flips detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/flips.go is the detector itself).

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descFlipsTotal = declare(finding.Family{
		Name:     "driftwatch_secret_flips_total",
		NoPanel:  "a count since the agent started, history rather than a current failure: the Secrets flapping now are the class \"flapping Secrets\" (driftwatch_secret_flapping), and the overview's \"Secrets with the most flips\" table shows the counts",
		Offline:  "needs the Secret's observed history",
		Commands: flipsCommands,
		Help:     "Times a key of the Secret returned to an earlier value (A→B→A) since driftwatch started; only Secrets that flipped.",
		Labels:   []string{"namespace", "secret"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Flipping values",
		Severity: finding.SevInfo,
		Type:     finding.Counter,
	})
	descFlapping = declare(finding.Family{
		Name:     "driftwatch_secret_flapping",
		Panel:    "flapping Secrets",
		Offline:  "needs the Secret's observed history",
		Commands: flipsCommands,
		Help:     "Flips of the Secret within the history window, when at least the flapping threshold; writers are the managedFields managers that wrote its data in the window.",
		Labels:   []string{"namespace", "secret", "writers"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Flipping values",
		Severity: finding.SevCritical,
	})
)

// maxWritersLabel bounds the writers label of driftwatch_secret_flapping (bytes;
// cut on a manager-name boundary with ",..." when longer).
const maxWritersLabel = 200

func init() {
	register(detector{name: "flips", requires: []model.Resource{model.ResSecrets}, emit: emitFlips,
		families: []*prometheus.Desc{descFlipsTotal, descFlapping}})
}

func emitFlips(e *emitter, v model.View, a model.Availability, now time.Time) {
	for _, f := range detect.Flapping(v, a, now, e.cfg.FlapThreshold) {
		if fc := e.counter(descFlipsTotal, float64(f.Total), f.Namespace, f.Secret); fc != nil {
			fc.Evidence = fmt.Sprintf("a key returned to an earlier value %d time(s) since the agent started", f.Total)
		}
		if f.Flapping {
			if fl := e.gauge(descFlapping, float64(f.FlipsInWindow), f.Namespace, f.Secret, joinBounded(f.Writers, maxWritersLabel)); fl != nil {
				fl.Evidence = fmt.Sprintf("%d return(s) to an earlier value within the flip window; data writers: %s",
					f.FlipsInWindow, strings.Join(f.Writers, ", "))
				fl.Consumers = readers(v, a, f.Namespace, f.Secret)
			}
		}
	}
}

func flipsCommands(c *finding.Commands) {
	c.Confirm("the writers fighting over the data", "kubectl -n "+c.NS()+" get secret "+c.Name()+" --show-managed-fields -o json | "+finding.JQManagers)
}
