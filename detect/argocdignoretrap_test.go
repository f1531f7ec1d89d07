package detect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

func gtApp(ns, name string, respect bool, ign ...model.IgnoreDifference) *model.ArgoApp {
	return &model.ArgoApp{ObjectMeta: gtMeta(ns, name), IgnoreDifferences: ign, RespectIgnoreDifferences: respect, SyncStatus: "Synced"}
}

func gtIgnore(group, kind string, pointers, jq []string) model.IgnoreDifference {
	return model.IgnoreDifference{Group: group, Kind: kind, JSONPointers: pointers, JQPathExpressions: jq}
}

// manages gives an Application the managed resources (status.resources) of the
// given group/kind pairs.
func manages(a *model.ArgoApp, gks ...string) *model.ArgoApp {
	for i := 0; i+1 < len(gks); i += 2 {
		a.Resources = append(a.Resources, model.ArgoResource{Group: gks[i], Kind: gks[i+1], Namespace: "shop", Name: "x"})
	}
	return a
}

func TestIgnoreListTraps(t *testing.T) {
	const esG, esK = "external-secrets.io", "ExternalSecret"
	const mwcG, mwcK = "admissionregistration.k8s.io", "MutatingWebhookConfiguration"
	es := func(a *model.ArgoApp) *model.ArgoApp { return manages(a, esG, esK) }
	hookOnly := es(gtApp("argocd", "hookonly", true, gtIgnore(esG, esK, []string{"/spec/data/0/remoteRef"}, nil)))
	hookOnly.Resources[0].Hook = true
	undecodable := es(gtApp("argocd", "undecodable", true, gtIgnore(esG, esK, []string{"/spec/data/0"}, nil)))
	undecodable.DecodeErr = "decode: x"
	mfm := gtIgnore(esG, esK, nil, nil)
	mfm.ManagedFieldsManagers = []string{"rotator"}
	deployMFM := gtIgnore("apps", "Deployment", nil, nil)
	deployMFM.ManagedFieldsManagers = []string{"kube-controller-manager"}
	f := gtFixture{apps: []*model.ArgoApp{
		// RespectIgnoreDifferences on an ExternalSecret (JSON merge patch).
		es(gtApp("argocd", "trap", true, gtIgnore(esG, esK,
			[]string{"/spec/data/0/remoteRef", "/spec/data/0/remoteRef", "/spec/refreshInterval", "/spec/data/3/remoteRef/key"},
			[]string{".spec.data[].remoteRef.conversionStrategy", ".spec.data[]?.remoteRef.version",
				`.spec.data[] | select(.secretKey == "x")`, ".metadata.labels.team"}), mfm)),
		es(gtApp("argocd", "whole", true, gtIgnore(esG, esK, []string{"/spec/data", "/spec"}, nil))),
		// Without it, only paths hiding whole elements matter.
		es(gtApp("argocd", "norespect", false, gtIgnore(esG, esK, []string{"/spec/data/0/remoteRef", "/spec/data"},
			[]string{".spec.data[]", ".spec.data[].remoteRef.conversionStrategy", ".spec.dataFrom[1:]"}))),
		// Built-in kinds: strategic merge patch.
		manages(gtApp("argocd", "webhook", true, gtIgnore(mwcG, mwcK, nil,
			[]string{".webhooks[]?.clientConfig.caBundle", ".webhooks[].rules[].operations"})), mwcG, mwcK),
		manages(gtApp("argocd", "deploy", true, gtIgnore("apps", "Deployment",
			[]string{"/spec/template/spec/containers/0/args/0"},
			[]string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}), deployMFM), "apps", "Deployment"),
		manages(gtApp("argocd", "cm", true, gtIgnore("", "ConfigMap", []string{"/metadata/annotations/foo", "/data/0"}, nil)), "", "ConfigMap"),
		// A glob kind is judged against the kinds it matches; a filter that could
		// compare a value is not exported.
		manages(gtApp("argocd", "glob", true, gtIgnore("*", "*", nil, []string{`.spec.data[] | select(.secretKey == "c2VjcmV0")`})),
			esG, esK, "", "Secret"),
		// An optional field seen biting: the sync to the compared revision
		// succeeded, the Application and the ExternalSecret stay OutOfSync.
		func() *model.ArgoApp {
			a := es(gtApp("argocd", "bitten", true, gtIgnore(esG, esK, nil, []string{".spec.data[].remoteRef.version"})))
			a.SyncStatus, a.OperationPhase, a.SyncRevision, a.OperationRevision = "OutOfSync", "Succeeded", "r2", "r2"
			a.Resources[0].Status = "OutOfSync"
			return a
		}(),
		// ... but not while the Application is behind (the sync has not run).
		func() *model.ArgoApp {
			a := es(gtApp("argocd", "behind", true, gtIgnore(esG, esK, nil, []string{".spec.data[].remoteRef.version"})))
			a.SyncStatus, a.OperationPhase, a.SyncRevision, a.OperationRevision = "OutOfSync", "Succeeded", "r3", "r2"
			a.Resources[0].Status = "OutOfSync"
			return a
		}(),
		// Nothing managed that the entry matches: no finding.
		gtApp("argocd", "unmanaged", true, gtIgnore(esG, esK, []string{"/spec/data/0/remoteRef"}, nil)),
		manages(gtApp("argocd", "othername", true, model.IgnoreDifference{Group: esG, Kind: esK, Name: "other",
			JSONPointers: []string{"/spec/data/0/remoteRef"}}), esG, esK),
		hookOnly,
		es(gtApp("argocd", "malformed", true, gtIgnore(esG, esK, []string{"spec/data/0"}, []string{".spec.data["}))),
		undecodable,
	}}
	var got []Trap
	f.store().Read(func(v model.View) { got = IgnoreListTraps(v, gtAll()) })
	want := []Trap{
		{"argocd", "behind", esG, esK, ".spec.data[].remoteRef.version", true, EffectRebuildsListIfPresent},
		{"argocd", "bitten", esG, esK, ".spec.data[].remoteRef.version", true, EffectRebuildsList},
		{"argocd", "deploy", "apps", "Deployment", "/spec/template/spec/containers/0/args/0", true, EffectRebuildsList},
		{"argocd", "glob", "*", "*", `.spec.data[] | select(…)`, true, EffectRebuildsListIfPresent},
		{"argocd", "norespect", esG, esK, "/spec/data", false, EffectHidesNewEntries},
		{"argocd", "norespect", esG, esK, ".spec.data[]", false, EffectHidesNewEntries},
		{"argocd", "norespect", esG, esK, ".spec.dataFrom[1:]", false, EffectHidesNewEntries},
		{"argocd", "trap", esG, esK, "/spec/data/0/remoteRef", true, EffectRebuildsList},
		{"argocd", "trap", esG, esK, "/spec/data/3/remoteRef/key", true, EffectRebuildsListIfPresent},
		{"argocd", "trap", esG, esK, ".spec.data[].remoteRef.conversionStrategy", true, EffectRebuildsList},
		{"argocd", "trap", esG, esK, ".spec.data[]?.remoteRef.version", true, EffectRebuildsListIfPresent},
		{"argocd", "trap", esG, esK, `.spec.data[] | select(.secretKey == "x")`, true, EffectRebuildsListIfPresent},
		{"argocd", "trap", esG, esK, "managedFieldsManagers:rotator", true, EffectRebuildsListIfPresent},
		{"argocd", "webhook", mwcG, mwcK, ".webhooks[].rules[].operations", true, EffectRebuildsListIfPresent},
		{"argocd", "whole", esG, esK, "/spec/data", true, EffectRebuildsList},
	}
	if !reflect.DeepEqual(got, want) {
		var b strings.Builder
		for _, g := range got {
			fmt.Fprintf(&b, "  %+v\n", g)
		}
		t.Fatalf("got\n%swant\n%+v", b.String(), want)
	}
	for _, tr := range got {
		if strings.Contains(tr.Path, "c2VjcmV0") {
			t.Fatal("a literal compared against a Secret must not be exported")
		}
	}
	for _, tr := range got { // paths that do not parse are judged neither way
		if tr.Application == "malformed" {
			t.Fatalf("a trap from an unparsable path: %+v", tr)
		}
	}
	f.store().Read(func(v model.View) {
		a := gtAll()
		a[model.ResApplications] = false
		if IgnoreListTraps(v, a) != nil {
			t.Fatal("silent without the Applications cache")
		}
	})
}

