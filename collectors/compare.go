package collectors

// The compare detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/compare.go is the detector itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descCompareMismatch = declare(finding.Family{
		Name:     "driftwatch_compare_mismatch",
		Panel:    "compare mismatches",
		Offline:  "compares two live Secrets (agent compare)",
		Commands: compareCommands,
		Help: "1 for each key of a compare pair (driftwatch.io/compare-with) that does not match; key is empty when a whole Secret is absent " +
			"(with --no-key-label: the number of keys per verdict and hint, key empty). " +
			"verdict: mismatch, missing_from_store, only_in_store, live_secret_absent, store_secret_absent; hint: whitespace or empty.",
		Labels:   []string{"namespace", "secret", "compare_with", "key", "verdict", "hint"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Byte-identical compare",
		Severity: finding.SevInfo,
	})
	descCompareReady = declare(finding.Family{
		Name:   "driftwatch_compare_ready",
		Help:   "1 when both Secrets of a compare pair exist and every key matches (safe to adopt), else 0.",
		Labels: []string{"namespace", "secret", "compare_with"},
		Kind:   finding.KindObject,
		Object: &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
	})
)

func init() {
	register(detector{name: "compare", requires: []model.Resource{model.ResSecrets}, emit: emitCompare, perNamespace: true,
		families: []*prometheus.Desc{descCompareMismatch, descCompareReady}})
}

func emitCompare(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, p := range detect.ComparePairs(v, a) {
		e.gauge(descCompareReady, b2f(p.Ready), p.Namespace, p.Secret, p.CompareWith)
		if !e.cfg.NoKeyLabel {
			for _, k := range p.Keys {
				if f := e.gauge(descCompareMismatch, 1, p.Namespace, p.Secret, p.CompareWith, k.Key, k.Verdict, k.Hint); f != nil {
					f.Evidence = fmt.Sprintf("compared with %s: key %s %s %s", p.CompareWith, k.Key, k.Verdict, k.Hint)
				}
			}
			continue
		}
		// Without key names: the number of keys per verdict and hint, key "".
		type vh struct{ verdict, hint string }
		counts := map[vh]int{}
		var order []vh
		for _, k := range p.Keys {
			x := vh{k.Verdict, k.Hint}
			if counts[x] == 0 {
				order = append(order, x)
			}
			counts[x]++
		}
		for _, x := range order {
			e.gauge(descCompareMismatch, float64(counts[x]), p.Namespace, p.Secret, p.CompareWith, "", x.verdict, x.hint)
		}
	}
}

func compareCommands(c *finding.Commands) {
	c.Confirm("compare the two Secrets key by key (verdicts only)", "kubectl driftwatch compare "+c.NS()+"/"+c.Name()+" "+c.NS()+"/"+c.L("compare_with"))
}
