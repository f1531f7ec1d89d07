package argocd

import (
	"github.com/driftwatch/driftwatch/internal/apicompat"

	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	appclient "github.com/argoproj/argo-cd/v3/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	local "github.com/driftwatch/driftwatch/internal/argocd"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2025, 3, 4, 5, 8, 9, 0, time.UTC))
)

// applications are fully populated upstream Applications: one addressing its
// cluster by server URL, one by cluster name (Argo CD accepts either).
func applications() []*v1alpha1.Application {
	app := func(name string, dest v1alpha1.ApplicationDestination, sync v1alpha1.SyncStatusCode, phase synccommon.OperationPhase) *v1alpha1.Application {
		return &v1alpha1.Application{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "argocd", ResourceVersion: "7", Generation: 2,
				Labels: map[string]string{"team": "payments"}, Annotations: map[string]string{"note": "fixture"},
			},
			Spec: v1alpha1.ApplicationSpec{
				Project:     "payments",
				Source:      &v1alpha1.ApplicationSource{RepoURL: "https://git.example/payments.git", Path: "deploy", TargetRevision: "main"},
				Destination: dest,
				SyncPolicy: &v1alpha1.SyncPolicy{
					Automated:   &v1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true},
					SyncOptions: v1alpha1.SyncOptions{"ServerSideApply=true", "RespectIgnoreDifferences=true", "CreateNamespace=true"},
					Retry:       &v1alpha1.RetryStrategy{Limit: 3},
				},
				IgnoreDifferences: v1alpha1.IgnoreDifferences{
					{Group: "", Kind: "Secret", Name: "db-credentials", Namespace: "payments",
						JSONPointers: []string{"/data/password", "/metadata/annotations/rotated-at"}},
					{Group: "external-secrets.io", Kind: "ExternalSecret",
						JQPathExpressions:     []string{".spec.data[] | select(.secretKey == \"token\")"},
						ManagedFieldsManagers: []string{"external-secrets"}},
				},
				RevisionHistoryLimit: ptrTo(int64(5)),
			},
			Status: v1alpha1.ApplicationStatus{
				Resources: []v1alpha1.ResourceStatus{
					{Group: "", Version: "v1", Kind: "Secret", Namespace: "payments", Name: "db-credentials",
						Status: v1alpha1.SyncStatusCodeOutOfSync, Health: &v1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "payments", Name: "api",
						Status: v1alpha1.SyncStatusCodeSynced, SyncWave: 1, RequiresPruning: true},
					// a sync hook (argocd.argoproj.io/hook): not desired state
					{Group: "batch", Version: "v1", Kind: "Job", Namespace: "payments", Name: "migrate",
						Status: v1alpha1.SyncStatusCodeSynced, Hook: true},
				},
				Sync: v1alpha1.SyncStatus{
					Status: sync, Revision: "abc123",
					ComparedTo: v1alpha1.ComparedTo{Destination: dest, Source: v1alpha1.ApplicationSource{RepoURL: "https://git.example/payments.git"}},
				},
				Health:       v1alpha1.AppHealthStatus{Status: health.HealthStatusDegraded, Message: "1 of 2 ready"},
				ReconciledAt: &t1,
				OperationState: &v1alpha1.OperationState{
					Operation: v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: "abc123", SyncOptions: v1alpha1.SyncOptions{"ServerSideApply=true"}}},
					SyncResult: &v1alpha1.SyncOperationResult{Revision: "abc123",
						Source: v1alpha1.ApplicationSource{RepoURL: "https://git.example/payments.git", Path: "deploy", TargetRevision: "main"},
						Resources: v1alpha1.ResourceResults{
							{Group: "", Version: "v1", Kind: "Secret", Namespace: "payments", Name: "db-credentials",
								Status: synccommon.ResultCodeSynced, Message: "secret/db-credentials configured", SyncPhase: synccommon.SyncPhaseSync},
							{Group: "batch", Version: "v1", Kind: "Job", Namespace: "payments", Name: "migrate",
								HookType: synccommon.HookTypePreSync, HookPhase: synccommon.OperationSucceeded, SyncPhase: synccommon.SyncPhasePreSync},
						}},
					Phase:      phase,
					Message:    "successfully synced (all tasks run)",
					StartedAt:  t0,
					FinishedAt: &t1,
					RetryCount: 1,
				},
				SourceType: v1alpha1.ApplicationSourceTypeDirectory,
			},
		}
	}
	// A multi-source Application: status.sync.revisions and
	// operationState.syncResult.revisions instead of the single revision.
	multi := app("payments-multi", v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "payments"},
		v1alpha1.SyncStatusCodeOutOfSync, synccommon.OperationSucceeded)
	multi.Spec.Source = nil
	multi.Spec.Sources = v1alpha1.ApplicationSources{
		{RepoURL: "https://git.example/payments.git", Path: "deploy", TargetRevision: "main"},
		{RepoURL: "https://charts.example", Chart: "payments", TargetRevision: "1.2.3"},
	}
	multi.Status.Sync.Revision = ""
	multi.Status.Sync.Revisions = []string{"abc123", "1.2.3"}
	multi.Status.OperationState.SyncResult = &v1alpha1.SyncOperationResult{Revisions: []string{"abc123", "1.2.3"}, Sources: multi.Spec.Sources}
	return []*v1alpha1.Application{
		app("payments", v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "payments"},
			v1alpha1.SyncStatusCodeOutOfSync, synccommon.OperationSucceeded),
		app("payments-eu", v1alpha1.ApplicationDestination{Name: "eu-cluster", Namespace: "payments"},
			v1alpha1.SyncStatusCodeSynced, synccommon.OperationFailed),
		multi,
	}
}

