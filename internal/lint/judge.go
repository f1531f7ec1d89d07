package lint

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// offlineHealth: every resource lint models is complete (the rendering is all
// there is); Helm releases are not (a rendering has no release Secrets).
type offlineHealth struct{}

func (offlineHealth) States() []model.ResourceState {
	var out []model.ResourceState
	for _, r := range model.AllResources {
		out = append(out, model.ResourceState{Resource: r, Enabled: r != model.ResHelmReleases, Synced: true})
	}
	return out
}

// detectorFindings runs every registered detector over the model exactly as
// the exporter's scrape does (driftwatch.io/ignore included) and returns its
// typed findings with a value (collectors.Findings.Typed: the families that
// restate another are left out), the number of findings an ignore annotation
// silenced (the evaluation's Silenced: what driftwatch_findings_silenced
// sums), and the detectors that failed (a contained panic: their findings are
// missing).
func detectorFindings(store *model.Store, before func(string)) ([]finding.Finding, int, []string) {
	fs := collectors.NewFindings(store, offlineHealth{}, collectors.Config{Now: time.Now, BeforeDetector: before})
	var out []finding.Finding
	ev := fs.Run()
	for _, f := range ev.Findings {
		if f.Value != 0 {
			out = append(out, f)
		}
	}
	return out, ev.Silenced, ev.Failed
}

func (e *evaluation) judge() {
	found, silenced, failed := detectorFindings(e.store, e.opts.beforeDetector)
	for _, d := range failed {
		// A driftwatch bug, contained: the other detectors' findings are
		// reported, and the run is an error (exit 2), not a pass.
		e.report.Problems = append(e.report.Problems, Problem{File: "-",
			Message: "detector " + d + " failed (" + RuleDetectorFailed + "): its findings are missing; the other detectors' are reported"})
	}
	e.report.Silenced = silenced
	for _, df := range found {
		r, ok := ruleOf(df.Family, df.Labels)
		if !ok {
			continue // needs a live status or history: not judged offline
		}
		judge, ok := judges[r.ID]
		if !ok {
			// A rule without a judge is a driftwatch bug (TestEveryRuleHasAJudge).
			e.report.Problems = append(e.report.Problems, Problem{File: "-", Message: "internal error: rule " + r.ID + " has no judge"})
			continue
		}
		judge(e, Finding{Finding: df, Rule: r.ID})
	}
	for _, r := range Rules {
		if mj, ok := manifestJudges[r.ID]; ok {
			mj(e, r)
		}
	}
}

// judges place the findings of the exporter's detectors in the manifests, by
// rule ID: the offline judgement each rule a family declares needs
// (TestEveryRuleHasAJudge holds every declared rule to having one). The
// finding carries what its detector emitted (its object among it); a judge
// finds the object's documents and writes the message and locations.
var judges = map[string]func(e *evaluation, f Finding){
	"missing_key":                       (*evaluation).missingKey,
	"absent_secret":                     (*evaluation).absentSecret,
	detect.UnsafeImplicitCreationPolicy: (*evaluation).unsafe,
	detect.UnsafeOwnerOverExisting:      (*evaluation).unsafe,
	detect.UnsafeDeleteWithMerge:        (*evaluation).unsafe,
	detect.UnsafeUnexpectedKeys:         (*evaluation).unsafe,
	"duplicate_credentials":             (*evaluation).duplicate,
	"last_applied_data":                 (*evaluation).lastAppliedData,
	"argocd_ignore_list_trap":           (*evaluation).ignoreTrap,
	"flux_ignore_trap":                  (*evaluation).fluxIgnoreTrap,
	"workload_identity_missing":         (*evaluation).identity,
	"workload_identity_info":            (*evaluation).identity,
}

// manifestJudges judge the rules of the lint-only families
// (finding.LintFamilies) on the documents alone.
var manifestJudges = map[string]func(e *evaluation, r *Rule){
	"data_in_manifest":   (*evaluation).dataInManifest,
	"flux_never_updated": (*evaluation).fluxNeverUpdated,
}

func (e *evaluation) add(f Finding) { e.report.Findings = append(e.report.Findings, f) }

func (e *evaluation) assume(rule, msg string, locs []Location) {
	e.report.Assumptions = append(e.report.Assumptions, Assumption{Rule: rule, Message: msg, Locations: locs})
}

func (e *evaluation) doc(kind, ns, name string) *Doc {
	if ds := e.docs[objKey{kind, ns, name}]; len(ds) > 0 {
		return ds[0]
	}
	return nil
}

// consumer is a document that expects something of a Secret, and where.
type consumer struct {
	obj finding.Object
	loc Location
}

