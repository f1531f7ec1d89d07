package parse

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Limits of ManagedFields.
const (
	// MaxManagedFieldsEntries caps the entries summarised (the first ones are kept;
	// the API server itself folds Update managers beyond ten into one).
	MaxManagedFieldsEntries = 256
	// MaxFieldsV1Bytes caps the fieldsV1 JSON scanned per entry: a larger one
	// counts as not owning data.
	MaxFieldsV1Bytes = 512 << 10
)

// FieldsJSON returns a managedFields entry's fieldsV1 as JSON. apimachinery
// v0.37 deprecates the Raw field for GetRawBytes; the apicompat module that
// proves the Argo CD structs pins Argo CD's older apimachinery, which has only
// Raw (and MarshalJSON, which returns it). Either way no field is read that one
// of them lacks.
func FieldsJSON(f *metav1.FieldsV1) []byte {
	if f == nil {
		return nil
	}
	if g, ok := any(f).(interface{ GetRawBytes() []byte }); ok {
		return g.GetRawBytes()
	}
	b, err := f.MarshalJSON()
	if err != nil {
		return nil
	}
	return b
}

// Field sets for ManagedFields' dataFields.
var (
	// SecretDataFields: a write of a Secret's contents.
	SecretDataFields = []string{"f:data", "f:stringData"}
	// SpecFields: a write of a spec (ExternalSecret, SecretStore, ...).
	SpecFields = []string{"f:spec"}
)

// ManagedFields summarises metadata.managedFields: manager, operation, time (zero
// when absent) and subresource of every entry, and OwnsData when the entry's
// fieldsV1 has a top-level member named in dataFields (e.g. SecretDataFields).
// Only top-level member names are read; fieldsV1 that is malformed, not an object,
// of another fieldsType, or larger than MaxFieldsV1Bytes gives OwnsData false, as
// does an empty dataFields. At most MaxManagedFieldsEntries entries are returned.
func ManagedFields(entries []metav1.ManagedFieldsEntry, dataFields ...string) []model.ManagedField {
	if len(entries) == 0 {
		return nil
	}
	return ManagedFieldsOf(Views(entries), dataFields...)
}

// MFView is the part of a managedFields entry the summaries read. The wire
// decoder (internal/transform) builds views over the bytes it reads; Views makes them
// of decoded entries. The strings may alias a buffer the caller reuses: what the
// summaries keep of them is interned (a copy).
type MFView struct {
	Manager, Operation, Subresource, FieldsType string
	// Time is the entry's time, zero when absent.
	Time time.Time
	// Fields is fieldsV1 as JSON; HasFields is set when fieldsV1 is present.
	Fields    []byte
	HasFields bool
}

// Views returns the views of entries (at most MaxManagedFieldsEntries).
func Views(entries []metav1.ManagedFieldsEntry) []MFView {
	if len(entries) > MaxManagedFieldsEntries {
		entries = entries[:MaxManagedFieldsEntries]
	}
	out := make([]MFView, len(entries))
	for i := range entries {
		e := &entries[i]
		v := MFView{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource,
			FieldsType: e.FieldsType, HasFields: e.FieldsV1 != nil}
		if e.Time != nil {
			v.Time = e.Time.Time
		}
		if v.HasFields {
			v.Fields = FieldsJSON(e.FieldsV1)
		}
		out[i] = v
	}
	return out
}

// ManagedFieldsOf is ManagedFields of views.
func ManagedFieldsOf(entries []MFView, dataFields ...string) []model.ManagedField {
	if len(entries) == 0 {
		return nil
	}
	if len(entries) > MaxManagedFieldsEntries {
		entries = entries[:MaxManagedFieldsEntries]
	}
	out := make([]model.ManagedField, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		mf := model.ManagedField{
			Manager:     model.Intern(e.Manager),
			Operation:   model.Intern(e.Operation),
			Subresource: model.Intern(e.Subresource),
			Time:        e.Time,
		}
		if e.HasFields && (e.FieldsType == "FieldsV1" || e.FieldsType == "") {
			mf.OwnsData = ownsTopLevel(e.Fields, dataFields)
		}
		out = append(out, mf)
	}
	return out
}

