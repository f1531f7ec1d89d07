package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// FluxSubstitutesMissing: a variable the claimed build uses without a default
// that nothing provides (postBuild.substitute, a substituteFrom Secret holding
// it), reported once for each optional substituteFrom Secret that could have:
// absent or lacks_variable. Each case is Kustomization flux-system/apps at
// Revision1 whose build uses ${DB_HOST} in Secret shop/db unless it says
// otherwise.
func TestFluxSubstitutesMissing(t *testing.T) {
	dbHost := []model.FluxVarUse{{Var: "DB_HOST", Kind: "Secret", Namespace: appNS, Name: "db"}}
	inline := func(names ...string) mt.KSOption {
		return func(k *model.FluxKustomization) { k.InlineVars = names }
	}
	missing := func(name, variable, reason, usedBy string) FluxSubstituteMissing {
		return FluxSubstituteMissing{Namespace: fluxNS, KS: "apps", Kind: "Secret", Name: name, Variable: variable, Reason: reason, UsedBy: usedBy}
	}
	const usedByDB = "Secret/shop/db"
	cases := []struct {
		name string
		ks   []mt.KSOption
		vars []model.FluxVarUse // nil: dbHost
		live []any
		want []FluxSubstituteMissing
	}{
		{name: "optional Secret absent", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true)},
			want: []FluxSubstituteMissing{missing("vars", "DB_HOST", "absent", usedByDB)}},
		{name: "optional Secret lacks it", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true)},
			live: []any{mt.Secret(fluxNS, "vars", "OTHER")}, want: []FluxSubstituteMissing{missing("vars", "DB_HOST", "lacks_variable", usedByDB)}},
		// substituteFrom objects are read in the Kustomization's namespace.
		{name: "a Secret of that name in another namespace", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true)},
			live: []any{mt.Secret(appNS, "vars", "DB_HOST")}, want: []FluxSubstituteMissing{missing("vars", "DB_HOST", "absent", usedByDB)}},
		{name: "two optional Secrets: one finding each", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), mt.KSSubstituteFrom("Secret", "more", true)},
			live: []any{mt.Secret(fluxNS, "more", "OTHER")},
			want: []FluxSubstituteMissing{missing("vars", "DB_HOST", "absent", usedByDB), missing("more", "DB_HOST", "lacks_variable", usedByDB)}},
		// A required one that does not exist fails the reconcile (not claimed
		// then); here it exists without the variable: only the optional one
		// is reported.
		{name: "a required Secret is not reported", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "base", false), mt.KSSubstituteFrom("Secret", "vars", true)},
			live: []any{mt.Secret(fluxNS, "base", "OTHER")}, want: []FluxSubstituteMissing{missing("vars", "DB_HOST", "absent", usedByDB)}},
		{name: "only the variables nothing provides",
			ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true)},
			vars: []model.FluxVarUse{{Var: "API_URL", Kind: "Deployment", Namespace: appNS, Name: "web"}, dbHost[0],
				{Var: "REGION", Kind: "ConfigMap", Namespace: appNS, Name: "settings"}},
			live: []any{mt.Secret(fluxNS, "vars", "DB_HOST")},
			want: []FluxSubstituteMissing{missing("vars", "API_URL", "lacks_variable", "Deployment/shop/web"),
				missing("vars", "REGION", "lacks_variable", "ConfigMap/shop/settings")}},

		{name: "provided by the Secret", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true)},
			live: []any{mt.Secret(fluxNS, "vars", "DB_HOST")}},
		{name: "provided by another Secret", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), mt.KSSubstituteFrom("Secret", "more", false)},
			live: []any{mt.Secret(fluxNS, "more", "DB_HOST")}},
		{name: "provided inline (postBuild.substitute)", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), inline("DB_HOST")}},
		{name: "a ConfigMap may provide it: not judged", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), mt.KSSubstituteFrom("ConfigMap", "cm", true)}},
		{name: "a ConfigMap listed first: not judged", ks: []mt.KSOption{mt.KSSubstituteFrom("ConfigMap", "cm", true), mt.KSSubstituteFrom("Secret", "vars", true)}},
		{name: "required only: Flux fails loudly", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", false)}},
		{name: "no variable used", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true)}, vars: []model.FluxVarUse{}},
		// The transform sets HasPostBuild whenever spec.postBuild exists; the
		// detector judges only Kustomizations that have one.
		{name: "no postBuild", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), func(k *model.FluxKustomization) { k.HasPostBuild = false }}},
		{name: "not ready: not claimed", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), mt.KSReady("False", "BuildFailed")}},
		{name: "applied another revision: not claimed", ks: []mt.KSOption{mt.KSSubstituteFrom("Secret", "vars", true), mt.KSApplied("main@sha1:0000")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "HOST"))
			build.Desired.Vars = dbHost
			if c.vars != nil {
				build.Desired.Vars = c.vars
			}
			s := fluxStore(t, mt.Kustomization(fluxNS, "apps", c.ks...), mt.GitRepository(fluxNS, "apps"), build, c.live...)
			checkSlice(t, "substitutes missing", mt.Read(s, FluxSubstitutesMissing), c.want)
		})
	}
}
