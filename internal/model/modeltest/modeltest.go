// Package modeltest builds the value-free records of internal/model for tests,
// the way the transforms of internal/transform would build them from API
// objects, and puts them into a real model.Store. It is the one place tests
// get their fixtures from (as cert-manager's test/unit/gen): detect/,
// collectors/ and the other packages' tests call it instead of keeping their
// own copies.
//
// Every builder documents its defaults: they are what tests silently rely on.
// Records are returned as pointers the caller may still change before putting
// them into a Store (records are immutable once stored). Builders that take
// options (ES, SecretStore, App) apply them in order after the defaults.
//
// The package imports only internal/model, apimachinery types and the standard
// library: it must never import detect/ or collectors/ (.golangci.yml's depguard
// rule "modeltest" checks it), and only tests may import it (rule "testonly").
package modeltest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/model"
)

// T0 is the fixed instant builders use where a time is needed and none is
// given: 2026-01-02 12:00:00 UTC. NewStore and Upsert record Secrets as
// observed at T0.
var T0 = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// FP is the fixed-key Fingerprinter SecretValues and LastAppliedData use: the
// same value gives the same fingerprint in every test and every run, different
// values different ones, exactly as the transform's per-process Fingerprinter
// does within one process.
var FP = model.NewFingerprinterWithKey([]byte("driftwatch-modeltest-fixed-key"))

// Meta is the metadata of object ns/name: UID "uid-<ns>-<name>" (stable for a
// name, so repeated upserts of one object are updates, not re-creations), no
// labels, no annotations, zero creation time, no resourceVersion.
func Meta(ns, name string) model.ObjectMeta {
	return model.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}
}

// The modifiers below work on any record (each embeds model.ObjectMeta, whose
// pointer implements metav1.Object) and return it, so they nest in literals.

// WithUID replaces the record's UID: two records of one name with different
// UIDs are a delete and a re-create to the model's history.
func WithUID[T metav1.Object](x T, uid string) T {
	x.SetUID(types.UID(uid))
	return x
}

// Annotate sets annotations given as key, value pairs (creating the map when the
// record has none; an odd last key is ignored).
func Annotate[T metav1.Object](x T, kv ...string) T {
	a := x.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	x.SetAnnotations(a)
	return x
}

// Label sets labels given as key, value pairs (creating the map when the record
// has none).
func Label[T metav1.Object](x T, kv ...string) T {
	l := x.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	x.SetLabels(l)
	return x
}

// Created sets the record's creationTimestamp.
func Created[T metav1.Object](x T, at time.Time) T {
	x.SetCreationTimestamp(metav1.NewTime(at))
	return x
}

// Namespace builds a namespace record; annotations are key, value pairs (for
// driftwatch.io/ignore). Its metadata has only the name: no UID.
func Namespace(name string, ann ...string) *model.Namespace {
	n := &model.Namespace{ObjectMeta: model.ObjectMeta{Name: name}}
	if len(ann) > 0 {
		Annotate(n, ann...)
	}
	return n
}
