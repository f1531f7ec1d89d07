package collectors

// The last_applied detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/lastapplied.go is the detector itself).

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
	descLastAppliedTruncated = declare(finding.Family{
		Name:       "driftwatch_last_applied_truncated",
		Panel:      "truncated last-applied",
		Offline:    "needs the live object's annotations and managed fields",
		Commands:   truncatedCommands,
		Help:       "Entries (ExternalSecret spec.data secretKeys, Secret key names) missing between the desired, last-applied and live lists; cause says which.",
		Labels:     []string{"namespace", "kind", "name", "cause"},
		Kind:       finding.KindFinding,
		Object:     &finding.ObjectRef{KindLabel: "kind", Kinds: []string{"Secret", "ExternalSecret"}, NameLabel: "name"},
		Class:      "Truncated last-applied",
		Severity:   finding.SevWarning,
		SeverityBy: &finding.SeverityBy{Label: "cause", Values: map[string]finding.Severity{detect.CauseTruncatedPatch: finding.SevCritical}},
	})
)

func init() {
	// Secrets are the base; the ExternalSecret half is gated inside the detector
	// on the ExternalSecrets cache, the desired lists on the Helm cache.
	register(detector{name: "last_applied", requires: []model.Resource{model.ResSecrets}, emit: emitLastApplied, perNamespace: true,
		families: []*prometheus.Desc{descLastAppliedTruncated}})
}

func emitLastApplied(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, t := range detect.LastAppliedTruncated(v, a) {
		f := e.gauge(descLastAppliedTruncated, float64(t.Missing), t.Namespace, t.Kind, t.Name, t.Cause)
		if f == nil {
			continue
		}
		f.Evidence = map[string]string{
			detect.CauseTruncatedPatch:     "the last kubectl apply (its writer still holds the list) lacked %d entr(y/ies) of the desired state (Argo CD target or Helm release)",
			detect.CauseRevertedAfterApply: "the last apply held every desired entry, but the live object lacks %d of them",
			detect.CauseLiveShorter:        "the live object lacks %d entr(y/ies) of its last kubectl apply; the next apply restores them",
			detect.CauseLastAppliedShorter: "the live list has %d entr(y/ies) its last kubectl apply lacks; the next apply drops them",
		}[t.Cause]
		f.Evidence = fmt.Sprintf(f.Evidence, t.Missing)
	}
}

func truncatedCommands(c *finding.Commands) {
	ns, name := c.NS(), c.Name()
	kind := finding.Sh(strings.ToLower(c.F.Labels["kind"]))
	c.Confirm("the annotation's size", "kubectl -n "+ns+" get "+kind+" "+name+
		` -o json | jq '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] // "" | length'`)
	c.Confirm("who wrote the object", "kubectl -n "+ns+" get "+kind+" "+name+" --show-managed-fields -o json | "+finding.JQManagers)
	c.Fix("apply it server-side from now on", "kubectl apply --server-side --force-conflicts -f <manifest>")
}
