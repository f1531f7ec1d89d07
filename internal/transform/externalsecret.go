package transform

// The ExternalSecret transform (its spec and status are decoded by hand by
// internal/eso: Decode, and Writes reads what it writes into its target) and
// what managedFields say about what users applied.

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// ExternalSecret is the transform of the ExternalSecret informer.
func (t *Transformer) ExternalSecret(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	var es eso.ExternalSecret
	decodeErr := eso.Decode(u.Object, &es)
	meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(),
		Annotations: u.GetAnnotations(), Labels: u.GetLabels()}
	return t.externalSecretRecord(&meta, u.GetAPIVersion(), managedFieldsOf(u), u.GetDeletionTimestamp() != nil, &es, decodeErr), nil
}

// externalSecretRecord is the record of an ExternalSecret, from its metadata
// (name, namespace, UID, resourceVersion, generation, creationTimestamp,
// annotations, labels), apiVersion, managedFields, deletion state and the spec and status
// eso.Decode read (decodeErr: its error): one function for the unstructured
// path (ExternalSecret) and the JSON reader (crdwire.go).
func (t *Transformer) externalSecretRecord(meta *metav1.ObjectMeta, apiVersion string, mf []metav1.ManagedFieldsEntry,
	deleting bool, es *eso.ExternalSecret, decodeErr string) *model.ExternalSecret {
	ann := meta.Annotations
	rec := &model.ExternalSecret{
		ObjectMeta: objectMeta(meta),
		APIVersion: model.Intern(apiVersion),
		DecodeErr:  decodeErr,
		Managers:   parse.ManagedFields(mf, "f:spec"),
		Deleting:   deleting,
		// What SyncPending compares: the spec's generation and the one
		// ESO last synced.
		Generation:    meta.Generation,
		SyncedVersion: es.Status.SyncedResourceVersion,
	}
	t.decodeProblem("externalsecrets", meta, "spec", decodeErr)
	if la, ok := ann[model.AnnLastApplied]; ok {
		rec.LastApplied = parse.LastApplied(la, t.FP)
		if rec.LastApplied.Name == rec.Name {
			rec.LastApplied.Name = rec.Name
		}
		holds := parse.LastAppliedHolds(mf, [][]string{parse.PathSpecData}, [][]string{parse.PathCreationPolicy})
		rec.LastApplied.HoldsList, rec.LastApplied.HoldsCreationPolicy = holds[0], holds[1]
		t.decodeProblem("externalsecrets", meta, "last-applied", rec.LastApplied.Err)
	}
	if ek, ok := ann[model.AnnExpectedKeys]; ok {
		keys, err := parse.ExpectedKeys(ek)
		rec.ExpectedKeys = keys
		if err != nil {
			rec.ExpectedKeysErr = err.Error()
			t.decodeProblem("externalsecrets", meta, model.AnnExpectedKeys, rec.ExpectedKeysErr)
		}
	}
	rec.CreationPolicyApplied = creationPolicyApplied(mf)
	sp := es.Spec
	rec.ESWrites = eso.Writes(rec.Name, &sp)
	rec.StoreKind = model.Intern(sp.SecretStoreRef.Kind)
	if rec.StoreKind == "" {
		rec.StoreKind = "SecretStore"
	}
	rec.StoreName = model.Intern(sp.SecretStoreRef.Name)
	rec.RefreshPolicy = model.Intern(sp.RefreshPolicy)
	if sp.RefreshInterval != nil {
		rec.RefreshInterval, rec.RefreshIntervalSet = sp.RefreshInterval.Duration, true
	}
	rec.Ready = condition(es.Status.Conditions, "Ready")
	for _, c := range es.Status.Conditions {
		if c.Type == "Ready" {
			rec.ProviderReadFailed = eso.ProviderReadFailed(c)
		}
	}
	rec.RefreshTime = es.Status.RefreshTime.Time
	return rec
}

// managedFieldsOf reads metadata.managedFields of an unstructured object like
// u.GetManagedFields, without the reflective converter (which costs more than the
// rest of the ExternalSecret transform): the fields read by parse.ManagedFields
// and creationPolicyApplied, fieldsV1 re-encoded as JSON. A malformed entry makes
// the whole list nil, as in GetManagedFields.
func managedFieldsOf(u *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	if !found || err != nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(items))
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil
		}
		var e metav1.ManagedFieldsEntry
		for k, v := range m {
			switch k {
			case "manager", "operation", "apiVersion", "fieldsType", "subresource", "time":
				s, ok := v.(string)
				if !ok {
					if v == nil {
						continue
					}
					return nil
				}
				if !setManagedFieldsString(&e, k, s) {
					return nil
				}
			case "fieldsV1":
				if v == nil {
					continue
				}
				raw, ok := appendFieldSet(nil, v)
				if !ok {
					return nil
				}
				e.FieldsV1 = metav1.NewFieldsV1(string(raw))
			}
		}
		out = append(out, e)
	}
	return out
}

// setManagedFieldsString sets the string member k of a managedFields entry
// (manager, operation, apiVersion, fieldsType, subresource, time), as
// GetManagedFields does; false when a time does not parse.
func setManagedFieldsString(e *metav1.ManagedFieldsEntry, k, s string) bool {
	switch k {
	case "manager":
		e.Manager = s
	case "operation":
		e.Operation = metav1.ManagedFieldsOperationType(s)
	case "apiVersion":
		e.APIVersion = s
	case "fieldsType":
		e.FieldsType = s
	case "subresource":
		e.Subresource = s
	case "time":
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(s); err != nil {
			return false
		}
		e.Time = &t
	}
	return true
}

// appendFieldSet encodes a decoded fieldsV1 value as JSON: nested objects with
// sorted keys (what json.Marshal writes, minus its HTML escaping), any other value
// through json.Marshal.
func appendFieldSet(b []byte, v any) ([]byte, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		j, err := json.Marshal(v)
		return append(b, j...), err == nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		if b, ok = appendFieldSet(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendJSONString quotes s as a JSON string (s comes from a JSON decoder: valid
// UTF-8, written as is).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// maxFieldsV1 bounds the managedFields entry parsed for creationPolicy ownership.
const maxFieldsV1 = 256 << 10

// creationPolicyApplied reads the server-side Apply entries that own parts of
// spec: "set" when one of them owns f:spec.f:target.f:creationPolicy, "unset" when
// none does, "" when there is no such entry (Update entries also own the CRD's
// defaults, so they cannot tell what a user wrote).
func creationPolicyApplied(entries []metav1.ManagedFieldsEntry) string {
	verdict := ""
	for _, e := range entries {
		if e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil ||
			len(parse.FieldsJSON(e.FieldsV1)) > maxFieldsV1 {
			continue
		}
		var f struct {
			Spec *struct {
				Target *struct {
					CreationPolicy *json.RawMessage `json:"f:creationPolicy"`
				} `json:"f:target"`
			} `json:"f:spec"`
		}
		if json.Unmarshal(parse.FieldsJSON(e.FieldsV1), &f) != nil || f.Spec == nil {
			continue
		}
		if f.Spec.Target != nil && f.Spec.Target.CreationPolicy != nil {
			return "set"
		}
		verdict = "unset"
	}
	return verdict
}
