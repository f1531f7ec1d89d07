package model

import (
	"slices"
	"strings"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ObjectMeta is the part of an object's metadata a record keeps: 104 bytes where
// metav1.ObjectMeta takes 232, most of them empty fields. It has the same field
// names, so record.Name, record.Namespace and record.Annotations read as before,
// and *ObjectMeta implements metav1.Object, so the informer machinery (cache keys,
// meta.Accessor, DeletedFinalStateUnknown) handles records like API objects. The
// setters of fields it does not keep do nothing; their getters return zero values.
type ObjectMeta struct {
	Name              string
	Namespace         string
	UID               types.UID
	ResourceVersion   string
	CreationTimestamp metav1.Time
	// Labels and Annotations hold only the few the transforms keep.
	Labels      map[string]string
	Annotations map[string]string
}

var _ metav1.Object = (*ObjectMeta)(nil)

func (m *ObjectMeta) GetNamespace() string                        { return m.Namespace }
func (m *ObjectMeta) SetNamespace(ns string)                      { m.Namespace = ns }
func (m *ObjectMeta) GetName() string                             { return m.Name }
func (m *ObjectMeta) SetName(name string)                         { m.Name = name }
func (m *ObjectMeta) GetGenerateName() string                     { return "" }
func (m *ObjectMeta) SetGenerateName(string)                      {}
func (m *ObjectMeta) GetUID() types.UID                           { return m.UID }
func (m *ObjectMeta) SetUID(uid types.UID)                        { m.UID = uid }
func (m *ObjectMeta) GetResourceVersion() string                  { return m.ResourceVersion }
func (m *ObjectMeta) SetResourceVersion(v string)                 { m.ResourceVersion = v }
func (m *ObjectMeta) GetGeneration() int64                        { return 0 }
func (m *ObjectMeta) SetGeneration(int64)                         {}
func (m *ObjectMeta) GetSelfLink() string                         { return "" }
func (m *ObjectMeta) SetSelfLink(string)                          {}
func (m *ObjectMeta) GetCreationTimestamp() metav1.Time           { return m.CreationTimestamp }
func (m *ObjectMeta) SetCreationTimestamp(t metav1.Time)          { m.CreationTimestamp = t }
func (m *ObjectMeta) GetDeletionTimestamp() *metav1.Time          { return nil }
func (m *ObjectMeta) SetDeletionTimestamp(*metav1.Time)           {}
func (m *ObjectMeta) GetDeletionGracePeriodSeconds() *int64       { return nil }
func (m *ObjectMeta) SetDeletionGracePeriodSeconds(*int64)        {}
func (m *ObjectMeta) GetLabels() map[string]string                { return m.Labels }
func (m *ObjectMeta) SetLabels(l map[string]string)               { m.Labels = l }
func (m *ObjectMeta) GetAnnotations() map[string]string           { return m.Annotations }
func (m *ObjectMeta) SetAnnotations(a map[string]string)          { m.Annotations = a }
func (m *ObjectMeta) GetFinalizers() []string                     { return nil }
func (m *ObjectMeta) SetFinalizers([]string)                      {}
func (m *ObjectMeta) GetOwnerReferences() []metav1.OwnerReference { return nil }
func (m *ObjectMeta) SetOwnerReferences([]metav1.OwnerReference)  {}
func (m *ObjectMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}
func (m *ObjectMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// Intern returns the canonical copy of s: strings that repeat across objects
// (namespaces, key names, manager names, kinds) are then stored once instead of
// once per object. The canonical copies are weak: one no record uses any more is
// collected. Do not intern strings unique to one object (UIDs, names): it costs a
// map entry and saves nothing.
func Intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// Clip returns xs without unused capacity, copying it only when that saves
// memory: a record built by appends keeps no spare capacity (the transforms,
// and the shards' reduction of cross-namespace records).
func Clip[T any](xs []T) []T {
	if cap(xs) == len(xs) {
		return xs
	}
	if len(xs) == 0 {
		return nil
	}
	return slices.Clone(xs)
}

// Annotations and labels driftwatch reads, declared once.
const (
	// AnnExpectedKeys lists the keys a Secret (or an ExternalSecret's target)
	// must hold: "A,B,C".
	AnnExpectedKeys = "driftwatch.io/expected-keys"
	// AnnCompareWith pairs a Secret with the Secret it is compared with.
	AnnCompareWith = "driftwatch.io/compare-with"
	// AnnLastApplied is kubectl's client-side apply record.
	AnnLastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	// LabelESOManaged marks Secrets ESO writes.
	LabelESOManaged = "reconcile.external-secrets.io/managed"
	// Workload-identity annotations of a ServiceAccount.
	AnnAWSRoleARN     = "eks.amazonaws.com/role-arn"
	AnnAzureClientID  = "azure.workload.identity/client-id"
	AnnGKEServiceAcct = "iam.gke.io/gcp-service-account"
)

// AnnIgnore silences detectors for an object, or for every object of a
// namespace: driftwatch.io/ignore: "<detector>[,<detector>]" or "all". The
// silenced findings are still counted (driftwatch_findings_silenced).
const AnnIgnore = "driftwatch.io/ignore"

// DetectorAliases maps a former detector name, still accepted in
// driftwatch.io/ignore, to the detector's name.
var DetectorAliases = map[string]string{
	// Renamed so the detector, its family (driftwatch_argocd_ignore_list_trap)
	// and its lint rule share one name.
	"argocd_ignore_trap": "argocd_ignore_list_trap",
}

// Ignores reports whether the object's driftwatch.io/ignore annotation names
// detector (or "all", or a former name of it: DetectorAliases). Names are
// compared exactly after trimming spaces.
func (m *ObjectMeta) Ignores(detector string) bool {
	v, ok := m.Annotations[AnnIgnore]
	if !ok {
		return false
	}
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d == "all" || d == detector || DetectorAliases[d] == detector {
			return true
		}
	}
	return false
}
