package detect

// The flux_ignore_trap detector: Kustomization spec.ignore paths that keep every
// change of a Secret's data or an ExternalSecret's spec.data from shipping.

import (
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/driftwatch/driftwatch/internal/model"
)

// DetectorFluxIgnoreTrap is the detector's name, as driftwatch.io/ignore names it.
const DetectorFluxIgnoreTrap = "flux_ignore_trap"

// FluxIgnoreTrap is a spec.ignore path that keeps every change of a Secret's
// data or an ExternalSecret's spec.data (or dataFrom) from shipping to the
// objects it selects: kustomize-controller leaves the path out of drift
// detection, so a commit that changes only that list applies nothing, and when
// something else changes it sends live's value for the path (fluxcd/pkg/ssa
// computeDriftedPaths). Biting: an object it selects lacks entries the
// claimed revision declares.
type FluxIgnoreTrap struct {
	Namespace, KS string
	Kind, Path    string
	Biting        bool
	// Objects: the objects it selects (namespace/name), Missing: the entries
	// missing from them.
	Objects []string
	Missing []string
}

// fluxTrapPath reports whether an ignored JSON pointer covers the whole list
// or map of entries of kind: the document, the spec (ExternalSecret), the
// data map (Secret: kustomize-controller turns stringData into data first, so
// /stringData matches nothing).
func fluxTrapPath(kind, p string) bool {
	p = strings.TrimSuffix(p, "/")
	switch kind {
	case "ExternalSecret":
		return p == "" || p == "/spec" || p == "/spec/data" || p == "/spec/dataFrom"
	case "Secret":
		return p == "" || p == "/data"
	}
	return false
}

// FluxIgnoreTraps finds them, for every Kustomization with a build (claimed
// or not: a trap is set before it bites), on the determined objects of its
// inventory its rules select.
func FluxIgnoreTraps(v model.View) []FluxIgnoreTrap {
	var out []FluxIgnoreTrap
	for _, k := range v.Kustomizations() {
		if len(k.Ignore) == 0 {
			continue
		}
		d, ok := v.FluxDesiredOf(k.Namespace, k.Name)
		if !ok || !d.Judged() {
			continue
		}
		_, claimed := fluxClaim(v, k)
		type tk struct{ kind, path string }
		traps := map[tk]*FluxIgnoreTrap{}
		for _, r := range k.Ignore {
			match := fluxSelector(r)
			for _, o := range d.Objects {
				if o.Undetermined != "" || !k.Manages(o.Group, o.Kind, o.Namespace, o.Name) || !match(o) {
					continue
				}
				for _, p := range r.Paths {
					if !fluxTrapPath(o.Kind, p) {
						continue
					}
					key := tk{o.Kind, p}
					t := traps[key]
					if t == nil {
						t = &FluxIgnoreTrap{Namespace: k.Namespace, KS: k.Name, Kind: o.Kind, Path: p}
						traps[key] = t
					}
					t.Objects = append(t.Objects, o.Namespace+"/"+o.Name)
					if claimed {
						if missing, absent := FluxMissingEntries(v, o); len(missing) > 0 && !absent {
							t.Biting = true
							t.Missing = append(t.Missing, missing...)
						}
					}
				}
			}
		}
		for _, t := range traps {
			sort.Strings(t.Objects)
			t.Objects = dedupe(t.Objects)
			sort.Strings(t.Missing)
			t.Missing = dedupe(t.Missing)
			out = append(out, *t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.KS != b.KS {
			return a.KS < b.KS
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Path < b.Path
	})
	return out
}

func dedupe(s []string) []string {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// fluxSelector matches an ignore rule's target the way fluxcd/pkg/ssa's
// jsondiff.SelectorRegex does (anchored regular expressions for group,
// version, kind, name and namespace; label and annotation selectors), on the
// object as the build declares it. An invalid selector matches nothing
// (kustomize-controller fails the reconcile on it).
func fluxSelector(r model.FluxIgnoreRule) func(model.Declared) bool {
	if !r.HasTarget {
		return func(model.Declared) bool { return true }
	}
	re := func(p string) (func(string) bool, bool) {
		if p == "" {
			return func(string) bool { return true }, true
		}
		c, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, false
		}
		return c.MatchString, true
	}
	group, ok1 := re(r.Group)
	version, ok2 := re(r.Version)
	kind, ok3 := re(r.Kind)
	name, ok4 := re(r.Name)
	ns, ok5 := re(r.Namespace)
	ls, err1 := labels.Parse(r.LabelSelector)
	as, err2 := labels.Parse(r.AnnotationSelector)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || err1 != nil || err2 != nil {
		return func(model.Declared) bool { return false }
	}
	_ = version // the build keeps no API version: a version pattern is taken to match
	return func(o model.Declared) bool {
		return group(o.Group) && kind(o.Kind) && name(o.Name) && ns(o.Namespace) &&
			ls.Matches(labels.Set(o.Labels)) && as.Matches(labels.Set(o.Annotations))
	}
}
