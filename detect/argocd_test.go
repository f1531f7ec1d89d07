package detect

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/model"
)

func gtApp(ns, name string, respect bool, ign ...model.IgnoreDifference) *model.ArgoApp {
	return &model.ArgoApp{ObjectMeta: gtMeta(ns, name), IgnoreDifferences: ign, RespectIgnoreDifferences: respect, SyncStatus: "Synced"}
}

func gtIgnore(group, kind string, pointers, jq []string) model.IgnoreDifference {
	return model.IgnoreDifference{Group: group, Kind: kind, JSONPointers: pointers, JQPathExpressions: jq}
}

func TestIgnoreListTraps(t *testing.T) {
	const esG, esK = "external-secrets.io", "ExternalSecret"
	f := gtFixture{apps: []*model.ArgoApp{
		gtApp("argocd", "trap", true, gtIgnore(esG, esK, []string{"/spec/data/0/remoteRef", "/spec/data/0/remoteRef", "/spec/refreshInterval"}, nil)),
		gtApp("argocd", "jq", false, gtIgnore(esG, esK, nil, []string{`.spec.data[] | select(.secretKey == "x")`, ".metadata.labels.team"})),
		gtApp("argocd", "whole", true, gtIgnore(esG, esK, []string{"/spec/data", "/spec"}, nil)),
		gtApp("argocd", "healthy", true, gtIgnore("", "ConfigMap", []string{"/metadata/annotations/foo", "/data/0"}, nil)),
		gtApp("argocd", "deploy", false, gtIgnore("apps", "Deployment", nil, []string{`.spec.template.spec.containers[] | select(.name == "app") | .image`})),
		gtApp("argocd", "secretfilter", false, gtIgnore("", "Secret", nil, []string{`.data | select(. == "c2VjcmV0") | .x[0]`})),
		gtApp("argocd", "malformed", true, gtIgnore(esG, esK, []string{"spec/data/0"}, []string{".spec.data["})),
		func() *model.ArgoApp {
			a := gtApp("argocd", "undecodable", true, gtIgnore(esG, esK, []string{"/spec/data/0"}, nil))
			a.DecodeErr = "decode: x"
			return a
		}(),
	}}
	var got []Trap
	var errs []IgnorePathError
	f.store().Read(func(v model.View) { got = IgnoreListTraps(v, gtAll()); errs = IgnorePathErrors(v, gtAll()) })
	want := []Trap{
		{"argocd", "deploy", "apps", "Deployment", `.spec.template.spec.containers[] | select(.name == "app") | .image`, false, argocd.ReachIntoElement},
		{"argocd", "jq", esG, esK, `.spec.data[] | select(.secretKey == "x")`, false, argocd.ReachIntoElement},
		{"argocd", "secretfilter", "", "Secret", `.data | select(…) | .x[0]`, false, argocd.ReachIntoElement},
		{"argocd", "trap", esG, esK, "/spec/data/0/remoteRef", true, argocd.ReachIntoElement},
		{"argocd", "whole", esG, esK, "/spec/data", true, argocd.ReachWholeList},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	for _, tr := range got {
		if strings.Contains(tr.Path, "c2VjcmV0") {
			t.Fatal("a literal compared against a Secret must not be exported")
		}
	}
	if len(errs) != 2 || errs[0].Application != "malformed" {
		t.Fatalf("parse errors: %+v", errs)
	}
	f.store().Read(func(v model.View) {
		a := gtAll()
		a[model.ResApplications] = false
		if IgnoreListTraps(v, a) != nil || IgnorePathErrors(v, a) != nil {
			t.Fatal("silent without the Applications cache")
		}
	})
}

func TestNotConvergingApps(t *testing.T) {
	now := t0gt
	app := func(name, sync, phase string, finished time.Time) *model.ArgoApp {
		a := gtApp("argocd", name, false)
		a.SyncStatus, a.OperationPhase, a.OperationFinishedAt = sync, phase, finished
		return a
	}
	f := gtFixture{apps: []*model.ArgoApp{
		app("stuck", "OutOfSync", "Succeeded", now.Add(-20*time.Minute)),
		app("recent", "OutOfSync", "Succeeded", now.Add(-2*time.Minute)),
		app("synced", "Synced", "Succeeded", now.Add(-time.Hour)),
		app("failed", "OutOfSync", "Failed", now.Add(-time.Hour)),
		app("running", "OutOfSync", "Running", time.Time{}),
		app("never", "OutOfSync", "", time.Time{}),
	}}
	var got []NotConverging
	f.store().Read(func(v model.View) { got = NotConvergingApps(v, gtAll(), now, 10*time.Minute) })
	want := []NotConverging{{"argocd", "stuck", 1200}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
}

func TestArgoExpectations(t *testing.T) {
	app := model.Ref{Namespace: "argocd", Name: "shop"}
	f := gtFixture{desired: map[model.Ref][]model.DesiredObject{app: {
		{Kind: "Secret", Namespace: "shop", Name: "db", DataKeys: []string{"password", "user"}},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "api", Target: "api-creds",
			SpecDataKeys: []string{"KEY", ""}, HasSpecData: true},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "tpl",
			SpecDataKeys: []string{"raw"}, HasTemplate: true, TemplateKeys: []string{"DSN"}},
		{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: "shop", Name: "bulk"},
		{Kind: "ConfigMap", Namespace: "shop", Name: "ignored"},
	}}}
	var got []Expectation
	f.store().Read(func(v model.View) { got = ArgoExpectations(v) })
	c := []Consumer{{Kind: "Application", Name: "shop"}}
	want := []Expectation{
		{Namespace: "shop", Secret: "api-creds", Key: "KEY", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "bulk", Key: "", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "db", Key: "password", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "db", Key: "user", Source: SourceArgoCD, Consumers: c},
		{Namespace: "shop", Secret: "tpl", Key: "DSN", Source: SourceArgoCD, Consumers: c},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}
