package collectors

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Helpers for the evidence sentences of typed findings: names, counts and
// conditions, never a value.

// maxListed bounds the names an evidence sentence lists.
const maxListed = 12

// record records a typed finding without emitting its series (the key-level
// finding under --no-key-label, whose series carry counts only).
func (e *emitter) record(d *prometheus.Desc, v float64, labels ...string) *finding.Finding {
	n := len(e.buf)
	f := e.gauge(d, v, labels...)
	e.buf = e.buf[:n]
	return f
}

// expectedBy says who states an expectation: "Deployment api (3 pods)".
func expectedBy(src detect.Source, cs []detect.Consumer, optional bool) string {
	var names []string
	for i, c := range cs {
		if i == maxListed {
			names = append(names, fmt.Sprintf("%d more", len(cs)-i))
			break
		}
		n := c.Kind + " " + c.Name
		if c.Pods > 0 {
			n += fmt.Sprintf(" (%d pods)", c.Pods)
		}
		names = append(names, n)
	}
	how := map[detect.Source]string{detect.SourcePod: "by reference", detect.SourceExternalSecret: "writing it",
		detect.SourceHelm: "rendering it", detect.SourceArgoCD: "delivering it in its last sync", detect.SourceAnnotation: "through driftwatch.io/expected-keys"}[src]
	if optional {
		how = "by an optional reference"
	}
	if len(names) == 0 {
		return string(src) + " (" + how + ")"
	}
	return strings.Join(names, ", ") + " (" + how + ")"
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// keyList names a Secret's keys: "2 keys: user, host".
func keyList(s *model.Secret) string {
	if s == nil || s.Keys.Len() == 0 {
		return "no key"
	}
	var ks []string
	for k := range s.Keys.All() {
		if len(ks) == maxListed {
			ks = append(ks, "…")
			break
		}
		ks = append(ks, k)
	}
	return fmt.Sprintf("%d key(s): %s", s.Keys.Len(), strings.Join(ks, ", "))
}

// readers are the workloads whose running pods read Secret ns/name.
func readers(v model.View, a model.Availability, ns, name string) []finding.Consumer {
	if !a[model.ResPods] {
		return nil
	}
	var out []finding.Consumer
	for _, c := range detect.SecretReaders(v, ns, name) {
		out = append(out, finding.Consumer{Kind: c.Kind, Name: c.Name, Pods: c.Pods})
	}
	return out
}
