package detect

// The argocd_ignore_list_trap detector: Argo CD ignoreDifferences entries that keep
// list entries added in Git from shipping.

import (
	"path"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/argocd/ignorepath"
	"github.com/driftwatch/driftwatch/internal/argocd/syncpatch"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Trap is an Argo CD Application ignoreDifferences entry that keeps entries added
// in Git from reaching an object the Application manages.
//
// With the sync option RespectIgnoreDifferences=true Argo CD carries the live
// value of every ignored field into the manifest it applies: it normalizes live
// and target, computes the patch from the normalized live object back to the live
// one and applies it to the normalized target (controller/sync.go
// normalizeTargetResources, v2.14 and v3). For a kind outside client-go's scheme
// (every CRD, ExternalSecret included) that is a JSON merge patch, in which a list
// is a value: a path that steps into list elements puts live's whole list into the
// target, so entries added in Git never ship, while the sync reports Succeeded and
// the Application stays OutOfSync. For built-in kinds it is a strategic merge
// patch: lists with a merge key (webhooks, containers, env, volumes) merge per
// element and are no trap; atomic lists (args, tolerations, a webhook's rules)
// still are. syncpatch reads that from the real k8s.io/api types.
//
// The patch only carries what normalization removed from live: a path naming a
// field live lacks changes nothing. Effect says how sure the finding is:
//
//   - EffectRebuildsList: the ignored part is always in live (the list elements
//     themselves, a whole known list, or a field the kind's schema requires or its
//     CRD defaults on every element, such as an ExternalSecret entry's
//     remoteRef.conversionStrategy): every sync rebuilds the list from live.
//   - EffectRebuildsListIfPresent: only when live has the (optional) field, or,
//     for managedFieldsManagers, when that manager owns fields in a list; live
//     values are not something driftwatch reads. Such a trap is raised to
//     EffectRebuildsList once it is seen biting: the Application is OutOfSync at
//     the revision its last sync applied with phase Succeeded, and a managed
//     object the entry matches is itself OutOfSync.
//   - EffectHidesNewEntries: without RespectIgnoreDifferences the sync applies
//     Git as it is, so only a path that ignores whole elements (or the whole list)
//     matters: entries added in Git leave the diff unchanged, the Application
//     reports Synced and an automated sync never ships them.
//
// An entry is judged only against the kinds of the (non-hook) resources the
// Application manages (status.resources) that it matches: an entry for a kind the
// Application does not manage changes nothing.
type Trap struct {
	Namespace   string
	Application string
	Group       string
	Kind        string
	// Path is the path as written (jsonPointer or jq), or
	// "managedFieldsManagers:<manager>". For kind Secret, a jq path with a
	// select(...) filter is exported in canonical form with the condition
	// replaced by "…": a filter on a Secret could compare against a value.
	Path                     string
	RespectIgnoreDifferences bool
	Effect                   TrapEffect
}

// TrapEffect says what an ignoreDifferences trap does (see Trap).
type TrapEffect string

const (
	EffectRebuildsList          TrapEffect = "rebuilds_list"
	EffectRebuildsListIfPresent TrapEffect = "rebuilds_list_if_present"
	EffectHidesNewEntries       TrapEffect = "hides_new_entries"
)

// rank orders effects by certainty, for an entry matching several kinds.
func (e TrapEffect) rank() int {
	switch e {
	case EffectRebuildsList:
		return 3
	case EffectRebuildsListIfPresent:
		return 2
	case EffectHidesNewEntries:
		return 1
	}
	return 0
}

// maxPathLabel bounds the path label.
const maxPathLabel = 256

// alwaysPresent lists, per kind and list field, the element fields that are
// in every live element: required by the CRD's schema or defaulted by it (the
// ESO v0.20.4 CRDs, external-secrets.io/v1 and v1beta1: secretKey, remoteRef and
// remoteRef.key are required; remoteRef.conversionStrategy, decodingStrategy and
// metadataPolicy default to Default, None and None). The e2e checks the defaults
// on the real apiserver with ESO's own CRD bundle.
var alwaysPresent = map[[2]string]map[string][][]string{
	{"external-secrets.io", "ExternalSecret"}: {
		"spec.data": {{"secretKey"}, {"remoteRef"}, {"remoteRef", "key"}, {"remoteRef", "conversionStrategy"},
			{"remoteRef", "decodingStrategy"}, {"remoteRef", "metadataPolicy"}},
		"spec.dataFrom": {},
	},
}

// present reports whether the part of list elements that segs[list:] selects is
// in every live element of a non-empty list.
func present(group, kind string, segs []ignorepath.Segment, list int) bool {
	step := segs[list]
	if step.Kind != ignorepath.SegIter && (step.Kind != ignorepath.SegIndex || step.Index != 0) {
		return false // [N], [N:M], "-": the element may not exist
	}
	var rest []string
	for _, s := range segs[list+1:] {
		if s.Kind != ignorepath.SegField {
			return false // a filter or a nested list: depends on the values
		}
		rest = append(rest, s.Name)
	}
	if len(rest) == 0 {
		return true // the elements themselves
	}
	var field []string
	for _, s := range segs[:list] {
		if s.Kind == ignorepath.SegField {
			field = append(field, s.Name)
		}
	}
	for _, f := range alwaysPresent[[2]string{group, kind}][strings.Join(field, ".")] {
		if slices.Equal(f, rest) {
			return true
		}
	}
	return false
}

// hidesEntries reports whether a path that steps into the list at segs[list]
// ignores whole elements from there on (every element, or an open slice), so an
// entry appended in Git leaves the normalized diff unchanged.
func hidesEntries(segs []ignorepath.Segment, list int) bool {
	step := segs[list]
	open := step.Kind == ignorepath.SegIter || (step.Kind == ignorepath.SegSlice && strings.HasSuffix(step.Name, ":"))
	return open && list == len(segs)-1
}

// trapEffect judges one path on objects of one concrete group/kind.
func trapEffect(group, kind string, p ignorepath.Path, respect bool) TrapEffect {
	r := syncpatch.Classify(group, kind, p)
	if r.OutsideSchema {
		return ""
	}
	whole := !r.Replaces && r.Patch == syncpatch.JSONMerge && p.Reach(group, kind) == ignorepath.ReachWholeList
	if !r.Replaces && !whole {
		return ""
	}
	if !respect {
		if whole || hidesEntries(p.Segments, r.List) {
			return EffectHidesNewEntries
		}
		return ""
	}
	if whole || present(group, kind, p.Segments, r.List) {
		return EffectRebuildsList
	}
	return EffectRebuildsListIfPresent
}

// IgnoreListTraps finds the ignoreDifferences entries of every Application that
// keep Git's list entries from shipping (see Trap). Paths that do not parse are
// skipped.
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
		seen := map[key]int{}
		// The sync to the compared revision succeeded, yet the Application is
		// OutOfSync: what a bitten trap looks like.
		stuck := app.SyncStatus == "OutOfSync" && app.OperationPhase == "Succeeded" && sameRevision(app)
		for _, d := range app.IgnoreDifferences {
			kinds, outOfSync := managedKinds(app, d)
			if len(kinds) == 0 {
				continue
			}
			add := func(label string, effect TrapEffect) {
				if effect == "" {
					return
				}
				if effect == EffectRebuildsListIfPresent && stuck && outOfSync {
					effect = EffectRebuildsList
				}
				if len(label) > maxPathLabel {
					label = label[:maxPathLabel] + "…"
				}
				k := key{d.Group, d.Kind, label}
				if i, ok := seen[k]; ok {
					if effect.rank() > out[i].Effect.rank() {
						out[i].Effect = effect
					}
					return
				}
				seen[k] = len(out)
				out = append(out, Trap{Namespace: app.Namespace, Application: app.Name, Group: d.Group, Kind: d.Kind,
					Path: label, RespectIgnoreDifferences: app.RespectIgnoreDifferences, Effect: effect})
			}
			judge := func(raw string, p ignorepath.Path) {
				var best TrapEffect
				for _, gk := range kinds {
					if e := trapEffect(gk[0], gk[1], p, app.RespectIgnoreDifferences); e.rank() > best.rank() {
						best = e
					}
				}
				label := raw
				if p.Syntax == ignorepath.JQ && p.HasFilter() && (d.Kind == "Secret" || d.Kind == "*") {
					label = redactFilters(p)
				}
				add(label, best)
			}
			for _, s := range d.JSONPointers {
				if p, err := ignorepath.ParseJSONPointer(s); err == nil {
					judge(s, p)
				}
			}
			for _, s := range d.JQPathExpressions {
				if p, err := ignorepath.ParseJQ(s); err == nil {
					judge(s, p)
				}
			}
			// managedFieldsManagers: the fields a trusted manager owns and Git
			// changes are ignored. With RespectIgnoreDifferences, on a kind
			// patched with a JSON merge patch, an owned field inside a list (or
			// the list, atomic in a CRD without list-type markers) rebuilds the
			// list from live. Which fields a manager owns is in the live object's
			// managedFields, which driftwatch does not keep per field: "if present".
			// Built-in kinds are merged per element (and the common use, an HPA's
			// replicas, is a scalar): not reported.
			if app.RespectIgnoreDifferences {
				for _, m := range d.ManagedFieldsManagers {
					for _, gk := range kinds {
						if syncpatch.PatchFor(gk[0], gk[1]) == syncpatch.JSONMerge {
							add("managedFieldsManagers:"+m, EffectRebuildsListIfPresent)
							break
						}
					}
				}
			}
		}
	}
	return out
}