// consumers finds the documents behind an expectation of source src on key of
// Secret ref ("" for the Secret's existence).
func (e *evaluation) consumers(ref model.Ref, key, src string) []consumer {
	var out []consumer
	switch detect.Source(src) {
	case detect.SourcePod:
		for _, p := range e.pods {
			if p.rec.Namespace != ref.Namespace {
				continue
			}
			for _, u := range p.rec.Uses {
				if u.Secret != ref.Name || (key == "" && u.Optional) || (key != "" && u.Key != key) {
					continue
				}
				line := p.doc.secretRefLine(ref.Name, key)
				if line == 0 {
					line = p.doc.secretRefLine(ref.Name, "")
				}
				what := fmt.Sprintf("Secret %q", ref.Name)
				if key != "" {
					what = fmt.Sprintf("key %q of Secret %q", key, ref.Name)
				}
				out = append(out, consumer{finding.Object{Kind: p.doc.Kind, Namespace: ref.Namespace, Name: p.doc.Name}, e.loc(p.doc, line, what)})
				break
			}
		}
	case detect.SourceExternalSecret:
		for _, w := range e.ess {
			if w.rec.Namespace == ref.Namespace && w.rec.Target == ref.Name {
				out = append(out, consumer{finding.Object{Kind: "ExternalSecret", Namespace: ref.Namespace, Name: w.rec.Name},
					e.loc(w.doc, w.doc.lineOf("spec", "target", "name"), "spec.target")})
			}
		}
	case detect.SourceAnnotation:
		var ds []*Doc
		if d := e.doc("Secret", ref.Namespace, ref.Name); d != nil {
			ds = append(ds, d)
		}
		for _, w := range e.ess {
			if w.rec.Namespace == ref.Namespace && w.rec.Target == ref.Name {
				ds = append(ds, w.doc)
			}
		}
		for _, d := range ds {
			k, v := nodeAt(d.node, "metadata", "annotations", model.AnnExpectedKeys)
			if k == nil || (key != "" && !strings.Contains(scalarText(v), key)) {
				continue
			}
			out = append(out, consumer{finding.Object{Kind: d.Kind, Namespace: ref.Namespace, Name: d.Name}, e.loc(d, d.offset+k.Line, model.AnnExpectedKeys)})
		}
	}
	return out
}

