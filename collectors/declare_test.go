package collectors

import (
	"testing"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/flux"
)

// TestEveryFindingFamilyDeclaresItsText: each finding family that `agent
// check`, the page and lint list (one that restates no other) declares, next
// to its detector, everything they show: the commands that confirm and fix
// it, and either its lint rules or why lint cannot judge it offline. Every
// family is emitted by a registered detector whose name driftwatch.io/ignore
// takes.
func TestEveryFindingFamilyDeclaresItsText(t *testing.T) {
	n := 0
	for _, f := range append(finding.Catalog(), finding.LintFamilies()...) {
		if !f.Listed() {
			if f.Commands != nil || len(f.Lint) > 0 || f.Offline != "" {
				t.Errorf("%s: not listed (kind %s, restates %q), yet declares commands or lint rules", f.Name, f.Kind, f.Restates)
			}
			continue
		}
		n++
		if f.Commands == nil {
			t.Errorf("%s: no Commands", f.Name)
		}
		if (len(f.Lint) == 0) == (f.Offline == "") {
			t.Errorf("%s: wants either lint rules or the reason lint does not judge it offline (Offline), not both", f.Name)
		}
		if f.Detector == "" {
			t.Errorf("%s: no detector emits it", f.Name)
		}
	}
	if n == 0 {
		t.Fatal("no listed finding family")
	}
}

// TestEveryFindingFamilyHasADashboardPanel: each finding family that restates
// no other is a class of the overview dashboard ("Findings by class",
// "Findings by namespace"), by its own Panel or by that of a family restating
// it (the count form of missing keys), or says in NoPanel why it is not. A
// class counts the objects whose series are above 0 now, so it is a gauge of
// the current state; titles are distinct.
func TestEveryFindingFamilyHasADashboardPanel(t *testing.T) {
	panelOf := map[string][]string{} // listed family -> families showing it
	titles := map[string]string{}
	for _, f := range append(finding.Catalog(), finding.LintFamilies()...) {
		if f.Panel != "" && f.NoPanel != "" {
			t.Errorf("%s: declares a dashboard class and why it has none", f.Name)
		}
		if f.Panel == "" {
			if f.NoPanel != "" && (!f.Listed() || f.LintOnly) {
				t.Errorf("%s: says why it has no dashboard class, but only exported finding families that restate none have one", f.Name)
			}
			continue
		}
		if f.Kind != finding.KindFinding || f.LintOnly || !f.StateOfFinding() {
			t.Errorf("%s: a dashboard class is an exported finding gauge (kind %s, lint-only %v, type %v)", f.Name, f.Kind, f.LintOnly, f.Type)
		}
		if prev, dup := titles[f.Panel]; dup {
			t.Errorf("%s: dashboard class %q is %s's too", f.Name, f.Panel, prev)
		}
		titles[f.Panel] = f.Name
		shown := f.Name
		if f.Restates != "" {
			shown = f.Restates
		}
		panelOf[shown] = append(panelOf[shown], f.Name)
	}
	n := 0
	for _, f := range finding.Catalog() {
		if !f.Listed() {
			continue
		}
		n++
		switch by := panelOf[f.Name]; {
		case len(by) == 0 && f.NoPanel == "":
			t.Errorf("%s: no overview panel: declare Panel (the overview's title for it, then DRIFTWATCH_UPDATE_DOCS=1 go test ./collectors -run TestDashboardPanelsAreGenerated and go generate in dashboards/) or NoPanel (why the overview does not count it)", f.Name)
		case len(by) > 1:
			t.Errorf("%s: shown by %d dashboard classes (%v): the overview would count its objects more than once", f.Name, len(by), by)
		case len(by) == 1 && f.NoPanel != "":
			t.Errorf("%s: says why it has no dashboard class, yet %s shows it", f.Name, by[0])
		}
	}
	if n == 0 || len(titles) == 0 {
		t.Fatal("no listed finding family or no dashboard class")
	}
}

// TestValueTextsCoverEveryValue: a family that declares the text of its label
// values (finding.Family.Values) has one for every value its detector emits,
// and every lint rule narrowed to one of them says why (its own Why or the
// value's text).
func TestValueTextsCoverEveryValue(t *testing.T) {
	want := map[string][]string{
		"driftwatch_argocd_ignore_list_trap": {string(detect.EffectRebuildsList), string(detect.EffectRebuildsListIfPresent), string(detect.EffectHidesNewEntries)},
		"driftwatch_externalsecret_unsafe": {detect.UnsafeImplicitCreationPolicy, detect.UnsafeOwnerOverExisting, detect.UnsafeDeleteWithMerge,
			detect.UnsafeUnexpectedKeys},
		"driftwatch_flux_never_updated":             {flux.SkipSSAIfNotPresent, flux.SkipSSAIgnore, flux.SkipReconcileDisabled},
		"driftwatch_flux_never_updated_in_manifest": {flux.SkipSSAIfNotPresent, flux.SkipSSAIgnore, flux.SkipReconcileDisabled},
	}
	for _, f := range append(finding.Catalog(), finding.LintFamilies()...) {
		values, ok := want[f.Name]
		if (f.Values != nil) != ok {
			t.Errorf("%s: value texts declared %v, expected by this test %v", f.Name, f.Values != nil, ok)
			continue
		}
		if !ok {
			continue
		}
		delete(want, f.Name)
		for _, v := range values {
			if f.ValueText(map[string]string{f.Values.Label: v}) == "" {
				t.Errorf("%s: %s=%q has no text", f.Name, f.Values.Label, v)
			}
		}
		if len(f.Values.Text) != len(values) {
			t.Errorf("%s: texts for %d values, the detector emits %d", f.Name, len(f.Values.Text), len(values))
		}
		for _, r := range f.Lint {
			if r.Why == "" {
				t.Errorf("%s: rule %s says no why", f.Name, r.ID)
			}
		}
	}
	for name := range want {
		t.Errorf("family %s is not declared", name)
	}
}
