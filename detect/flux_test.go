package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

const fluxNS, appNS = "flux-system", "shop"

// fluxCase is one Kustomization "apps" with its source, its build and the
// live objects.
func fluxStore(t *testing.T, ks *model.FluxKustomization, src *model.FluxSource, build mt.FluxBuild, live ...any) *model.Store {
	t.Helper()
	return mt.NewStore(t, append([]any{ks, src, build}, live...)...)
}

func withAnn(o model.Declared, kv ...string) model.Declared {
	o.Annotations = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Annotations[kv[i]] = kv[i+1]
	}
	return o
}

func TestFluxClaimsAndLookAlikes(t *testing.T) {
	manages := []mt.KSOption{mt.KSManages("", "Secret", appNS, "db"), mt.KSManages("external-secrets.io", "ExternalSecret", appNS, "api")}
	build := mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A", "B"), mt.FluxES(appNS, "api", "X", "Y"))
	live := []any{mt.Secret(appNS, "db", "A"), mt.ES(appNS, "api", mt.ESData("X", "Y")), mt.Secret(appNS, "api", "X")}
	rev2 := "main@sha1:2222222222222222222222222222222222222222"
	otherSrc := mt.GitRepository(fluxNS, "apps")
	otherSrc.ArtifactRevision = rev2
	notReadySrc := mt.GitRepository(fluxNS, "apps")
	notReadySrc.Ready = model.Condition{Status: "False", Reason: "GitOperationFailed"}
	cases := []struct {
		name    string
		ks      *model.FluxKustomization
		src     *model.FluxSource
		want    []string // ns/secret/key of the flux expectations
		claimed bool
	}{
		{name: "applied", ks: mt.Kustomization(fluxNS, "apps", manages...), src: mt.GitRepository(fluxNS, "apps"), claimed: true,
			want: []string{"shop/api/X", "shop/api/Y", "shop/db/A", "shop/db/B"}},
		{name: "suspended", ks: mt.Kustomization(fluxNS, "apps", append(manages, mt.KSSuspend())...), src: mt.GitRepository(fluxNS, "apps")},
		{name: "not ready", ks: mt.Kustomization(fluxNS, "apps", append(manages, mt.KSReady("False", "ReconciliationFailed"))...), src: mt.GitRepository(fluxNS, "apps")},
		{name: "still reconciling a new generation", ks: mt.Kustomization(fluxNS, "apps", append(manages, mt.KSGeneration(2))...), src: mt.GitRepository(fluxNS, "apps")},
		{name: "applied an older revision", ks: mt.Kustomization(fluxNS, "apps", append(manages, mt.KSApplied("main@sha1:0000"))...), src: mt.GitRepository(fluxNS, "apps")},
		// The build is of the revision the Kustomization applied: evidence,
		// whatever the source does meanwhile (the poller builds the new
		// revision on its next round, which is then pending).
		{name: "source moved on", ks: mt.Kustomization(fluxNS, "apps", manages...), src: otherSrc, claimed: true,
			want: []string{"shop/api/X", "shop/api/Y", "shop/db/A", "shop/db/B"}},
		// A Git outage: source-controller keeps serving the last artifact,
		// kustomize-controller keeps it applied and stays Ready=True.
		{name: "source not ready", ks: mt.Kustomization(fluxNS, "apps", manages...), src: notReadySrc, claimed: true,
			want: []string{"shop/api/X", "shop/api/Y", "shop/db/A", "shop/db/B"}},
		{name: "built from another spec than the one reconciled", ks: mt.Kustomization(fluxNS, "apps", append(manages, mt.KSBuildKey("other"))...),
			src: mt.GitRepository(fluxNS, "apps")},
		{name: "not in the inventory", ks: mt.Kustomization(fluxNS, "apps"), src: mt.GitRepository(fluxNS, "apps"), claimed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fluxStore(t, c.ks, c.src, build, live...)
			got := mt.Read(s, func(v model.View) []string {
				var out []string
				for _, e := range Expectations(v, mt.All()) {
					if e.Source == SourceFlux {
						out = append(out, e.Namespace+"/"+e.Secret+"/"+e.Key)
					}
				}
				return out
			})
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("expectations %v, want %v", got, c.want)
			}
			claimed := mt.Read(s, func(v model.View) bool { return len(FluxClaims(v)) > 0 })
			if claimed != c.claimed {
				t.Errorf("claimed %v, want %v", claimed, c.claimed)
			}
			// Missing keys: only the applied case reports source flux.
			res := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
			var flux []string
			for _, m := range res.Missing {
				if m.Source == SourceFlux {
					flux = append(flux, m.Secret+"/"+m.Key)
				}
			}
			want := []string(nil)
			if c.claimed && c.want != nil {
				want = []string{"api/Y", "db/B"}
			}
			if !reflect.DeepEqual(flux, want) {
				t.Errorf("missing keys from flux %v, want %v", flux, want)
			}
		})
	}
}
