package parse

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

func mfEntry(manager string, op metav1.ManagedFieldsOperationType, at time.Time, sub, fields string) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1", Subresource: sub}
	if !at.IsZero() {
		e.Time = &metav1.Time{Time: at}
	}
	if fields != "" {
		e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(fields)}
	}
	return e
}

func TestManagedFields(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	entries := []metav1.ManagedFieldsEntry{
		mfEntry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, t0, "",
			`{"f:data":{".":{},"f:A":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:type":{}}`),
		mfEntry("externalsecrets.external-secrets.io/app", metav1.ManagedFieldsOperationUpdate, t0.Add(time.Hour), "",
			`{"f:metadata":{"f:labels":{"f:reconcile.external-secrets.io/managed":{}}},"f:stringData":{"f:B":{}}}`),
		mfEntry("kubectl-label", metav1.ManagedFieldsOperationUpdate, t0.Add(2*time.Hour), "",
			`{"f:metadata":{"f:labels":{"f:team":{}},"f:annotations":{"f:data":{}}}}`),
		mfEntry("escaped", metav1.ManagedFieldsOperationApply, t0.Add(3*time.Hour), "", `{"f:d\u0061ta":{}}`),
		mfEntry("malformed", metav1.ManagedFieldsOperationApply, t0.Add(4*time.Hour), "", `{"f:data":{}`),
		mfEntry("not-object", metav1.ManagedFieldsOperationApply, t0.Add(5*time.Hour), "", `["f:data"]`),
		mfEntry("no-fields", metav1.ManagedFieldsOperationApply, time.Time{}, "", ""),
		mfEntry("external-secrets", metav1.ManagedFieldsOperationUpdate, t0.Add(6*time.Hour), "status", `{"f:status":{"f:conditions":{}}}`),
		mfEntry("string-value", metav1.ManagedFieldsOperationUpdate, t0.Add(7*time.Hour), "", `{"f:x":"f:data"}`),
	}
	other := mfEntry("other-type", metav1.ManagedFieldsOperationUpdate, t0.Add(8*time.Hour), "", `{"f:data":{}}`)
	other.FieldsType = "FieldsV2"
	entries = append(entries, other)

	got := ManagedFields(entries, SecretDataFields...)
	owns := []bool{true, true, false, true, false, false, false, false, false, false}
	if len(got) != len(entries) {
		t.Fatalf("%d entries", len(got))
	}
	for i, mf := range got {
		e := entries[i]
		want := model.ManagedField{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, OwnsData: owns[i]}
		if e.Time != nil {
			want.Time = e.Time.Time
		}
		if !reflect.DeepEqual(mf, want) {
			t.Errorf("entry %d: %+v, want %+v", i, mf, want)
		}
	}
	if lw := LastDataWrite(got); !lw.Equal(t0.Add(3 * time.Hour)) {
		t.Errorf("LastDataWrite = %v", lw)
	}

	spec := ManagedFields([]metav1.ManagedFieldsEntry{
		mfEntry("argocd-controller", metav1.ManagedFieldsOperationApply, t0, "", `{"f:metadata":{},"f:spec":{"f:data":{}}}`),
		mfEntry("external-secrets", metav1.ManagedFieldsOperationUpdate, t0.Add(time.Hour), "status", `{"f:status":{}}`),
	}, SpecFields...)
	if !spec[0].OwnsData || spec[1].OwnsData || !LastDataWrite(spec).Equal(t0) {
		t.Errorf("spec: %+v", spec)
	}
	if none := ManagedFields(entries); none[0].OwnsData {
		t.Error("no dataFields must mean no data ownership")
	}
	if ManagedFields(nil, SecretDataFields...) != nil || !LastDataWrite(nil).IsZero() {
		t.Error("empty input")
	}
}

