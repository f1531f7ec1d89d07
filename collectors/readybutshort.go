package collectors

// The ready_but_short detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/readybutshort.go is the detector itself).

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
	descReadyButShort = declare(finding.Family{
		Name:     "driftwatch_externalsecret_ready_but_short",
		Panel:    "Ready but short",
		Offline:  "needs the Secret ESO wrote and the ExternalSecret's live Ready condition",
		Commands: readyButShortCommands,
		Help:     "Expected keys missing from the target of an ExternalSecret that reports Ready=True.",
		Labels:   []string{"namespace", "externalsecret", "secret", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Ready but short",
		Severity: finding.SevCritical,
	})
)

func init() {
	register(detector{name: "ready_but_short", requires: []model.Resource{model.ResSecrets, model.ResExternalSecrets}, emit: emitReadyButShort, perNamespace: true,
		families: []*prometheus.Desc{descReadyButShort}})
}

func emitReadyButShort(e *emitter, v model.View, a model.Availability, _ time.Time) {
	for _, r := range detect.ReadyButShortES(v, a) {
		f := e.gauge(descReadyButShort, float64(r.Missing), r.Namespace, r.ExternalSecret, r.Secret, r.Reason)
		if f == nil {
			continue
		}
		switch r.Reason {
		case detect.ShortAbsent:
			f.Evidence = fmt.Sprintf("Ready=True %s; its target Secret %s does not exist", r.ReadyReason, r.Secret)
		case detect.ShortEmpty:
			f.Evidence = fmt.Sprintf("Ready=True %s; its target Secret %s holds no key", r.ReadyReason, r.Secret)
		default:
			f.Evidence = fmt.Sprintf("Ready=True %s; the Secret has %d of the %d keys the ExternalSecret renders; missing: %s",
				r.ReadyReason, len(r.Expected)-len(r.MissingKeys), len(r.Expected), strings.Join(r.MissingKeys, ", "))
		}
		f.Consumers = readers(v, a, r.Namespace, r.Secret)
	}
}

func readyButShortCommands(c *finding.Commands) {
	c.ExternalSecretConditions()
	c.Confirm("the keys it renders", "kubectl -n "+c.NS()+" get externalsecret "+c.Name()+
		` -o json | jq '{target: .spec.target, expected: [.spec.data[]?.secretKey], dataFrom: .spec.dataFrom}'`)
	if s := c.F.Labels["secret"]; s != "" {
		c.SecretKeys(finding.Sh(s))
	}
	c.ExternalSecretRefresh()
}
