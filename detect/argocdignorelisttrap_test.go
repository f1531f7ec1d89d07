package detect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestIgnoreListTraps(t *testing.T) {
	const esG, esK = "external-secrets.io", "ExternalSecret"
	const mwcG, mwcK = "admissionregistration.k8s.io", "MutatingWebhookConfiguration"
	manageES := mt.AppManages(esG, esK)
	hookOnly := mt.App("argocd", "hookonly", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, []string{"/spec/data/0/remoteRef"}, nil)), manageES)
	hookOnly.Resources[0].Hook = true
	undecodable := mt.App("argocd", "undecodable", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, []string{"/spec/data/0"}, nil)), manageES)
	undecodable.DecodeErr = "decode: x"
	mfm := mt.Ignore(esG, esK, nil, nil)
	mfm.ManagedFieldsManagers = []string{"rotator"}
	deployMFM := mt.Ignore("apps", "Deployment", nil, nil)
	deployMFM.ManagedFieldsManagers = []string{"kube-controller-manager"}
	s := mt.NewStore(t, []*model.ArgoApp{
		// RespectIgnoreDifferences on an ExternalSecret (JSON merge patch).
		mt.App("argocd", "trap", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK,
			[]string{"/spec/data/0/remoteRef", "/spec/data/0/remoteRef", "/spec/refreshInterval", "/spec/data/3/remoteRef/key"},
			[]string{".spec.data[].remoteRef.conversionStrategy", ".spec.data[]?.remoteRef.version",
				`.spec.data[] | select(.secretKey == "x")`, ".metadata.labels.team"}), mfm), manageES),
		mt.App("argocd", "whole", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, []string{"/spec/data", "/spec"}, nil)), manageES),
		// Without it, only paths hiding whole elements matter.
		mt.App("argocd", "norespect", mt.AppIgnore(mt.Ignore(esG, esK, []string{"/spec/data/0/remoteRef", "/spec/data"},
			[]string{".spec.data[]", ".spec.data[].remoteRef.conversionStrategy", ".spec.dataFrom[1:]"})), manageES),
		// Built-in kinds: strategic merge patch.
		mt.App("argocd", "webhook", mt.AppRespect(), mt.AppIgnore(mt.Ignore(mwcG, mwcK, nil,
			[]string{".webhooks[]?.clientConfig.caBundle", ".webhooks[].rules[].operations"})), mt.AppManages(mwcG, mwcK)),
		mt.App("argocd", "deploy", mt.AppRespect(), mt.AppIgnore(mt.Ignore("apps", "Deployment",
			[]string{"/spec/template/spec/containers/0/args/0"},
			[]string{`.spec.template.spec.containers[] | select(.name == "app") | .image`}), deployMFM), mt.AppManages("apps", "Deployment")),
		mt.App("argocd", "cm", mt.AppRespect(), mt.AppIgnore(mt.Ignore("", "ConfigMap", []string{"/metadata/annotations/foo", "/data/0"}, nil)), mt.AppManages("", "ConfigMap")),
		// A glob kind is judged against the kinds it matches; a filter that could
		// compare a value is not exported.
		mt.App("argocd", "glob", mt.AppRespect(), mt.AppIgnore(mt.Ignore("*", "*", nil, []string{`.spec.data[] | select(.secretKey == "c2VjcmV0")`})), mt.AppManages(esG, esK, "", "Secret")),
		// An optional field seen biting: the sync to the compared revision
		// succeeded, the Application and the ExternalSecret stay OutOfSync.
		func() *model.ArgoApp {
			a := mt.App("argocd", "bitten", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, nil, []string{".spec.data[].remoteRef.version"})), manageES)
			a.SyncStatus, a.OperationPhase, a.SyncRevision, a.OperationRevision = "OutOfSync", "Succeeded", "r2", "r2"
			a.Resources[0].Status = "OutOfSync"
			return a
		}(),
		// ... but not while the Application is behind (the sync has not run).
		func() *model.ArgoApp {
			a := mt.App("argocd", "behind", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, nil, []string{".spec.data[].remoteRef.version"})), manageES)
			a.SyncStatus, a.OperationPhase, a.SyncRevision, a.OperationRevision = "OutOfSync", "Succeeded", "r3", "r2"
			a.Resources[0].Status = "OutOfSync"
			return a
		}(),
		// Nothing managed that the entry matches: no finding.
		mt.App("argocd", "unmanaged", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, []string{"/spec/data/0/remoteRef"}, nil))),
		mt.App("argocd", "othername", mt.AppRespect(), mt.AppIgnore(model.IgnoreDifference{Group: esG, Kind: esK, Name: "other",
			JSONPointers: []string{"/spec/data/0/remoteRef"}}), mt.AppManages(esG, esK)),
		hookOnly,
		mt.App("argocd", "malformed", mt.AppRespect(), mt.AppIgnore(mt.Ignore(esG, esK, []string{"spec/data/0"}, []string{".spec.data["})), manageES),
		undecodable,
	})
	var got []Trap
	s.Read(func(v model.View) { got = IgnoreListTraps(v, mt.All()) })
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
	s.Read(func(v model.View) {
		if IgnoreListTraps(v, mt.AllBut(model.ResApplications)) != nil {
			t.Fatal("silent without the Applications cache")
		}
	})
}
