package collectors

import (
	"fmt"
	"slices"
)

// Families only `agent lint` reports: what a manifest shows that a live object
// does not (or not as such). They are declared like the exporter's families, with
// a class and a severity, but kept out of the exporter's catalog: Describe never
// sends them and no detector emits them.
var (
	// LintSecretDataInManifest: a Secret manifest carries data or stringData.
	LintSecretDataInManifest = declareLint(Family{
		Name: "driftwatch_secret_data_in_manifest",
		Help: "A Secret manifest carries data or stringData: the values are in Git (or in whatever rendered the manifest), " +
			"readable by everyone who can read the repository, never rotated with the source of truth. " +
			"field says which (data, stringData).",
		Labels:   []string{"namespace", "secret", "field"},
		Kind:     KindFinding,
		Object:   &ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Values in Git",
		Severity: SevWarning,
	})

	// LintFluxNeverUpdatedInManifest: a Secret or ExternalSecret manifest
	// carries one of kustomize-controller's skip selectors.
	LintFluxNeverUpdatedInManifest = declareLint(Family{
		Name: "driftwatch_flux_never_updated_in_manifest",
		Help: "A Secret or ExternalSecret manifest carries a selector that makes kustomize-controller skip it, as a label or an annotation " +
			"(value compared case-insensitively, as Flux does): reason ssa_if_not_present (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent: " +
			"created once, never patched), ssa_ignore (ssa: Ignore) or reconcile_disabled (kustomize.toolkit.fluxcd.io/reconcile: disabled): " +
			"never applied, not even created. Keys or entries added to it in Git later never ship, while the Kustomization reports the revision applied.",
		Labels:   []string{"namespace", "kind", "name", "reason"},
		Kind:     KindFinding,
		Object:   &ObjectRef{KindLabel: "kind", NameLabel: "name"},
		Class:    "Flux never-updated objects",
		Severity: SevWarning,
	})
)

// lintCatalog holds the lint-only families, in declaration order.
var lintCatalog []*Family

func declareLint(f Family) *Family {
	if f.Kind != KindFinding || f.Severity.Rank() < 0 || f.Class == "" {
		panic(fmt.Sprintf("collectors: lint family %s needs kind finding, a class and a severity", f.Name))
	}
	f.LintOnly = true
	fam := f
	lintCatalog = append(lintCatalog, &fam)
	return &fam
}

// LintFamilies returns the lint-only families. Do not modify them.
func LintFamilies() []*Family { return slices.Clone(lintCatalog) }

// LookupAny returns the family of a metric name, exporter or lint-only.
func LookupAny(name string) (*Family, bool) {
	if f, ok := Lookup(name); ok {
		return f, true
	}
	for _, f := range lintCatalog {
		if f.Name == name {
			return f, true
		}
	}
	return nil, false
}