// managedResources is the body of GET /api/v1/applications/{name}/managed-resources
// as the Argo CD API server builds it.
func managedResources() *appclient.ManagedResourcesResponse {
	return &appclient.ManagedResourcesResponse{Items: []*v1alpha1.ResourceDiff{
		{
			Group: "", Kind: "Secret", Namespace: "payments", Name: "db-credentials",
			TargetState:         `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-credentials"},"data":{"password":null}}`,
			LiveState:           `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-credentials"},"data":{"password":null}}`,
			NormalizedLiveState: `{}`, PredictedLiveState: `{}`, Diff: "", Modified: true, ResourceVersion: "99",
		},
		{
			Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "payments", Name: "db-credentials",
			TargetState: `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret"}`,
			LiveState:   `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret"}`,
			Hook:        true,
		},
	}}
}

func ptrTo[T any](v T) *T { return &v }

// viaUnstructured decodes the way the agent decodes objects from a dynamic informer.
func viaUnstructured[T any](t *testing.T, obj any) (T, any) {
	t.Helper()
	var out T
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal upstream %T: %v", obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if u := (&unstructured.Unstructured{}); m["kind"] != nil {
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatalf("unstructured from %T: %v", obj, err)
		}
		m = u.Object
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out); err != nil {
		t.Fatalf("FromUnstructured %T -> %T: %v", obj, out, err)
	}
	var uj any
	if err := json.Unmarshal(b, &uj); err != nil {
		t.Fatal(err)
	}
	return out, uj
}

// viaJSON decodes the way an HTTP client decodes an Argo CD API response (the API
// server encodes responses with encoding/json: util/grpc.JSONMarshaler).
func viaJSON[T any](t *testing.T, obj any) (T, any) {
	t.Helper()
	var out T
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("json.Unmarshal %T -> %T: %v", obj, out, err)
	}
	var uj any
	if err := json.Unmarshal(b, &uj); err != nil {
		t.Fatal(err)
	}
	return out, uj
}

func report(t *testing.T, what string, errs []string) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(errs, "\n  "))
	}
}

func TestStructure(t *testing.T) {
	cases := []struct {
		name            string
		local, upstream any
	}{
		{"Application", local.Application{}, v1alpha1.Application{}},
		{"ResourceDiff", local.ResourceDiff{}, v1alpha1.ResourceDiff{}},
		{"ManagedResourcesResponse", local.ManagedResourcesResponse{}, appclient.ManagedResourcesResponse{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			report(t, "local fields without an upstream counterpart",
				apicompat.CheckStructure(reflect.TypeOf(c.local), reflect.TypeOf(c.upstream)))
		})
	}
}

