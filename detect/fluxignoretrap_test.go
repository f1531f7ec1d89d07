package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// ignoreRule adds a spec.ignore rule with a full selector (KSIgnore sets only
// kind and name).
func ignoreRule(r model.FluxIgnoreRule) mt.KSOption {
	return func(k *model.FluxKustomization) { k.Ignore = append(k.Ignore, r) }
}

// FluxIgnoreTraps: a spec.ignore path covering a whole Secret data map or
// ExternalSecret spec.data (spec.dataFrom, spec, the document) of determined
// objects the Kustomization's inventory lists and the rule selects; biting
// when the Kustomization claims the build and a selected object exists
// without entries the build declares. Each case is Kustomization
// flux-system/apps (inventory: Secret shop/db, ExternalSecret shop/api)
// whose build declares db A, B and api X, Y unless the case says otherwise.
func TestFluxIgnoreTraps(t *testing.T) {
	base := mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B"), mt.FluxES(appNS, "api", "X", "Y"))
	manages := []mt.KSOption{mt.KSManages("", "Secret", appNS, "db"), mt.KSManages("external-secrets.io", "ExternalSecret", appNS, "api")}
	short := []any{mt.Secret(appNS, "db", "A"), mt.ES(appNS, "api", mt.ESData("X"))}
	full := []any{mt.Secret(appNS, "db", "A", "B"), mt.ES(appNS, "api", mt.ESData("X", "Y"))}
	trap := func(kind, path string, biting bool, objects, missing []string) FluxIgnoreTrap {
		return FluxIgnoreTrap{Namespace: fluxNS, KS: "apps", Kind: kind, Path: path, Biting: biting, Objects: objects, Missing: missing}
	}
	api, db := []string{"shop/api"}, []string{"shop/db"}
	esBiting := []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", true, api, []string{"Y"})}
	labelled := func(o model.Declared) model.Declared {
		o.Labels = map[string]string{"team": "payments"}
		o.Annotations = map[string]string{"owner": "rotator"}
		return o
	}
	build2 := func(objs ...model.Declared) *mt.FluxBuild {
		b := mt.Build(fluxNS, "apps", objs...)
		return &b
	}
	cases := []struct {
		name  string
		ks    []mt.KSOption // added to manages
		build *mt.FluxBuild // nil: base
		live  []any
		want  []FluxIgnoreTrap
	}{
		{name: "whole lists, biting", ks: []mt.KSOption{mt.KSIgnore("ExternalSecret", "api", "/spec/data"), mt.KSIgnore("Secret", "", "/data")}, live: short,
			want: []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", true, api, []string{"Y"}), trap("Secret", "/data", true, db, []string{"B"})}},
		{name: "whole lists, not biting yet", ks: []mt.KSOption{mt.KSIgnore("ExternalSecret", "", "/spec/data")}, live: full,
			want: []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", false, api, nil)}},
		{name: "the whole document, the spec and dataFrom", ks: []mt.KSOption{mt.KSIgnore("", "", "", "/spec", "/spec/dataFrom")}, live: short,
			want: []FluxIgnoreTrap{trap("ExternalSecret", "", true, api, []string{"Y"}), trap("ExternalSecret", "/spec", true, api, []string{"Y"}),
				trap("ExternalSecret", "/spec/dataFrom", true, api, []string{"Y"}), trap("Secret", "", true, db, []string{"B"})}},
		{name: "a trailing slash", ks: []mt.KSOption{mt.KSIgnore("Secret", "", "/data/")}, live: short,
			want: []FluxIgnoreTrap{trap("Secret", "/data/", true, db, []string{"B"})}},
		{name: "element, field, one key, stringData: not traps", ks: []mt.KSOption{mt.KSIgnore("ExternalSecret", "", "/spec/data/0", "/spec/data/0/remoteRef/conversionStrategy"),
			mt.KSIgnore("Secret", "", "/data/A", "/stringData")}, live: short},
		{name: "another kind's list: not traps", ks: []mt.KSOption{mt.KSIgnore("ExternalSecret", "", "/data"), mt.KSIgnore("Secret", "", "/spec/data", "/spec")}, live: short},
		{name: "no target: every object", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data")}, live: short, want: esBiting},
		{name: "kind regex", ks: []mt.KSOption{mt.KSIgnore("External.*", "", "/spec")}, live: short,
			want: []FluxIgnoreTrap{trap("ExternalSecret", "/spec", true, api, []string{"Y"})}},
		{name: "no ignore rule", live: short},

		// Selectors (fluxcd/pkg/ssa jsondiff.SelectorRegex).
		{name: "selector matching another object", ks: []mt.KSOption{mt.KSIgnore("ExternalSecret", "other", "/spec/data")}, live: short},
		{name: "regex anchored", ks: []mt.KSOption{mt.KSIgnore("External", "", "/spec/data")}, live: short},
		{name: "group and namespace match", live: short, want: esBiting,
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, Group: `external-secrets\.io`, Namespace: "sh.*"})}},
		{name: "another namespace", live: short,
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, Namespace: "other"})}},
		{name: "another group", live: short,
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, Group: "apps"})}},
		// The build keeps no API version: any version pattern matches.
		{name: "a version pattern", live: short, want: esBiting,
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, Kind: "ExternalSecret", Version: "v9"})}},
		{name: "label and annotation selectors matching", live: short, want: esBiting,
			build: build2(mt.FluxSecret(appNS, "db", "A", "B"), labelled(mt.FluxES(appNS, "api", "X", "Y"))),
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true,
				LabelSelector: "team=payments", AnnotationSelector: "owner in (rotator)"})}},
		{name: "label selector not matching", live: short,
			build: build2(mt.FluxSecret(appNS, "db", "A", "B"), labelled(mt.FluxES(appNS, "api", "X", "Y"))),
			ks:    []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, LabelSelector: "team=web"})}},
		{name: "annotation selector not matching", live: short,
			build: build2(mt.FluxSecret(appNS, "db", "A", "B"), labelled(mt.FluxES(appNS, "api", "X", "Y"))),
			ks:    []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, AnnotationSelector: "owner=someone"})}},
		// kustomize-controller fails the reconcile on an invalid selector.
		{name: "invalid regex matches nothing", live: short,
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, Name: "api("})}},
		{name: "invalid label selector matches nothing", live: short,
			ks: []mt.KSOption{ignoreRule(model.FluxIgnoreRule{Paths: []string{"/spec/data"}, HasTarget: true, LabelSelector: "team in ("})}},

		// The objects a trap may select.
		{name: "objects of one kind under one path: one trap", ks: []mt.KSOption{mt.KSIgnore("ExternalSecret", "", "/spec/data"),
			mt.KSManages("external-secrets.io", "ExternalSecret", appNS, "api2"), mt.KSManages("external-secrets.io", "ExternalSecret", "other", "api3")},
			build: build2(mt.FluxES(appNS, "api", "X", "Y"), mt.FluxES(appNS, "api2", "P", "Q"), mt.FluxES("other", "api3", "K")),
			live:  []any{mt.ES(appNS, "api", mt.ESData("X")), mt.ES(appNS, "api2", mt.ESData()), mt.ES("other", "api3", mt.ESData("K"))},
			want:  []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", true, []string{"other/api3", "shop/api", "shop/api2"}, []string{"P", "Q", "Y"})}},
		{name: "two rules, one path: objects and entries once", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data"), mt.KSIgnore("ExternalSecret", "api", "/spec/data")},
			live: short, want: esBiting},
		{name: "an object the build cannot determine", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data", "/data")}, live: short,
			build: build2(mt.FluxSecret(appNS, "db", "A", "B"), func() model.Declared {
				o := mt.FluxES(appNS, "api", "X", "Y")
				o.Undetermined = "a patch"
				return o
			}()),
			want: []FluxIgnoreTrap{trap("Secret", "/data", true, db, []string{"B"})}},
		{name: "an object outside the inventory", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data")},
			build: build2(mt.FluxES(appNS, "api", "X", "Y"), mt.FluxES(appNS, "unlisted", "Z", "W")),
			live:  append([]any{mt.ES(appNS, "unlisted", mt.ESData("Z"))}, short...), want: esBiting},
		// The ignore rule does not keep an object from being created: absent
		// is not its doing.
		{name: "an absent object: set, not biting", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data")},
			live: []any{mt.Secret(appNS, "db", "A")}, want: []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", false, api, nil)}},

		// A trap is set before it bites: reported, never biting, where the
		// Kustomization claims nothing; nothing without a build to judge by.
		{name: "suspended: set, not biting", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data"), mt.KSSuspend()}, live: short,
			want: []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", false, api, nil)}},
		{name: "not ready: set, not biting", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data"), mt.KSReady("False", "HealthCheckFailed")}, live: short,
			want: []FluxIgnoreTrap{trap("ExternalSecret", "/spec/data", false, api, nil)}},
		// (The poller leaves an unjudged build without objects; these are kept
		// to show they are not read.)
		{name: "build unjudged", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data")}, live: short,
			build: func() *mt.FluxBuild { b := base; b.Desired.Unjudged = "build_failed"; return &b }()},
		{name: "no build", ks: []mt.KSOption{mt.KSIgnore("", "", "/spec/data")}, live: short,
			build: &mt.FluxBuild{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ks := mt.Kustomization(fluxNS, "apps", append(append([]mt.KSOption(nil), manages...), c.ks...)...)
			var records []any
			switch {
			case c.build == nil:
				records = append(records, base)
			case c.build.KS.Name != "":
				records = append(records, *c.build)
			}
			s := mt.NewStore(t, append(append([]any{ks, mt.GitRepository(fluxNS, "apps")}, records...), c.live...)...)
			checkSlice(t, "traps", mt.Read(s, FluxIgnoreTraps), c.want)
		})
	}
}

// Traps of several Kustomizations come sorted by namespace, Kustomization,
// kind and path.
func TestFluxIgnoreTrapsOrder(t *testing.T) {
	var records []any
	for _, k := range []struct{ ns, name string }{{fluxNS, "zeta"}, {fluxNS, "apps"}, {"apps-ns", "apps"}} {
		records = append(records,
			mt.Kustomization(k.ns, k.name, mt.KSManages("", "Secret", appNS, k.name), mt.KSManages("external-secrets.io", "ExternalSecret", appNS, k.name),
				mt.KSIgnore("", "", "/spec/data", "/data", "/spec")),
			mt.GitRepository(k.ns, k.name),
			mt.Build(k.ns, k.name, mt.FluxSecret(appNS, k.name, "A"), mt.FluxES(appNS, k.name, "X")))
	}
	s := mt.NewStore(t, records...)
	var got []string
	for _, tr := range mt.Read(s, FluxIgnoreTraps) {
		got = append(got, tr.Namespace+" "+tr.KS+" "+tr.Kind+" "+tr.Path)
	}
	want := []string{
		"apps-ns apps ExternalSecret /spec", "apps-ns apps ExternalSecret /spec/data", "apps-ns apps Secret /data",
		"flux-system apps ExternalSecret /spec", "flux-system apps ExternalSecret /spec/data", "flux-system apps Secret /data",
		"flux-system zeta ExternalSecret /spec", "flux-system zeta ExternalSecret /spec/data", "flux-system zeta Secret /data",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