// ownsTopLevel reports whether the JSON object raw has a top-level member named in
// names.
func ownsTopLevel(raw []byte, names []string) bool {
	if len(names) == 0 || len(raw) == 0 || len(raw) > MaxFieldsV1Bytes || !json.Valid(raw) {
		return false
	}
	found := false
	eachMember(raw, func(k, _ []byte) bool {
		for _, n := range names {
			if keyIs(k, n) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// LastDataWrite is the newest time among entries that own data (zero when none):
// at start-up, before any change is observed, the best estimate of when a
// Secret's data last changed.
func LastDataWrite(m []model.ManagedField) time.Time {
	var t time.Time
	for _, f := range m {
		if f.OwnsData && f.Time.After(t) {
			t = f.Time
		}
	}
	return t
}

// Field paths, in fieldsV1 form, that say who holds a last-applied annotation's
// evidence.
var (
	// PathLastApplied is the last-applied-configuration annotation.
	PathLastApplied = []string{"f:metadata", "f:annotations", "f:" + LastAppliedAnnotation}
	// PathSpecData is an ExternalSecret's spec.data: an atomic list, owned as a
	// whole by the last manager that changed it.
	PathSpecData = []string{"f:spec", "f:data"}
	// PathCreationPolicy is an ExternalSecret's spec.target.creationPolicy.
	PathCreationPolicy = []string{"f:spec", "f:target", "f:creationPolicy"}
	// PathSecretData and PathSecretStringData hold a Secret's keys (per key).
	PathSecretData       = []string{"f:data"}
	PathSecretStringData = []string{"f:stringData"}
)

// LastAppliedHolds reports, for each field (a set of alternative fieldsV1
// paths), whether the manager that wrote the last-applied-configuration
// annotation still holds the newest write of that field: its managedFields entry
// owns the annotation and the field, and no entry with a later time owns the
// field. Only then is the annotation evidence about the field. Once another
// manager writes it — kubectl patch or edit (they do not update the annotation),
// server-side apply, Helm, Argo CD, a controller — the annotation is frozen
// history for that field, whatever the next client-side apply would do. Without
// an entry owning the annotation nothing holds. Status entries never count.
// Times have a resolution of one second: a tie counts as held.
func LastAppliedHolds(entries []metav1.ManagedFieldsEntry, fields ...[][]string) []bool {
	return LastAppliedHoldsOf(Views(entries), fields...)
}

// LastAppliedHoldsOf is LastAppliedHolds of views.
func LastAppliedHoldsOf(entries []MFView, fields ...[][]string) []bool {
	out := make([]bool, len(fields))
	if len(entries) > MaxManagedFieldsEntries {
		entries = entries[:MaxManagedFieldsEntries]
	}
	writer := -1
	for i := range entries {
		if usableEntry(&entries[i]) && ownsPath(entries[i].Fields, PathLastApplied) {
			writer = i
			break
		}
	}
	if writer < 0 {
		return out
	}
	wt := entries[writer].Time
	for f, alts := range fields {
		owns := func(e *MFView) bool {
			for _, p := range alts {
				if ownsPath(e.Fields, p) {
					return true
				}
			}
			return false
		}
		if !owns(&entries[writer]) {
			continue
		}
		held := true
		for i := range entries {
			if i == writer || !usableEntry(&entries[i]) {
				continue
			}
			if entries[i].Time.After(wt) && owns(&entries[i]) {
				held = false
				break
			}
		}
		out[f] = held
	}
	return out
}

func usableEntry(e *MFView) bool {
	return e.Subresource == "" && e.HasFields && (e.FieldsType == "FieldsV1" || e.FieldsType == "") &&
		len(e.Fields) <= MaxFieldsV1Bytes
}

// ownsPath reports whether the fieldsV1 object raw has the nested member path
// (every element a member name such as "f:spec").
func ownsPath(raw []byte, path []string) bool {
	cur := raw
	for _, name := range path {
		var next []byte
		found := false
		if !eachMember(cur, func(k, v []byte) bool {
			if keyIs(k, name) {
				next, found = v, true
				return false
			}
			return true
		}) && !found {
			return false
		}
		if !found {
			return false
		}
		cur = next
	}
	return true
}