func TestManagedFieldsLimits(t *testing.T) {
	many := make([]metav1.ManagedFieldsEntry, MaxManagedFieldsEntries+10)
	if got := ManagedFields(many, SecretDataFields...); len(got) != MaxManagedFieldsEntries {
		t.Fatalf("%d entries", len(got))
	}
	big := `{"f:metadata":{"f:x":"` + strings.Repeat("a", MaxFieldsV1Bytes) + `"},"f:data":{}}`
	if got := ManagedFields([]metav1.ManagedFieldsEntry{mfEntry("m", "Update", time.Time{}, "", big)}, SecretDataFields...); got[0].OwnsData {
		t.Fatal("oversized fieldsV1 must not count")
	}
	deep := `{"f:metadata":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `,"f:data":{}}`
	if got := ManagedFields([]metav1.ManagedFieldsEntry{mfEntry("m", "Update", time.Time{}, "", deep)}, SecretDataFields...); got[0].OwnsData {
		t.Fatal("too deep fieldsV1 is malformed")
	}
}

func BenchmarkManagedFields(b *testing.B) {
	t0 := time.Now()
	entries := []metav1.ManagedFieldsEntry{
		mfEntry("kubectl-client-side-apply", "Update", t0, "", `{"f:data":{".":{},"f:A":{},"f:B":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:type":{}}`),
		mfEntry("externalsecrets.external-secrets.io/app", "Update", t0, "", `{"f:metadata":{"f:annotations":{"f:reconcile.external-secrets.io/data-hash":{}},"f:labels":{"f:reconcile.external-secrets.io/managed":{}},"f:ownerReferences":{}},"f:immutable":{},"f:type":{},"f:data":{"f:A":{}}}`),
		mfEntry("kubectl-label", "Update", t0, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = LastDataWrite(ManagedFields(entries, SecretDataFields...))
	}
}

// The managedFields below are the ones the real kubectl v1.37.2 wrote against
// kube-apiserver v1.37.2 (recorded in docs/design.md, "Precision").
func TestLastAppliedHolds(t *testing.T) {
	at := func(s int) *metav1.Time {
		tm := metav1.NewTime(time.Date(2026, 12, 3, 9, 32, s, 0, time.UTC))
		return &tm
	}
	e := func(manager string, sec int, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: "Update", Time: at(sec), FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	const csaSecret = `{"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:type":{}}`
	const csaES = `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:data":{},"f:refreshInterval":{},"f:secretStoreRef":{".":{},"f:kind":{},"f:name":{}},"f:target":{".":{},"f:creationPolicy":{},"f:deletionPolicy":{},"f:name":{}}}}`
	const csaESWithoutData = `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:refreshInterval":{},"f:secretStoreRef":{".":{},"f:kind":{},"f:name":{}},"f:target":{".":{},"f:creationPolicy":{},"f:deletionPolicy":{},"f:name":{}}}}`
	secretData := [][]string{PathSecretData, PathSecretStringData}
	cases := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		fields  [][][]string
		want    []bool
	}{
		{"applied Secret", []metav1.ManagedFieldsEntry{e("kubectl-client-side-apply", 26, csaSecret)}, [][][]string{secretData}, []bool{true}},
		{"kubectl patch added a key later: the newest data write is not the writer's",
			[]metav1.ManagedFieldsEntry{e("kubectl-client-side-apply", 26, csaSecret), e("kubectl-patch", 27, `{"f:data":{"f:c":{}}}`)},
			[][][]string{secretData}, []bool{false}},
		{"a label edit is not a data write",
			[]metav1.ManagedFieldsEntry{e("kubectl-client-side-apply", 26, csaSecret), e("kubectl-label", 34, `{"f:metadata":{"f:labels":{".":{},"f:x":{}}}}`)},
			[][][]string{secretData}, []bool{true}},
		{"re-applied after the patch: the writer's entry is newest again",
			[]metav1.ManagedFieldsEntry{e("kubectl-patch", 27, `{"f:data":{"f:c":{}}}`), e("kubectl-client-side-apply", 31, csaSecret)},
			[][][]string{secretData}, []bool{true}},
		{"ExternalSecret applied", []metav1.ManagedFieldsEntry{e("kubectl-client-side-apply", 35, csaES)},
			[][][]string{{PathSpecData}, {PathCreationPolicy}}, []bool{true, true}},
		{"ExternalSecret list patched: the list moved to kubectl-patch, creationPolicy did not",
			[]metav1.ManagedFieldsEntry{e("kubectl-client-side-apply", 35, csaESWithoutData), e("kubectl-patch", 36, `{"f:spec":{"f:data":{}}}`)},
			[][][]string{{PathSpecData}, {PathCreationPolicy}}, []bool{false, true}},
		{"server-side apply: the annotation belongs to kubectl-last-applied, which owns no data",
			[]metav1.ManagedFieldsEntry{
				{Manager: "kubectl-last-applied", Operation: "Apply", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)}},
				{Manager: "kubectl", Operation: "Apply", Time: at(35), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:stringData":{"f:a":{},"f:e":{}}}`)}},
			}, [][][]string{secretData}, []bool{false}},
		{"no entry owns the annotation", []metav1.ManagedFieldsEntry{e("helm", 1, `{"f:data":{"f:a":{}}}`)}, [][][]string{secretData}, []bool{false}},
		{"malformed fieldsV1", []metav1.ManagedFieldsEntry{e("x", 1, `{"f:metadata":`)}, [][][]string{secretData}, []bool{false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := LastAppliedHolds(c.entries, c.fields...); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestFieldsJSON(t *testing.T) {
	if FieldsJSON(nil) != nil {
		t.Error("nil fieldsV1 is nil JSON")
	}
	raw := `{"f:data":{"f:a":{}}}`
	f := metav1.NewFieldsV1(raw)
	if got := string(FieldsJSON(f)); got != raw {
		t.Errorf("FieldsJSON = %q, want %q", got, raw)
	}
}
