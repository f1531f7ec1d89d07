package detect

// The argocd expectation source: Secrets and ExternalSecrets in the desired
// state the Argo CD API reports.

import (
	"sort"

	"github.com/driftwatch/driftwatch/internal/model"
)

// ArgoExpectations are the expectations of source "argocd": the Secrets and
// ExternalSecrets in the desired state the Argo CD API reports (see
// internal/argocd and model.Store.SetArgoDesired). A desired Secret expects its
// data/stringData keys; a desired ExternalSecret expects the keys it writes into its
// target (ESExpectedKeys rules). An object without keys expects only that the
// Secret exists. Consumers are the Applications.
func ArgoExpectations(v model.View) []Expectation {
	// Built here rather than with expectations.go's set, so this file does not
	// depend on that file's internals.
	type k struct{ ns, secret, key string }
	byKey := map[k]*Expectation{}
	add := func(ns, secret, key string, c Consumer) {
		e := byKey[k{ns, secret, key}]
		if e == nil {
			e = &Expectation{Namespace: ns, Secret: secret, Key: key, Source: SourceArgoCD}
			byKey[k{ns, secret, key}] = e
		}
		for _, have := range e.Consumers {
			if have == c {
				return
			}
		}
		e.Consumers = append(e.Consumers, c)
	}
	for _, d := range v.ArgoDesiredAll() {
		if a, ok := v.App(d.App.Namespace, d.App.Name); ok && a.Deleting {
			continue // being deleted: Argo CD's finalizer deletes its resources first
		}
		c := Consumer{Kind: "Application", Name: d.App.Name}
		var target string
		var keys []string
		switch d.Kind {
		case "Secret":
			target, keys = d.Name, d.DataKeys
		case "ExternalSecret":
			target = d.Target
			if target == "" {
				target = d.Name
			}
			keys = ESExpectedKeys(&model.ExternalSecret{DataKeys: d.SpecDataKeys, TemplateKeys: d.TemplateKeys,
				HasTemplate: d.HasTemplate, TemplateMergePolicy: d.TemplateMergePolicy})
		default:
			continue
		}
		if len(keys) == 0 {
			add(d.Namespace, target, "", c)
		}
		for _, key := range keys {
			if key != "" {
				add(d.Namespace, target, key, c)
			}
		}
	}
	out := make([]Expectation, 0, len(byKey))
	for _, e := range byKey {
		sortConsumers(e.Consumers)
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Secret != b.Secret {
			return a.Secret < b.Secret
		}
		return a.Key < b.Key
	})
	return out
}
