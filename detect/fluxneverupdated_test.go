package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// FluxNeverUpdatedObjects: a Secret or ExternalSecret kustomize-controller
// skips (ssa: IfNotPresent in Git, ssa: Ignore or reconcile: disabled in Git
// or on the live object) while the revision the Kustomization claims applied
// declares entries it lacks. Each case is Kustomization flux-system/apps
// (inventory: Secret shop/db, ExternalSecret shop/api) at Revision1.
func TestFluxNeverUpdated(t *testing.T) {
	manages := []mt.KSOption{mt.KSManages("", "Secret", appNS, "db"), mt.KSManages("external-secrets.io", "ExternalSecret", appNS, "api")}
	inp := func(o model.Declared) model.Declared {
		return withAnn(o, flux.AnnotationSSA, flux.SSAIfNotPresent)
	}
	ign := func(o model.Declared) model.Declared {
		return withAnn(o, flux.AnnotationSSA, flux.SSAIgnore)
	}
	found := func(kind, name, reason, setIn string, missing []string, absent bool) FluxNeverUpdated {
		return FluxNeverUpdated{Namespace: appNS, Kind: kind, Name: name, KSNamespace: fluxNS, KS: "apps",
			Reason: reason, SetIn: setIn, Missing: missing, Absent: absent}
	}
	cases := []struct {
		name  string
		ks    []mt.KSOption // added to manages
		build mt.FluxBuild
		live  []any
		want  []FluxNeverUpdated
	}{
		{name: "IfNotPresent Secret and ExternalSecret, Git added entries",
			build: mt.Build(fluxNS, "apps", inp(mt.FluxSecret(appNS, "db", "A", "B")), inp(mt.FluxES(appNS, "api", "X", "Y"))),
			live:  []any{mt.Secret(appNS, "db", "A"), mt.ES(appNS, "api", mt.ESData("X"))},
			want: []FluxNeverUpdated{found("Secret", "db", flux.SkipSSAIfNotPresent, "git", []string{"B"}, false),
				found("ExternalSecret", "api", flux.SkipSSAIfNotPresent, "git", []string{"Y"}, false)}},
		{name: "missing entries sorted",
			build: mt.Build(fluxNS, "apps", inp(mt.FluxES(appNS, "api", "Z", "M", "A"))),
			live:  []any{mt.ES(appNS, "api", mt.ESData("M"))},
			want:  []FluxNeverUpdated{found("ExternalSecret", "api", flux.SkipSSAIfNotPresent, "git", []string{"A", "Z"}, false)}},
		{name: "IfNotPresent that Git never changed: quiet",
			build: mt.Build(fluxNS, "apps", inp(mt.FluxSecret(appNS, "db", "A")), inp(mt.FluxES(appNS, "api", "X"))),
			live:  []any{mt.Secret(appNS, "db", "A", "EXTRA"), mt.ES(appNS, "api", mt.ESData("X"))}},
		{name: "IfNotPresent not created yet: not its doing",
			build: mt.Build(fluxNS, "apps", inp(mt.FluxSecret(appNS, "db", "A")), inp(mt.FluxES(appNS, "api", "X")))},
		{name: "reconcile disabled in Git",
			build: mt.Build(fluxNS, "apps", withAnn(mt.FluxSecret(appNS, "db", "A", "B"), flux.AnnotationReconcile, flux.ReconcileDisabled)),
			live:  []any{mt.Secret(appNS, "db", "A")},
			want:  []FluxNeverUpdated{found("Secret", "db", flux.SkipReconcileDisabled, "git", []string{"B"}, false)}},
		{name: "reconcile disabled on the live object",
			build: mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B")),
			live:  []any{mt.Annotate(mt.Secret(appNS, "db", "A"), flux.AnnotationReconcile, "disabled")},
			want:  []FluxNeverUpdated{found("Secret", "db", flux.SkipReconcileDisabled, "cluster", []string{"B"}, false)}},
		{name: "reconcile disabled on the live object that holds every entry: quiet",
			build: mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B")),
			live:  []any{mt.Annotate(mt.Secret(appNS, "db", "A", "B"), flux.AnnotationReconcile, "disabled")}},
		{name: "ssa Ignore on the live ExternalSecret",
			build: mt.Build(fluxNS, "apps", mt.FluxES(appNS, "api", "X", "Y")),
			live:  []any{mt.Annotate(mt.ES(appNS, "api", mt.ESData("X")), flux.AnnotationSSA, flux.SSAIgnore)},
			want:  []FluxNeverUpdated{found("ExternalSecret", "api", flux.SkipSSAIgnore, "cluster", []string{"Y"}, false)}},
		// The object in Git is read first: its reason and set_in win.
		{name: "skipped in Git and on the live object: Git's",
			build: mt.Build(fluxNS, "apps", ign(mt.FluxSecret(appNS, "db", "A", "B"))),
			live:  []any{mt.Annotate(mt.Secret(appNS, "db", "A"), flux.AnnotationReconcile, "disabled")},
			want:  []FluxNeverUpdated{found("Secret", "db", flux.SkipSSAIgnore, "git", []string{"B"}, false)}},
		{name: "ssa Ignore in Git, never created",
			build: mt.Build(fluxNS, "apps", ign(mt.FluxSecret(appNS, "db", "A"))),
			want:  []FluxNeverUpdated{found("Secret", "db", flux.SkipSSAIgnore, "git", []string{"A"}, true)}},
		{name: "ssa Ignore in Git, never created, no keys declared",
			build: mt.Build(fluxNS, "apps", ign(mt.FluxSecret(appNS, "db"))),
			want:  []FluxNeverUpdated{found("Secret", "db", flux.SkipSSAIgnore, "git", nil, true)}},
		// fluxcd/pkg/ssa matches its selectors on labels too, values
		// case-insensitively (utils.AnyInMetadata).
		{name: "IfNotPresent as a label in Git, value in another case",
			build: mt.Build(fluxNS, "apps", func() model.Declared {
				o := mt.FluxSecret(appNS, "db", "A", "B")
				o.Labels = map[string]string{flux.AnnotationSSA: "ifnotpresent"}
				return o
			}()),
			live: []any{mt.Secret(appNS, "db", "A")},
			want: []FluxNeverUpdated{found("Secret", "db", flux.SkipSSAIfNotPresent, "git", []string{"B"}, false)}},
		{name: "reconcile disabled as a label on the live object",
			build: mt.Build(fluxNS, "apps", mt.FluxES(appNS, "api", "X", "Y")),
			live:  []any{mt.Label(mt.ES(appNS, "api", mt.ESData("X")), flux.AnnotationReconcile, "Disabled")},
			want:  []FluxNeverUpdated{found("ExternalSecret", "api", flux.SkipReconcileDisabled, "cluster", []string{"Y"}, false)}},
		{name: "IfNotPresent on the live object only: applied (read on the object in Git only)",
			build: mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B")),
			live:  []any{mt.Annotate(mt.Secret(appNS, "db", "A"), flux.AnnotationSSA, flux.SSAIfNotPresent)}},
		{name: "no skip annotation: not this detector's",
			build: mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B")),
			live:  []any{mt.Secret(appNS, "db", "A")}},
		{name: "no skip annotation in Git and no live object: not this detector's",
			build: mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A"), mt.FluxES(appNS, "api", "X"))},
		{name: "undetermined (patched): quiet",
			build: mt.Build(fluxNS, "apps", func() model.Declared {
				o := inp(mt.FluxSecret(appNS, "db", "A", "B"))
				o.Undetermined = "a patch"
				return o
			}()),
			live: []any{mt.Secret(appNS, "db", "A")}},
		{name: "not in the inventory: quiet",
			build: mt.Build(fluxNS, "apps", inp(mt.FluxSecret(appNS, "other", "A", "B"))),
			live:  []any{mt.Secret(appNS, "other", "A")}},
		// The Kustomization claims nothing: neither the skip nor the revision
		// is evidence.
		{name: "suspended: quiet", ks: []mt.KSOption{mt.KSSuspend()},
			build: mt.Build(fluxNS, "apps", inp(mt.FluxSecret(appNS, "db", "A", "B"))),
			live:  []any{mt.Secret(appNS, "db", "A")}},
		{name: "applied another revision: quiet", ks: []mt.KSOption{mt.KSApplied("main@sha1:0000")},
			build: mt.Build(fluxNS, "apps", inp(mt.FluxSecret(appNS, "db", "A", "B"))),
			live:  []any{mt.Secret(appNS, "db", "A")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ks := mt.Kustomization(fluxNS, "apps", append(append([]mt.KSOption(nil), manages...), c.ks...)...)
			s := fluxStore(t, ks, mt.GitRepository(fluxNS, "apps"), c.build, c.live...)
			got := mt.Read(s, FluxNeverUpdatedObjects)
			checkSlice(t, "never updated", got, c.want)
		})
	}
}
