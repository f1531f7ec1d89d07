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
	if len(entries) > MaxManagedFieldsEntries {
		entries = entries[:MaxManagedFieldsEntries]
	}
	out := make([]model.ManagedField, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		mf := model.ManagedField{
			Manager:     model.Intern(e.Manager),
			Operation:   model.Intern(string(e.Operation)),
			Subresource: model.Intern(e.Subresource),
		}
		if e.Time != nil {
			mf.Time = e.Time.Time
		}
		if e.FieldsV1 != nil && (e.FieldsType == "FieldsV1" || e.FieldsType == "") {
			mf.OwnsData = ownsTopLevel(e.FieldsV1.Raw, dataFields)
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
