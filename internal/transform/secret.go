package transform

// The Secret transform: key names, lengths and keyed fingerprints; the values are
// wiped as soon as they are summarised.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// Secret is the transform of the main Secret informer. It is idempotent: a record
// passes through unchanged.
func (t *Transformer) Secret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	rec := &model.Secret{
		ObjectMeta: objectMeta(&s.ObjectMeta),
		Type:       model.Intern(string(s.Type)),
		Owners:     owners(s.OwnerReferences),
		Managers:   parse.ManagedFields(s.ManagedFields, "f:data", "f:stringData"),
	}
	keys := make([]model.KeyEntry, 0, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		keys = append(keys, model.KeyEntry{Name: k, KeyInfo: t.FP.Key(v)})
		clear(v) // the transform owns the object: wipe the value as soon as it is summarised
	}
	for k, v := range s.StringData { // never set on objects read from the apiserver, but be safe
		// After the data keys: of two entries with the same name, the later wins.
		keys = append(keys, model.KeyEntry{Name: k, KeyInfo: t.FP.Key([]byte(v))})
	}
	rec.Keys = model.NewKeySetOf(keys)
	if la, ok := s.Annotations[model.AnnLastApplied]; ok {
		rec.LastApplied = parse.LastApplied(la, t.FP)
		if rec.LastApplied.Name == rec.Name {
			rec.LastApplied.Name = rec.Name // one string, not two
		}
		holds := parse.LastAppliedHolds(s.ManagedFields, [][]string{parse.PathSecretData, parse.PathSecretStringData})
		rec.LastApplied.HoldsList = holds[0]
		t.decodeProblem("secrets", &s.ObjectMeta, "last-applied", rec.LastApplied.Err)
	}
	if ek, ok := s.Annotations[model.AnnExpectedKeys]; ok {
		keys, err := parse.ExpectedKeys(ek)
		rec.ExpectedKeys = keys
		if err != nil {
			rec.ExpectedKeysErr = err.Error()
			t.decodeProblem("secrets", &s.ObjectMeta, model.AnnExpectedKeys, rec.ExpectedKeysErr)
		}
	}
	s.Data, s.StringData = nil, nil
	return rec, nil
}