// provided describes what the rendering says the Secret holds.
func (e *evaluation) provided(ref model.Ref) string {
	var parts []string
	if s := e.secrets[ref]; s != nil {
		parts = append(parts, fmt.Sprintf("its manifest has %s", keyList(s.rec.Keys.Names())))
	}
	for _, w := range e.written[ref] {
		parts = append(parts, fmt.Sprintf("ExternalSecret %s writes %s", w.rec.Name, keyList(w.rec.WrittenKeys())))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func objects(cs []consumer) string {
	var names []string
	for _, c := range cs {
		n := c.obj.Kind + " " + c.obj.Name
		if !containsStr(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// secretLocs is the place of a Secret in the rendering: its manifest, else the
// ExternalSecrets writing it.
func (e *evaluation) secretLocs(ref model.Ref) []Location {
	var out []Location
	if d := e.doc("Secret", ref.Namespace, ref.Name); d != nil {
		out = append(out, e.loc(d, d.Line, "Secret "+ref.Name))
	}
	for _, w := range e.written[ref] {
		out = append(out, e.loc(w.doc, w.doc.lineOf("spec", "target"), "ExternalSecret "+w.rec.Name))
	}
	return out
}

func (e *evaluation) missingKey(f Finding) {
	ns := f.Object.Namespace
	ref := model.Ref{Namespace: ns, Name: f.Object.Name}
	key, src := f.Labels["key"], f.Labels["source"]
	cs := e.consumers(ref, key, src)
	var locs []Location
	for _, c := range cs {
		locs = append(locs, c.loc)
	}
	locs = append(locs, e.secretLocs(ref)...)
	who := objects(cs)
	verb := "reads"
	if src == string(detect.SourceAnnotation) {
		verb = "expects (" + model.AnnExpectedKeys + ")"
	}
	if who == "" {
		who = "an expectation of source " + src
	}
	if why := e.open[ref]; why != "" {
		msg := fmt.Sprintf("%s %s key %q of Secret %s/%s: assumed present, the rendering does not fix its keys: %s", who, verb, key, ns, ref.Name, why)
		if !e.opts.Strict {
			e.assume(f.Rule, msg, locs)
			return
		}
		f.Message = msg + " (reported under --strict)"
	} else {
		f.Message = fmt.Sprintf("%s %s key %q of Secret %s/%s, which nothing in the rendering provides%s", who, verb, key, ns, ref.Name, e.provided(ref))
	}
	if f.Labels["optional"] == "true" {
		f.Message += "; the reference is optional: the pod starts without the key"
	}
	f.Locations = locs
	e.add(f)
}

func (e *evaluation) absentSecret(f Finding) {
	ns := f.Object.Namespace
	ref := model.Ref{Namespace: ns, Name: f.Object.Name}
	cs := e.consumers(ref, "", f.Labels["source"])
	var locs []Location
	for _, c := range cs {
		locs = append(locs, c.loc)
	}
	who := objects(cs)
	if who == "" {
		who = "an expectation of source " + f.Labels["source"]
	}
	merging := ""
	for _, w := range e.ess {
		if w.rec.Namespace == ns && w.rec.Target == ref.Name && w.rec.CreationPolicy == "Merge" {
			merging = fmt.Sprintf("; ExternalSecret %s merges into it (creationPolicy Merge never creates it)", w.rec.Name)
		}
	}
	msg := fmt.Sprintf("%s needs Secret %s/%s, which is not in the rendering and which no ExternalSecret of it creates%s", who, ns, ref.Name, merging)
	if !e.opts.Strict {
		e.assume(f.Rule, msg+": assumed to exist", locs)
		return
	}
	f.Message, f.Locations = msg, locs
	e.add(f)
}

func (e *evaluation) unsafe(f Finding) {
	ns, name := f.Object.Namespace, f.Object.Name
	d := e.doc("ExternalSecret", ns, name)
	if d == nil {
		return
	}
	var target string
	for _, w := range e.ess {
		if w.doc == d {
			target = w.rec.Target
		}
	}
	switch f.Rule {
	case detect.UnsafeImplicitCreationPolicy:
		f.Message = fmt.Sprintf("ExternalSecret %s/%s does not set spec.target.creationPolicy: ESO defaults it to Owner, takes over an existing Secret %s (deleting the keys it does not write) "+
			"and deleting the ExternalSecret garbage-collects it; set creationPolicy explicitly (Owner, Orphan, Merge or None)", ns, name, target)
		line := d.lineOf("spec", "target")
		f.Locations = []Location{e.loc(d, line, "spec.target.creationPolicy (absent)")}
	case detect.UnsafeOwnerOverExisting:
		f.Message = fmt.Sprintf("ExternalSecret %s/%s (creationPolicy Owner) writes Secret %s, which the rendering also defines with data: "+
			"ESO takes it over and rewrites it, the next apply of the manifest writes the manifest's data back, "+
			"and deleting the ExternalSecret garbage-collects it; drop the Secret manifest, or use creationPolicy Merge", ns, name, target)
		f.Locations = append([]Location{e.loc(d, d.lineOf("spec", "target"), "spec.target")}, e.secretLocs(model.Ref{Namespace: ns, Name: target})[:1]...)
	case detect.UnsafeDeleteWithMerge:
		f.Message = fmt.Sprintf("ExternalSecret %s/%s combines deletionPolicy Delete with creationPolicy Merge: ESO's admission webhook rejects it "+
			"(\"deletionPolicy=Delete must not be used when the controller doesn't own the secret\"); where the webhook is not installed, "+
			"a key that disappears from the store is deleted from Secret %s, which ESO does not own", ns, name, target)
		f.Locations = []Location{e.loc(d, d.lineOf("spec", "target", "deletionPolicy"), "spec.target.deletionPolicy")}
	case detect.UnsafeUnexpectedKeys:
		f.Message = fmt.Sprintf("ExternalSecret %s/%s uses dataFrom.find and Secret %s holds keys outside its declared %s", ns, name, target, model.AnnExpectedKeys)
		f.Locations = append([]Location{e.loc(d, d.lineOf("spec", "dataFrom"), "spec.dataFrom")}, e.secretLocs(model.Ref{Namespace: ns, Name: target})...)
	}
	e.add(f)
}

func (e *evaluation) duplicate(f Finding) {
	ns, a, b := f.Object.Namespace, f.Object.Name, f.Labels["duplicate_of"]
	da, db := e.doc("Secret", ns, a), e.doc("Secret", ns, b)
	if da == nil || db == nil {
		return // an ExternalSecret's target: its values are unknown, never equal
	}
	f.Message = fmt.Sprintf("Secret %s/%s holds exactly the same data as Secret %s/%s (same keys, lengths and keyed fingerprints; no value is compared or shown)", ns, a, ns, b)
	f.Locations = []Location{e.loc(da, da.Line, "Secret "+a), e.loc(db, db.Line, "Secret "+b)}
	e.add(f)
}

func (e *evaluation) lastAppliedData(f Finding) {
	ns, name := f.Object.Namespace, f.Object.Name
	d := e.doc("Secret", ns, name)
	if d == nil {
		return
	}
	f.Message = fmt.Sprintf("Secret %s/%s carries a copy of its data in its %s annotation: a second copy of every value, never rotated", ns, name, model.AnnLastApplied)
	if f.Labels["stale"] == "true" {
		f.Message += "; the copy differs from the manifest's data"
	}
	f.Locations = []Location{e.loc(d, d.lineOf("metadata", "annotations", model.AnnLastApplied), model.AnnLastApplied)}
	e.add(f)
}

func (e *evaluation) ignoreTrap(f Finding) {
	ns, name := f.Object.Namespace, f.Object.Name
	d := e.doc("Application", ns, name)
	if d == nil {
		return
	}
	p := f.Labels["path"]
	needle := strings.TrimPrefix(p, "managedFieldsManagers:")
	line := d.scalarLine(needle, "spec", "ignoreDifferences")
	if line == 0 {
		line = d.lineOf("spec", "ignoreDifferences")
	}
	gk := f.Labels["kind"]
	if g := f.Labels["group"]; g != "" {
		gk = g + "/" + gk
	}
	f.Message = fmt.Sprintf("Application %s/%s ignores %s on %s: %s", ns, name, p, gk, f.Family.ValueText(f.Labels)) // the effect's text
	f.Locations = []Location{e.loc(d, line, "ignoreDifferences "+p)}
	e.add(f)
}

func (e *evaluation) fluxIgnoreTrap(f Finding) {
	ns, name := f.Object.Namespace, f.Object.Name
	d := e.doc("Kustomization", ns, name)
	if d == nil {
		return
	}
	p := f.Labels["path"]
	line := d.scalarLine(p, "spec", "ignore")
	if line == 0 {
		line = d.lineOf("spec", "ignore")
	}
	f.Message = fmt.Sprintf("Kustomization %s/%s ignores %s on %s objects: kustomize-controller leaves it out of drift detection and applies live's value, so entries added in Git never ship",
		ns, name, p, f.Labels["kind"])
	f.Locations = []Location{e.loc(d, line, "ignore "+p)}
	e.add(f)
}

var identityAnnotation = map[string]string{"aws": model.AnnAWSRoleARN, "azurekv": model.AnnAzureClientID, "gcpsm": model.AnnGKEServiceAcct}

func (e *evaluation) identity(f Finding) {
	ns, sa := f.Object.Namespace, f.Object.Name
	store := finding.Object{Kind: f.Labels["store_kind"], Namespace: f.Labels["store_namespace"], Name: f.Labels["store"]}
	var locs []Location
	if d := e.sas[model.Ref{Namespace: ns, Name: sa}]; d != nil {
		locs = append(locs, e.loc(d, d.lineOf("metadata", "annotations"), "ServiceAccount "+sa))
	}
	if d := e.stores[model.StoreKey{Kind: store.Kind, Namespace: store.Namespace, Name: store.Name}]; d != nil {
		line := d.scalarLine(sa, "spec", "provider")
		locs = append(locs, e.loc(d, line, store.Kind+" "+store.Name))
	}
	if len(locs) == 0 {
		return
	}
	who := fmt.Sprintf("ServiceAccount %s/%s, which %s (provider %s) authenticates as,", ns, sa, store.Qualified(), f.Labels["provider"])
	if f.Labels["reason"] == detect.IdentitySAAbsent {
		msg := who + " is not in the rendering"
		if !e.opts.Strict {
			e.assume(f.Rule, msg+": assumed to exist with its annotations", locs)
			return
		}
		f.Message = msg
	} else {
		f.Message = fmt.Sprintf("%s lacks the %s annotation", who, identityAnnotation[f.Labels["provider"]])
	}
	f.Locations = locs
	e.add(f)
}

// dataInManifest is the lint-only rule: a Secret manifest carrying values.
func (e *evaluation) dataInManifest(r *Rule) {
	fam := r.Family()
	refs := make([]model.Ref, 0, len(e.secrets))
	for ref := range e.secrets {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	e.store.Read(func(v model.View) {
		for _, ref := range refs {
			s := e.secrets[ref]
			for _, field := range []string{"data", "stringData"} {
				keys := s.dataKeys
				if field == "stringData" {
					keys = s.stringDataKeys
				}
				if len(keys) == 0 {
					continue
				}
				if v.Ignores(ref.Namespace, &s.rec.ObjectMeta, r.Detector()) {
					e.report.Silenced++
					continue
				}
				labels := map[string]string{"namespace": ref.Namespace, "secret": ref.Name, "field": field}
				e.add(Finding{Finding: finding.New(fam, r.Detector(), labels, 1), Rule: r.ID,
					Message: fmt.Sprintf("Secret %s/%s carries %d value(s) in %s (%s): the values are in Git, or in whatever rendered this manifest",
						ref.Namespace, ref.Name, len(keys), field, keyList(keys)),
					Locations: []Location{e.loc(s.doc, s.doc.lineOf(field), field)}})
			}
		}
	})
}

// fluxNeverUpdated is the lint-only rule flux_never_updated: a Secret or
// ExternalSecret manifest that kustomize-controller skips by its own metadata
// (flux.SkipReason on the object as Git holds it: ssa IfNotPresent, Ignore,
// reconcile disabled). The live detector of the same name pages when Git and
// the cluster have drifted apart; offline there is no cluster, so this is the
// warning that whatever Git adds to the object later will not ship. A Secret
// manifest without data or stringData (a placeholder filled in the cluster)
// holds nothing that could fail to ship and is not reported.
func (e *evaluation) fluxNeverUpdated(r *Rule) {
	fam := r.Family()
	type obj struct {
		kind string
		meta *model.ObjectMeta
		doc  *Doc
	}
	var objs []obj
	for _, s := range e.secrets {
		if len(s.dataKeys)+len(s.stringDataKeys) > 0 {
			objs = append(objs, obj{"Secret", &s.rec.ObjectMeta, s.doc})
		}
	}
	for _, w := range e.ess {
		if e.doc("ExternalSecret", w.rec.Namespace, w.rec.Name) == w.doc { // of two definitions, the later one
			objs = append(objs, obj{"ExternalSecret", &w.rec.ObjectMeta, w.doc})
		}
	}
	e.store.Read(func(v model.View) {
		for _, o := range objs {
			reason := flux.SkipReason(o.meta.Labels, o.meta.Annotations, true)
			if reason == "" {
				continue
			}
			if v.Ignores(o.meta.Namespace, o.meta, r.Detector()) {
				e.report.Silenced++
				continue
			}
			key := flux.AnnotationSSA
			if reason == flux.SkipReconcileDisabled {
				key = flux.AnnotationReconcile
			}
			field, as, val := "annotations", "an annotation", o.meta.Annotations[key]
			if !strings.EqualFold(val, skipValue[reason]) {
				field, as, val = "labels", "a label", o.meta.Labels[key]
			}
			what := "keys added to it"
			if o.kind == "ExternalSecret" {
				what = "entries added to its spec.data (and any other change to it)"
			}
			labels := map[string]string{"namespace": o.meta.Namespace, "kind": o.kind, "name": o.meta.Name, "reason": reason}
			effect := fam.ValueText(labels) + ", so " + what + " in Git later never ship" // the reason's text
			if reason != flux.SkipSSAIfNotPresent {
				effect = fam.ValueText(labels) + ": nothing Git holds for it ships, and " + what + " in Git later never ship either"
			}
			e.add(Finding{Finding: finding.New(fam, r.Detector(), labels, 1), Rule: r.ID,
				Message: fmt.Sprintf("%s %s/%s carries %s: %s (%s): %s, while the Kustomization applying it reports the revision applied",
					o.kind, o.meta.Namespace, o.meta.Name, key, val, as, effect),
				Locations: []Location{e.loc(o.doc, o.doc.lineOf("metadata", field, key), key)}})
		}
	})
}

var skipValue = map[string]string{flux.SkipSSAIfNotPresent: flux.SSAIfNotPresent, flux.SkipSSAIgnore: flux.SSAIgnore,
	flux.SkipReconcileDisabled: flux.ReconcileDisabled}

func (e *evaluation) sort() {
	first := func(ls []Location) Location {
		if len(ls) == 0 {
			return Location{}
		}
		return ls[0]
	}
	less := func(a, b Location) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	}
	sort.SliceStable(e.report.Findings, func(i, j int) bool {
		a, b := e.report.Findings[i], e.report.Findings[j]
		if c := less(first(a.Locations), first(b.Locations)); c != 0 {
			return c < 0
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
	sort.SliceStable(e.report.Assumptions, func(i, j int) bool {
		a, b := e.report.Assumptions[i], e.report.Assumptions[j]
		if c := less(first(a.Locations), first(b.Locations)); c != 0 {
			return c < 0
		}
		return a.Message < b.Message
	})
	sort.SliceStable(e.report.Problems, func(i, j int) bool {
		a, b := e.report.Problems[i], e.report.Problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}