// managedKinds returns the distinct group/kinds of the Application's non-hook
// managed resources (status.resources) that an ignoreDifferences entry matches,
// as Argo CD matches them (group and kind globs, name and namespace if set), and
// whether any of those resources is OutOfSync.
func managedKinds(app *model.ArgoApp, d model.IgnoreDifference) (kinds [][2]string, outOfSync bool) {
	for _, r := range app.Resources {
		if r.Hook || !globMatch(d.Group, r.Group) || !globMatch(d.Kind, r.Kind) ||
			(d.Name != "" && d.Name != r.Name) || (d.Namespace != "" && d.Namespace != r.Namespace) {
			continue
		}
		if r.Status == "OutOfSync" {
			outOfSync = true
		}
		gk := [2]string{r.Group, r.Kind}
		if !slices.Contains(kinds, gk) {
			kinds = append(kinds, gk)
		}
	}
	return kinds, outOfSync
}

// globMatch matches like Argo CD's glob.Match (github.com/gobwas/glob): "*"
// matches any run of characters, "?" one character, [..] a class.
func globMatch(pattern, s string) bool {
	if pattern == s || pattern == "*" {
		return true
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

func redactFilters(p ignorepath.Path) string {
	q := ignorepath.Path{Syntax: p.Syntax, IntoList: p.IntoList, Segments: append([]ignorepath.Segment(nil), p.Segments...)}
	for i := range q.Segments {
		if q.Segments[i].Kind == ignorepath.SegFilter {
			q.Segments[i].Name = "…"
		}
	}
	return q.String()
}