func TestNotConvergingApps(t *testing.T) {
	now := t0gt
	app := func(name, sync, phase string, finished time.Time, automated bool, rev, opRev string) *model.ArgoApp {
		a := gtApp("argocd", name, false)
		a.SyncStatus, a.OperationPhase, a.OperationFinishedAt = sync, phase, finished
		a.Automated, a.SyncRevision, a.OperationRevision = automated, rev, opRev
		return a
	}
	multi := func(name string, revs, opRevs []string) *model.ArgoApp {
		a := app(name, "OutOfSync", "Succeeded", now.Add(-time.Hour), true, "", "")
		a.SyncRevisions, a.OperationRevisions = revs, opRevs
		return a
	}
	long := now.Add(-20 * time.Minute)
	f := gtFixture{apps: []*model.ArgoApp{
		app("stuck", "OutOfSync", "Succeeded", long, true, "r2", "r2"),
		app("manual-synced", "OutOfSync", "Succeeded", long, false, "r2", "r2"),
		// Behind a newer commit: a manual app waits for a sync, an automated one
		// is about to get it.
		app("manual-behind", "OutOfSync", "Succeeded", now.Add(-time.Hour), false, "r3", "r2"),
		app("auto-behind", "OutOfSync", "Succeeded", now.Add(-time.Hour), true, "r3", "r2"),
		// Without the synced revision, nothing to compare: not reported.
		app("no-result", "OutOfSync", "Succeeded", long, true, "r2", ""),
		multi("multi-stuck", []string{"a", "b"}, []string{"a", "b"}),
		multi("multi-behind", []string{"a", "c"}, []string{"a", "b"}),
		app("recent", "OutOfSync", "Succeeded", now.Add(-2*time.Minute), true, "r2", "r2"),
		app("synced", "Synced", "Succeeded", now.Add(-time.Hour), true, "r2", "r2"),
		app("failed", "OutOfSync", "Failed", now.Add(-time.Hour), true, "r2", "r2"),
		app("running", "OutOfSync", "Running", time.Time{}, true, "r2", "r2"),
		app("never", "OutOfSync", "", time.Time{}, false, "r2", ""),
	}}
	var got []NotConverging
	f.store().Read(func(v model.View) { got = NotConvergingApps(v, gtAll(), now, 10*time.Minute) })
	want := []NotConverging{
		{"argocd", "manual-synced", 1200, false},
		{"argocd", "multi-stuck", 3600, true},
		{"argocd", "stuck", 1200, true},
	}
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
