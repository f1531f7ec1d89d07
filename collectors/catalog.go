package collectors

// The exporter's side of the catalog: every family is declared once
// (finding.Family, in the collectors file of the detector that emits it) and
// here turned into its Prometheus descriptor, tied to the collector that
// emits it.

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/finding"
)

// Collectors of the catalog's families.
const (
	collFindings = "findings"
	collSelf     = "self"
	collArgoCD   = "argocd"
	collFlux     = "flux"
	collDesired  = "desired"
)

// declare declares a family the Findings collector emits and returns its
// descriptor.
func declare(f finding.Family) *prometheus.Desc { return declareFor(collFindings, f) }

// declareFor declares a family emitted by the named collector: "findings"
// (the detectors' Findings), "self" (Self), "argocd" (ArgoCDAPI), "flux" (FluxArtifacts) or "desired"
// (DesiredSources).
// Each describes only its own.
func declareFor(collector string, f finding.Family) *prometheus.Desc {
	if collector != collFindings && f.Kind != finding.KindHealth {
		panic(fmt.Sprintf("collectors: family %s of the %s collector must be health", f.Name, collector))
	}
	fam := finding.Declare(f)
	d := prometheus.NewDesc(fam.Name, fam.Help, fam.Labels, nil)
	familyOf[d] = fam
	textOf[d] = newTextForm(fam, d)
	declared = append(declared, declaration{fam, d, collector})
	return d
}

type declaration struct {
	fam       *finding.Family
	desc      *prometheus.Desc
	collector string
}

// declared holds every family in declaration order with its descriptor.
var declared []declaration

// familyOf maps every descriptor to its family (prometheus.Desc does not
// expose its name, help or type).
var familyOf = map[*prometheus.Desc]*finding.Family{}

// valueType is the Prometheus type of a family's series.
func valueType(f *finding.Family) prometheus.ValueType {
	if f.Type == finding.Counter {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

// describe sends the descriptors of one collector's families.
func describe(collector string, ch chan<- *prometheus.Desc) {
	for _, d := range declared {
		if d.collector == collector {
			ch <- d.desc
		}
	}
}
