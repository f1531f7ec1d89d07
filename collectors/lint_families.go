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
