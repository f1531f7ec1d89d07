// Package syncpatch says how Argo CD's sync carries the live values of ignored
// fields into the manifests it applies when an Application has the sync option
// RespectIgnoreDifferences=true, so a detector can tell an ignoreDifferences path
// that rebuilds a whole list from live (entries added in Git never ship) from one
// that keeps to the field it names.
//
// Argo CD (controller/sync.go normalizeTargetResources, the same code in v2.14.21
// and v3.2.9) normalizes live and target with the Application's ignoreDifferences,
// computes the patch that turns the normalized live object back into the live one,
// and applies that patch to the normalized target:
//
//   - for a kind that client-go's scheme knows (k8s.io/client-go/kubernetes/scheme:
//     the built-in kinds), a strategic merge patch built from the Go type's
//     patchStrategy/patchMergeKey struct tags: a list with the "merge" strategy is
//     merged per element (by its merge key, or as a set for scalars), so only the
//     element's ignored field comes from live; any other list is atomic and is
//     replaced whole;
//   - for every other kind (every CRD, ExternalSecret included), a JSON merge patch
//     (RFC 7386): a list is a value, so a path that steps into a list puts live's
//     whole list into the target.
//
// The lookup reads the real k8s.io/api types through apimachinery's strategicpatch
// metadata (the same call Argo CD makes), not a table of ours. It is kept out of
// detect/ so the detectors do not import client-go; it does no I/O.
//
// The scheme here is the agent's client-go, which may know a few more (newer) API
// versions than the client-go of the Argo CD release in use; a kind is judged
// strategic when any version of it is in the scheme.
package syncpatch

import (
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/driftwatch/driftwatch/internal/argocd/ignorepath"
)

// Patch is the kind of patch Argo CD applies to the target.
type Patch int

const (
	// JSONMerge (RFC 7386) for kinds not in client-go's scheme: lists are replaced whole.
	JSONMerge Patch = iota + 1
	// StrategicMerge for built-in kinds: lists with the merge strategy merge per element.
	StrategicMerge
)

func (p Patch) String() string {
	switch p {
	case JSONMerge:
		return "json_merge"
	case StrategicMerge:
		return "strategic_merge"
	}
	return "unknown"
}

// Result is how the patch treats one ignoreDifferences path.
type Result struct {
	Patch Patch
	// Replaces is set when the path steps into a list that the patch replaces
	// whole: with RespectIgnoreDifferences the target's list becomes live's.
	Replaces bool
	// List is the index in the path's Segments of that list step (when Replaces).
	List int
	// OutsideSchema is set (strategic kinds only) when the path names a field the
	// kind's Go type does not have, or steps into a scalar: on a live object it
	// selects nothing, so the patch has nothing to carry.
	OutsideSchema bool
}

// kindTypes caches group/kind -> Go type (nil when not in the scheme).
var kindTypes sync.Map // schema.GroupKind -> reflect.Type

// TypeFor returns the Go struct type client-go's scheme registers for group/kind
// (the preferred version of the group when several are registered), or nil.
func TypeFor(group, kind string) reflect.Type {
	gk := schema.GroupKind{Group: group, Kind: kind}
	if v, ok := kindTypes.Load(gk); ok {
		t, _ := v.(reflect.Type)
		return t
	}
	var found reflect.Type
	for _, gv := range scheme.Scheme.PrioritizedVersionsForGroup(group) {
		if obj, err := scheme.Scheme.New(gv.WithKind(kind)); err == nil {
			found = reflect.TypeOf(obj).Elem()
			break
		}
	}
	if found == nil {
		// Unversioned or not prioritized: any registered version.
		for gvk, t := range scheme.Scheme.AllKnownTypes() {
			if gvk.Group == group && gvk.Kind == kind && gvk.Version != "__internal" {
				found = t
				break
			}
		}
	}
	kindTypes.Store(gk, found)
	return found
}

// PatchFor returns the patch Argo CD builds for objects of group/kind.
func PatchFor(group, kind string) Patch {
	if TypeFor(group, kind) != nil {
		return StrategicMerge
	}
	return JSONMerge
}

// Classify returns how the sync patch treats path p on objects of group/kind
// (concrete names, not globs).
func Classify(group, kind string, p ignorepath.Path) Result {
	t := TypeFor(group, kind)
	if t == nil {
		r := Result{Patch: JSONMerge, List: -1}
		for i, s := range p.Segments {
			if s.IsList() {
				r.Replaces, r.List = true, i
				break
			}
		}
		return r
	}
	return classifyStrategic(t, p.Segments)
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// classifyStrategic walks the path through the Go type the way
// strategicpatch.StrategicMergePatch walks a patch: struct fields by JSON name
// (with their patchStrategy/patchMergeKey tags), map entries by key, list
// elements per the list's strategy.
func classifyStrategic(root reflect.Type, segs []ignorepath.Segment) Result {
	r := Result{Patch: StrategicMerge, List: -1}
	cur := root
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if s.Kind == ignorepath.SegFilter {
			continue // narrows, does not move
		}
		cur = deref(cur)
		switch cur.Kind() {
		case reflect.Struct:
			if s.Kind != ignorepath.SegField {
				r.OutsideSchema = true // a list step on an object selects nothing
				return r
			}
			sub, pm, err := strategicpatch.PatchMetaFromStruct{T: cur}.LookupPatchMetadataForStruct(s.Name)
			if err != nil {
				r.OutsideSchema = true
				return r
			}
			ft := deref(sub.(strategicpatch.PatchMetaFromStruct).T)
			if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
				j := nextStep(segs, i+1)
				if j < 0 || !segs[j].IsList() {
					// The whole list field (or nothing further): no element is
					// reached; the caller decides about whole lists.
					if j >= 0 {
						r.OutsideSchema = true // a member name on a list
					}
					return r
				}
				if !mergedPerElement(ft.Elem(), pm) {
					r.Replaces, r.List = true, j
					return r
				}
				cur = ft.Elem()
				i = j
				continue
			}
			cur = ft
		case reflect.Map:
			// A key: a member name, or a numeric segment the JSON-pointer
			// parser took for an index.
			if s.Kind != ignorepath.SegField && s.Kind != ignorepath.SegIndex {
				r.OutsideSchema = true
				return r
			}
			cur = cur.Elem()
		default:
			// Below a scalar (string, number, []byte, Quantity's string form...).
			r.OutsideSchema = true
			return r
		}
	}
	return r
}

// nextStep returns the index of the next non-filter segment at or after i, or -1.
func nextStep(segs []ignorepath.Segment, i int) int {
	for ; i < len(segs); i++ {
		if segs[i].Kind != ignorepath.SegFilter {
			return i
		}
	}
	return -1
}

// mergedPerElement reports whether a strategic merge patch merges the list per
// element rather than replacing it: the field's patchStrategy includes "merge",
// with a patchMergeKey for lists of objects (scalars merge as a set).
func mergedPerElement(elem reflect.Type, pm strategicpatch.PatchMeta) bool {
	if !slices.Contains(pm.GetPatchStrategies(), "merge") {
		return false
	}
	elem = deref(elem)
	if elem.Kind() == reflect.Struct || elem.Kind() == reflect.Map {
		return pm.GetPatchMergeKey() != ""
	}
	return true
}
