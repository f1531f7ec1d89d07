package detect

import (
	"sort"
	"time"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Trap is an Argo CD Application ignoreDifferences path that reaches into the
// elements of a list (or ignores a whole known list field). With the sync option
// RespectIgnoreDifferences=true Argo CD takes the ignored part from the live object
// when it syncs, and for a list that means the whole list: entries added in Git
// (a new ExternalSecret spec.data key) never ship. Without the option the diff
// hides the drift, so the Application reports Synced while the list differs.
//
// A path that ignores a whole list field (ExternalSecret /spec/data, .spec.dataFrom)
// counts too: the list is rebuilt from live exactly as above. An ancestor such as
// /spec does not: freezing a whole spec is a deliberate choice, not the trap.
type Trap struct {
	Namespace   string
	Application string
	Group       string
	Kind        string
	// Path is the path as written (jsonPointer or jq). For kind Secret, a jq path
	// with a select(...) filter is exported in canonical form with the condition
	// replaced by "…": a filter on a Secret could compare against a value.
	Path                     string
	RespectIgnoreDifferences bool
	// Reach is whole_list or into_element.
	Reach argocd.Reach
}

// maxPathLabel bounds the path label.
const maxPathLabel = 256

// IgnoreListTraps finds the ignoreDifferences entries of every Application that
// reach into list elements. Paths that do not parse are skipped (IgnorePathErrors
// lists them).
func IgnoreListTraps(v model.View, avail model.Availability) []Trap {
	if !avail[model.ResApplications] {
		return nil
	}
	var out []Trap
	for _, app := range v.Apps() {
		if app.DecodeErr != "" {
			continue
		}
		type key struct{ group, kind, path string }
		seen := map[key]bool{}
		for _, d := range app.IgnoreDifferences {
			add := func(raw string, p argocd.Path) {
				r := p.Reach(d.Group, d.Kind)
				if r == argocd.ReachNone {
					return
				}
				label := raw
				if p.Syntax == argocd.JQ && p.HasFilter() && (d.Kind == "Secret" || d.Kind == "*") {
					label = redactFilters(p)
				}
				if len(label) > maxPathLabel {
					label = label[:maxPathLabel] + "…"
				}
				k := key{d.Group, d.Kind, label}
				if seen[k] {
					return
				}
				seen[k] = true
				out = append(out, Trap{Namespace: app.Namespace, Application: app.Name, Group: d.Group, Kind: d.Kind,
					Path: label, RespectIgnoreDifferences: app.RespectIgnoreDifferences, Reach: r})
			}
			for _, s := range d.JSONPointers {
				if p, err := argocd.ParseJSONPointer(s); err == nil {
					add(s, p)
				}
			}
			for _, s := range d.JQPathExpressions {
				if p, err := argocd.ParseJQ(s); err == nil {
					add(s, p)
				}
			}
		}
	}
	return out
}

func redactFilters(p argocd.Path) string {
	q := argocd.Path{Syntax: p.Syntax, IntoList: p.IntoList, Segments: append([]argocd.Segment(nil), p.Segments...)}
	for i := range q.Segments {
		if q.Segments[i].Kind == argocd.SegFilter {
			q.Segments[i].Name = "…"
		}
	}
	return q.String()
}

// IgnorePathError is an ignoreDifferences path driftwatch could not parse.
type IgnorePathError struct {
	Namespace   string
	Application string
	Kind        string
	Err         string
}

// IgnorePathErrors lists the ignoreDifferences paths that do not parse, so they
// can be logged: such a path cannot be judged either way.
func IgnorePathErrors(v model.View, avail model.Availability) []IgnorePathError {
	if !avail[model.ResApplications] {
		return nil
	}
	var out []IgnorePathError
	for _, app := range v.Apps() {
		for _, d := range app.IgnoreDifferences {
			for _, s := range d.JSONPointers {
				if _, err := argocd.ParseJSONPointer(s); err != nil {
					out = append(out, IgnorePathError{app.Namespace, app.Name, d.Kind, err.Error()})
				}
			}
			for _, s := range d.JQPathExpressions {
				if _, err := argocd.ParseJQ(s); err != nil {
					out = append(out, IgnorePathError{app.Namespace, app.Name, d.Kind, err.Error()})
				}
			}
		}
	}
	return out
}

// NotConverging is an Application that stays OutOfSync although its last sync
// operation finished Succeeded: the sync does not change what Argo CD compares
// (an ignore-paths trap, a mutating webhook, a controller that rewrites the
// object), so it will never converge.
type NotConverging struct {
	Namespace   string
	Application string
	// Seconds since the last operation finished.
	Seconds float64
}

// NotConvergingApps reports Applications whose sync status is OutOfSync while
// their last operation finished Succeeded more than threshold ago.
func NotConvergingApps(v model.View, avail model.Availability, now time.Time, threshold time.Duration) []NotConverging {
	if !avail[model.ResApplications] {
		return nil
	}
	var out []NotConverging
	for _, app := range v.Apps() {
		if app.DecodeErr != "" || app.SyncStatus != "OutOfSync" || app.OperationPhase != "Succeeded" || app.OperationFinishedAt.IsZero() {
			continue
		}
		age := now.Sub(app.OperationFinishedAt)
		if age > threshold {
			out = append(out, NotConverging{Namespace: app.Namespace, Application: app.Name, Seconds: age.Seconds()})
		}
	}
	return out
}

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
