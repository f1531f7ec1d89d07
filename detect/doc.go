// Package detect holds driftwatch's detectors: pure functions of the value-free
// model (model.View) and the availability of each watched resource. They do no I/O
// and keep no state; the collectors call them at scrape time.
//
// A detector never reports on a resource whose cache is not available (not synced,
// access lost, CRD absent): an unsynced Secret cache would make every Secret look
// absent.
package detect

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Source says where an expectation of a Secret key came from.
type Source string

const (
	SourceExternalSecret Source = "externalsecret"
	SourcePod            Source = "pod"
	SourceHelm           Source = "helm"
	SourceArgoCD         Source = "argocd"
	SourceAnnotation     Source = "annotation"
)

// Consumer is whatever stated an expectation: a workload for pods, an
// ExternalSecret, a Helm release, or the annotated object.
type Consumer struct {
	Kind string
	Name string
	// Pods is how many pods of a workload hold the expectation (pod source only).
	Pods int
}

func sortConsumers(cs []Consumer) {
	if len(cs) < 2 {
		return
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Kind != cs[j].Kind {
			return cs[i].Kind < cs[j].Kind
		}
		return cs[i].Name < cs[j].Name
	})
}

func ref(ns, name string) model.Ref { return model.Ref{Namespace: ns, Name: name} }