func TestRoundTripApplication(t *testing.T) {
	c := apicompat.NewValueChecker()
	for _, app := range applications() {
		got, uj := viaUnstructured[local.Application](t, app)
		c.Check(got, uj)
	}
	report(t, "Application values", c.Errs)
	report(t, "Application fields never populated by a fixture", c.Uncovered(reflect.TypeFor[local.Application]()))
}

func TestRoundTripManagedResources(t *testing.T) {
	for name, decode := range map[string]func(*testing.T, any) (local.ManagedResourcesResponse, any){
		"encoding/json":                viaJSON[local.ManagedResourcesResponse],
		"DefaultUnstructuredConverter": viaUnstructured[local.ManagedResourcesResponse],
	} {
		t.Run(name, func(t *testing.T) {
			c := apicompat.NewValueChecker()
			got, uj := decode(t, managedResources())
			c.Check(got, uj)
			report(t, "ManagedResourcesResponse values", c.Errs)
			report(t, "ManagedResourcesResponse fields never populated", c.Uncovered(reflect.TypeFor[local.ManagedResourcesResponse]()))
		})
	}
}

func TestSpotChecks(t *testing.T) {
	apps := applications()
	a, _ := viaUnstructured[local.Application](t, apps[0])
	b, _ := viaUnstructured[local.Application](t, apps[1])
	switch {
	case a.Spec.Destination.Server != "https://kubernetes.default.svc", b.Spec.Destination.Name != "eu-cluster",
		a.Spec.SyncPolicy == nil || len(a.Spec.SyncPolicy.SyncOptions) != 3 || a.Spec.SyncPolicy.SyncOptions[1] != "RespectIgnoreDifferences=true",
		len(a.Spec.IgnoreDifferences) != 2 || a.Spec.IgnoreDifferences[0].JSONPointers[0] != "/data/password",
		a.Spec.IgnoreDifferences[1].JQPathExpressions[0] != `.spec.data[] | select(.secretKey == "token")`,
		len(a.Status.Resources) != 3 || a.Status.Resources[0].Status != "OutOfSync" || a.Status.Resources[0].Kind != "Secret",
		a.Status.Sync.Status != "OutOfSync",
		a.Status.OperationState == nil || a.Status.OperationState.Phase != "Succeeded" ||
			a.Status.OperationState.FinishedAt == nil || !a.Status.OperationState.FinishedAt.Equal(&t1),
		b.Status.OperationState.Phase != "Failed",
		a.Spec.SyncPolicy.Automated == nil || !a.Spec.SyncPolicy.Automated.SelfHeal,
		a.Spec.IgnoreDifferences[1].ManagedFieldsManagers[0] != "external-secrets",
		a.Status.Sync.Revision != "abc123" || a.Status.OperationState.SyncResult == nil || a.Status.OperationState.SyncResult.Revision != "abc123",
		!a.Status.Resources[2].Hook || a.Status.Resources[0].Hook,
		len(a.Status.OperationState.SyncResult.Resources) != 2 || a.Status.OperationState.SyncResult.Resources[0].Status != "Synced" ||
			a.Status.OperationState.SyncResult.Resources[0].Kind != "Secret" || a.Status.OperationState.SyncResult.Resources[1].HookType != "PreSync":
		t.Errorf("Application decoded wrongly:\n%+v\n%+v", a, b)
	}
	m, _ := viaUnstructured[local.Application](t, apps[2])
	if m.Status.Sync.Revision != "" || len(m.Status.Sync.Revisions) != 2 || m.Status.OperationState.SyncResult == nil ||
		len(m.Status.OperationState.SyncResult.Revisions) != 2 || m.Status.OperationState.SyncResult.Revisions[1] != "1.2.3" {
		t.Errorf("multi-source Application decoded wrongly: %+v", m.Status)
	}
	mr, _ := viaJSON[local.ManagedResourcesResponse](t, managedResources())
	if len(mr.Items) != 2 || mr.Items[0].Kind != "Secret" || !strings.Contains(mr.Items[0].TargetState, `"password":null`) ||
		mr.Items[0].Hook || !mr.Items[1].Hook {
		t.Errorf("ManagedResourcesResponse decoded wrongly: %+v", mr)
	}
}
