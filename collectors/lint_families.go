package collectors

import (
	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
)

// Families only `agent lint` reports: what a manifest shows that a live object
// does not (or not as such). They are declared like the exporter's families, with
// a class and a severity, but kept out of the exporter's catalog: Describe never
// sends them and no detector emits them (finding.LintFamilies lists them).
var (
	// LintSecretDataInManifest: a Secret manifest carries data or stringData.
	LintSecretDataInManifest = finding.Declare(finding.Family{
		Name: "driftwatch_secret_data_in_manifest",
		Lint: []finding.Rule{{ID: "data_in_manifest",
			Why: "a Secret manifest carries data or stringData: the values are in Git (or in whatever rendered the manifest)"}},
		Commands: (*finding.Commands).Object,
		Help: "A Secret manifest carries data or stringData: the values are in Git (or in whatever rendered the manifest), " +
			"readable by everyone who can read the repository, never rotated with the source of truth. " +
			"field says which (data, stringData).",
		Labels:   []string{"namespace", "secret", "field"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
		Class:    "Values in Git",
		Severity: finding.SevWarning,
		LintOnly: true, Detector: "data_in_manifest",
	})

	// LintFluxNeverUpdatedInManifest: a Secret or ExternalSecret manifest
	// carries one of kustomize-controller's skip selectors.
	LintFluxNeverUpdatedInManifest = finding.Declare(finding.Family{
		Name: "driftwatch_flux_never_updated_in_manifest",
		Lint: []finding.Rule{{ID: "flux_never_updated",
			Why: "a Secret or ExternalSecret manifest carries kustomize.toolkit.fluxcd.io/ssa: IfNotPresent (or ssa: Ignore, reconcile: disabled): kustomize-controller never patches it, so keys or entries added to it in Git later never ship while the Kustomization reports the revision applied"}},
		Commands: (*finding.Commands).Object,
		Help: "A Secret or ExternalSecret manifest carries a selector that makes kustomize-controller skip it, as a label or an annotation " +
			"(value compared case-insensitively, as Flux does): reason ssa_if_not_present (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent: " +
			"created once, never patched), ssa_ignore (ssa: Ignore) or reconcile_disabled (kustomize.toolkit.fluxcd.io/reconcile: disabled): " +
			"never applied, not even created. Keys or entries added to it in Git later never ship, while the Kustomization reports the revision applied.",
		Labels:   []string{"namespace", "kind", "name", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{KindLabel: "kind", Kinds: []string{"Secret", "ExternalSecret"}, NameLabel: "name"},
		Class:    "Flux never-updated objects",
		Severity: finding.SevWarning,
		Values:   fluxSkipReasons,
		LintOnly: true, Detector: detect.DetectorFluxNeverUpdated,
	})
)
