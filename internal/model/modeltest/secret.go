package modeltest

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Secret builds a Secret record holding the named keys whose values are not
// known: each key is KeyInfo{Len: 8} with a zero fingerprint (so the Secret is
// never a duplicate of another, never compared equal, never a flip). Type
// "Opaque", metadata as Meta, no owners, managers, last-applied annotation or
// expected keys.
func Secret(ns, name string, keys ...string) *model.Secret {
	s := &model.Secret{ObjectMeta: Meta(ns, name), Type: "Opaque", Keys: model.KeySet{}}
	for _, k := range keys {
		s.Keys.Set(k, model.KeyInfo{Len: 8})
	}
	return s
}

// SecretValues builds a Secret record from key, value pairs, each value reduced
// to its length and fingerprints by FP.Key exactly as the Secret transform does
// (TrimFP differs from FP only when the value has surrounding white space or
// CRLF). Otherwise as Secret: Type "Opaque", metadata as Meta.
func SecretValues(ns, name string, kv ...string) *model.Secret {
	s := &model.Secret{ObjectMeta: Meta(ns, name), Type: "Opaque", Keys: model.KeySet{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Keys.Set(kv[i], FP.Key([]byte(kv[i+1])))
	}
	return s
}

// ExpectKeys sets the parsed driftwatch.io/expected-keys annotation of a Secret
// (the ExpectedKeys field; the raw annotation is not added).
func ExpectKeys(s *model.Secret, keys ...string) *model.Secret {
	s.ExpectedKeys = keys
	return s
}

// WithType sets a Secret's type.
func WithType(s *model.Secret, typ string) *model.Secret {
	s.Type = typ
	return s
}

// WithManagers appends managedFields summaries to a Secret.
func WithManagers(s *model.Secret, mf ...model.ManagedField) *model.Secret {
	s.Managers = append(s.Managers, mf...)
	return s
}

// WithLastApplied sets a Secret's last-applied summary.
func WithLastApplied(s *model.Secret, la *model.LastApplied) *model.Secret {
	s.LastApplied = la
	return s
}

// OwnedBy appends ownerReferences to a Secret.
func OwnedBy(s *model.Secret, owners ...model.OwnerRef) *model.Secret {
	s.Owners = append(s.Owners, owners...)
	return s
}

// Write is a managedFields entry of an Update by manager at that owns the data
// (f:data or f:stringData): a data write.
func Write(manager string, at time.Time) model.ManagedField {
	return model.ManagedField{Manager: manager, Operation: "Update", Time: at, OwnsData: true}
}

// MetaWrite is a managedFields entry of an Update by manager at that owns no
// data: a metadata-only edit (labels, annotations).
func MetaWrite(manager string, at time.Time) model.ManagedField {
	return model.ManagedField{Manager: manager, Operation: "Update", Time: at}
}

// ApplyWrite is a managedFields entry of a server-side Apply by manager at that
// owns the data (or, on other kinds, the spec).
func ApplyWrite(manager string, at time.Time) model.ManagedField {
	return model.ManagedField{Manager: manager, Operation: "Apply", Time: at, OwnsData: true}
}

// LastAppliedSecret is a kubectl last-applied annotation of a Secret (APIVersion
// v1) naming the data keys, with no value fingerprints, whose writer still holds
// the newest write of the keys (HoldsList: current evidence).
func LastAppliedSecret(keys ...string) *model.LastApplied {
	return &model.LastApplied{APIVersion: "v1", Kind: "Secret", DataKeys: keys, HoldsList: true}
}

// LastAppliedData is a last-applied annotation of the given kind carrying data
// as key, value pairs: DataKeys in the order given and DataFPs fingerprinted by
// FP (as the annotation parser does). No APIVersion, no name, HoldsList false.
func LastAppliedData(kind string, kv ...string) *model.LastApplied {
	la := &model.LastApplied{Kind: kind, DataFPs: model.FPList{}}
	for i := 0; i+1 < len(kv); i += 2 {
		la.DataKeys = append(la.DataKeys, kv[i])
		la.DataFPs.Set(kv[i], FP.Sum([]byte(kv[i+1])))
	}
	return la
}

// LastAppliedES is a kubectl last-applied annotation of an ExternalSecret
// (APIVersion external-secrets.io/v1) whose spec.data has the given secretKeys
// (HasSpecData set), written by the manager that still holds spec.data
// (HoldsList). Name is empty: ES fills it with the ExternalSecret's name.
func LastAppliedES(keys ...string) *model.LastApplied {
	return &model.LastApplied{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", SpecDataKeys: keys, HasSpecData: true, HoldsList: true}
}

// Frozen marks a last-applied annotation as history: another manager wrote the
// list after it (kubectl patch or edit, server-side apply, Helm), HoldsList false.
func Frozen(la *model.LastApplied) *model.LastApplied {
	la.HoldsList = false
	return la
}
