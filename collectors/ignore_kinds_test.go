package collectors

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// ignoredRecord is one object of kind ns/name carrying driftwatch.io/ignore:
// detector, as the transforms keep it, for TestEveryObjectKindAFindingNamesResolves.
func ignoredRecord(t *testing.T, kind, ns, name, detector string) any {
	t.Helper()
	ann := func(m *model.ObjectMeta) { m.Annotations = map[string]string{model.AnnIgnore: detector} }
	switch kind {
	case "Secret":
		x := mt.Secret(ns, name, "a")
		ann(&x.ObjectMeta)
		return x
	case "ExternalSecret":
		x := mt.ES(ns, name, mt.ESData("a"))
		ann(&x.ObjectMeta)
		return x
	case "Pod":
		x := mt.Pod(ns, name)
		ann(&x.ObjectMeta)
		return x
	case "ServiceAccount":
		x := mt.ServiceAccount(ns, name)
		ann(&x.ObjectMeta)
		return x
	case "SecretStore":
		x := mt.SecretStore(ns, name)
		ann(&x.ObjectMeta)
		return x
	case "ClusterSecretStore":
		x := mt.ClusterSecretStore(name)
		ann(&x.ObjectMeta)
		return x
	case "Application":
		x := mt.App(ns, name)
		ann(&x.ObjectMeta)
		return x
	case "Kustomization":
		x := mt.Kustomization(ns, name)
		ann(&x.ObjectMeta)
		return x
	case "GitRepository", "OCIRepository", "Bucket", "ExternalArtifact":
		x := mt.GitRepository(ns, name)
		x.Kind = kind
		ann(&x.ObjectMeta)
		return x
	}
	t.Fatalf("no record of kind %s here: add one, and a case to model.View.Meta", kind)
	return nil
}

// Every object kind a finding family names — its fixed Kind or each kind its
// kind label may hold — is one model.View.Meta resolves, so
// driftwatch.io/ignore on that object silences the family's findings (a
// Kustomization's annotation once silenced nothing: Meta had no case for it).
// And every kind Meta resolves, it resolves for its own kind only.
func TestEveryObjectKindAFindingNamesResolves(t *testing.T) {
	fams := append(finding.Catalog(), finding.LintFamilies()...)
	kinds := map[string]bool{}
	for _, fam := range fams {
		if fam.Object == nil {
			continue
		}
		if len(fam.Object.AllKinds()) == 0 {
			t.Errorf("%s: names an object of no declared kind", fam.Name)
		}
		for _, k := range fam.Object.AllKinds() {
			kinds[k] = true
			if !slices.Contains(model.MetaKinds, k) {
				t.Errorf("%s names kind %s, which model.View.Meta does not resolve (model.MetaKinds)", fam.Name, k)
			}
		}
	}
	for _, k := range []string{"Secret", "ExternalSecret", "ServiceAccount", "SecretStore", "ClusterSecretStore", "Application", "Kustomization"} {
		if !kinds[k] {
			t.Errorf("no finding family names kind %s any more: is the catalog read?", k)
		}
	}
	for _, kind := range model.MetaKinds {
		ns := "team"
		if kind == "ClusterSecretStore" {
			ns = ""
		}
		s := mt.NewStore(t, ignoredRecord(t, kind, ns, "obj", "some_detector"))
		mt.Read(s, func(v model.View) bool {
			m, ok := v.Meta(kind, ns, "obj")
			if !ok || m == nil || m.Name != "obj" {
				t.Errorf("%s %s/obj: Meta %v %v", kind, ns, m, ok)
				return false
			}
			if !v.Ignores(ns, m, "some_detector") || v.Ignores(ns, m, "other_detector") {
				t.Errorf("%s: the annotation is not read", kind)
			}
			for _, other := range model.MetaKinds {
				if _, ok := v.Meta(other, ns, "obj"); ok && other != kind {
					t.Errorf("%s %s/obj resolves as a %s too", kind, ns, other)
				}
			}
			if _, ok := v.Meta(kind, ns, "other"); ok {
				t.Errorf("%s: another name resolves", kind)
			}
			return true
		})
	}
}

// The Kustomization case end to end: driftwatch.io/ignore: flux_substitute on
// the Kustomization drops its finding from /metrics and counts it silenced.
func TestIgnoreOnAKustomization(t *testing.T) {
	now := time.Unix(10000, 0)
	build := mt.Build("flux-system", "apps", mt.FluxSecret("shop", "db", "HOST"))
	build.Desired.Vars = []model.FluxVarUse{{Var: "DB_HOST", Kind: "Secret", Namespace: "shop", Name: "db"}}
	text := func(ks *model.FluxKustomization) string {
		s := mt.NewStore(t, ks, mt.GitRepository("flux-system", "apps"), build)
		f := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
		var b strings.Builder
		if err := f.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	const series = `driftwatch_flux_substitute_missing{kind="Secret",kustomization="apps",name="vars",namespace="flux-system",reason="absent",variable="DB_HOST"} 1`
	loud := text(mt.Kustomization("flux-system", "apps", mt.KSSubstituteFrom("Secret", "vars", true)))
	if !strings.Contains(loud, series) {
		t.Fatalf("without the annotation, no finding:\n%s", grepLines(loud, "flux_substitute"))
	}
	ks := mt.Kustomization("flux-system", "apps", mt.KSSubstituteFrom("Secret", "vars", true))
	ks.Annotations = map[string]string{model.AnnIgnore: "flux_substitute"}
	quiet := text(ks)
	if strings.Contains(quiet, "driftwatch_flux_substitute_missing{") ||
		!strings.Contains(quiet, `driftwatch_findings_silenced{detector="flux_substitute",namespace="flux-system"} 1`) {
		t.Errorf("with driftwatch.io/ignore: flux_substitute on the Kustomization:\n%s", grepLines(quiet, "flux_substitute"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
