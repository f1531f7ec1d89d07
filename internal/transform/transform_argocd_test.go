package transform

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/internal/model"
)

func appFromYAML(t *testing.T, s string) *model.ArgoApp {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	out, err := newTransformer().Application(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*model.ArgoApp)
}

// The fields of an Application the Argo CD detectors read, in the shape Argo CD
// v3.2.9's controller writes them (status of an automated, single-source app
// after a sync; a hook in status.resources).
func TestApplicationTransformSyncFields(t *testing.T) {
	a := appFromYAML(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd, uid: u1, resourceVersion: "3"}
spec:
  destination: {server: "https://kubernetes.default.svc", namespace: shop}
  ignoreDifferences:
  - group: external-secrets.io
    kind: ExternalSecret
    jqPathExpressions: [".spec.data[].remoteRef.conversionStrategy"]
    managedFieldsManagers: [rotator]
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [RespectIgnoreDifferences=true]
status:
  sync: {status: OutOfSync, revision: "4f1c2a9e0b7d6c5a4f1c2a9e0b7d6c5a4f1c2a9e"}
  operationState:
    phase: Succeeded
    startedAt: "2026-12-03T10:00:00Z"
    finishedAt: "2026-12-03T10:00:02Z"
    operation: {sync: {revision: "4f1c2a9e0b7d6c5a4f1c2a9e0b7d6c5a4f1c2a9e"}}
    syncResult: {revision: "4f1c2a9e0b7d6c5a4f1c2a9e0b7d6c5a4f1c2a9e", source: {repoURL: "file:///git"}}
  resources:
  - {group: external-secrets.io, version: v1, kind: ExternalSecret, namespace: shop, name: api, status: OutOfSync}
  - {version: v1, kind: Secret, namespace: shop, name: pre, hook: true}
`)
	rev := "4f1c2a9e0b7d6c5a4f1c2a9e0b7d6c5a4f1c2a9e"
	want := &model.ArgoApp{
		ObjectMeta: a.ObjectMeta,
		IgnoreDifferences: []model.IgnoreDifference{{Group: "external-secrets.io", Kind: "ExternalSecret",
			JQPathExpressions: []string{".spec.data[].remoteRef.conversionStrategy"}, ManagedFieldsManagers: []string{"rotator"}}},
		RespectIgnoreDifferences: true, Automated: true, SelfHeal: true,
		SyncStatus: "OutOfSync", SyncRevision: rev,
		OperationPhase: "Succeeded", OperationFinishedAt: time.Date(2026, 12, 3, 10, 0, 2, 0, time.UTC), OperationRevision: rev,
		DestinationNamespace: "shop",
		Resources: []model.ArgoResource{
			{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api", Status: "OutOfSync"},
			{Kind: "Secret", Namespace: "shop", Name: "pre", Hook: true},
		},
	}
	if a.OperationFinishedAt.Equal(want.OperationFinishedAt) {
		want.OperationFinishedAt = a.OperationFinishedAt // same instant, any location
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", a, want)
	}
	if d := appFromYAML(t, `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: gone, namespace: argocd,
  deletionTimestamp: "2026-12-03T10:00:00Z", finalizers: [resources-finalizer.argocd.argoproj.io]}}`); !d.Deleting {
		t.Fatal("an Application with a deletionTimestamp is not marked Deleting")
	}

	// Multi-source: revisions lists; v3's automated.enabled: false is manual.
	m := appFromYAML(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: multi, namespace: argocd}
spec:
  syncPolicy:
    automated: {enabled: false, selfHeal: true}
status:
  sync: {status: Synced, revisions: [aaa, bbb]}
  operationState:
    phase: Succeeded
    startedAt: "2026-12-03T10:00:00Z"
    syncResult: {revision: "", revisions: [aaa, bbb]}
`)
	if m.Automated || m.SelfHeal || !reflect.DeepEqual(m.SyncRevisions, []string{"aaa", "bbb"}) ||
		!reflect.DeepEqual(m.OperationRevisions, []string{"aaa", "bbb"}) || m.SyncRevision != "" {
		t.Fatalf("multi-source app: %+v", m)
	}
	// No syncPolicy: manual.
	if n := appFromYAML(t, `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: n}}`); n.Automated {
		t.Fatal("an Application without syncPolicy.automated is manual")
	}
}
