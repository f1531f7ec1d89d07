package lint

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	yaml "go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/flux/build"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

// Options tune an evaluation.
type Options struct {
	// Namespace is the namespace of namespaced objects that name none (as
	// kubectl apply -n would place them). Default "default".
	Namespace string
	// Strict reports what the rendering does not show (a Secret made elsewhere,
	// keys an open key set may hold) as findings instead of assumptions.
	Strict bool
	// FluxSource is the checkout a rendering's Flux Kustomizations apply
	// from (--flux-source): each is built from it with Flux's own build, as
	// the agent builds the artifact (nil: not built; judged from the
	// Kustomization alone).
	FluxSource build.FS

	// beforeDetector is collectors.Config.BeforeDetector (tests inject a
	// failing detector with it).
	beforeDetector func(string)
}

// Location is a place in the input.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Item is the index of the object in a List (absent when not in one).
	Item *int `json:"item,omitempty"`
	// What names what is at the line ("key \"password\"", "spec.target").
	What string `json:"what,omitempty"`
}

// Finding is one finding about the input: the finding the exporter's
// detector emitted (finding.Finding: its family, class, severity, object,
// labels and value-free evidence; lint's own rules make one the same way,
// finding.New), the lint rule it falls under, lint's message and where it is
// in the input. Its JSON is the --output json finding (docs/lint.md): rule,
// family (the metric), class, severity, message, object, labels, evidence and
// locations; the detector's value and the Secret's readers are not part of it.
type Finding struct {
	finding.Finding
	Rule    string
	Message string
	// Locations: the first is where the finding is reported; the others are
	// related places (the Secret a workload reads, the duplicate).
	Locations []Location
}

// findingJSON is the JSON form of a Finding (schema version 1).
type findingJSON struct {
	Rule     string         `json:"rule"`
	Family   string         `json:"family,omitempty"`
	Class    string         `json:"class"`
	Severity Severity       `json:"severity"`
	Message  string         `json:"message"`
	Object   finding.Object `json:"object"`
	// Labels are the finding series' labels, as the exporter would emit them.
	Labels map[string]string `json:"labels,omitempty"`
	// Evidence is the detector's own sentence on what it saw (value-free),
	// as agent check and the exporter's findings page show it.
	Evidence  string     `json:"evidence,omitempty"`
	Locations []Location `json:"locations"`
}

// MarshalJSON writes the --output json form of the finding.
func (f Finding) MarshalJSON() ([]byte, error) {
	return json.Marshal(findingJSON{Rule: f.Rule, Family: f.Metric, Class: f.Class, Severity: f.Severity, Message: f.Message,
		Object: f.Object, Labels: f.Labels, Evidence: f.Evidence, Locations: f.Locations})
}

// UnmarshalJSON reads the --output json form of a finding back (its family
// from the catalog, when the metric names one).
func (f *Finding) UnmarshalJSON(b []byte) error {
	var j findingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Finding{Finding: finding.Finding{Class: j.Class, Severity: j.Severity, Metric: j.Family, Object: j.Object, Labels: j.Labels,
		Evidence: j.Evidence}, Rule: j.Rule, Message: j.Message, Locations: j.Locations}
	if fam, ok := finding.LookupAny(j.Family); ok {
		f.Family, f.Detector = fam, fam.Detector
	}
	return nil
}

// Assumption is what lint took for granted because the rendering does not show
// it; --strict reports it as a finding of Rule.
type Assumption struct {
	Rule      string     `json:"rule"`
	Message   string     `json:"message"`
	Locations []Location `json:"locations"`
}

// Report is the result of a run.
type Report struct {
	Findings    []Finding    `json:"findings"`
	Assumptions []Assumption `json:"assumptions"`
	Problems    []Problem    `json:"problems"`
	// Files and Documents read; Checked counts the documents per kind that a
	// rule reads (the others are not about secret delivery).
	Files     int            `json:"files"`
	Documents int            `json:"documents"`
	Checked   map[string]int `json:"checked"`
	// Silenced counts the findings a driftwatch.io/ignore annotation kept out.
	Silenced int `json:"silenced"`
}

// Unreadable reports whether some input could not be checked (exit status 2):
// a file that could not be read, or a document that does not parse or decode.
func (r *Report) Unreadable() bool {
	for _, p := range r.Problems {
		if !p.Note {
			return true
		}
	}
	return false
}

type objKey struct{ kind, ns, name string }

type podRec struct {
	rec *model.Pod
	doc *Doc
}

type esRec struct {
	rec  *model.ExternalSecret
	doc  *Doc
	open string // why the key set it writes is open ("" when closed)
}

type secretRec struct {
	rec  *model.Secret
	doc  *Doc
	open string
	// dataKeys/stringDataKeys as written in the manifest (for data_in_manifest).
	dataKeys, stringDataKeys []string
}

type evaluation struct {
	opts    Options
	t       *transform.Transformer
	store   *model.Store
	report  *Report
	docs    map[objKey][]*Doc
	pods    []podRec
	ess     []esRec
	secrets map[model.Ref]*secretRec
	sas     map[model.Ref]*Doc
	stores  map[model.StoreKey]*Doc
	apps    map[model.Ref]*Doc
	nsDocs  map[string]*Doc
	// written: Secrets the ExternalSecrets of the rendering write.
	written map[model.Ref][]esRec
	// open: Secrets whose key set the rendering does not fix, and why.
	open map[model.Ref]string
	// merged: Secret manifests modelled together with the ExternalSecrets
	// writing them.
	merged map[model.Ref]bool
}

// Evaluate checks the documents of in.
func Evaluate(in *Input, opts Options) *Report {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	e := &evaluation{
		opts:    opts,
		t:       &transform.Transformer{FP: model.NewFingerprinter()},
		store:   model.NewStore(nil),
		report:  &Report{Files: in.Files, Documents: len(in.Docs), Checked: map[string]int{}, Problems: slices.Clone(in.Problems)},
		docs:    map[objKey][]*Doc{},
		secrets: map[model.Ref]*secretRec{},
		sas:     map[model.Ref]*Doc{},
		stores:  map[model.StoreKey]*Doc{},
		apps:    map[model.Ref]*Doc{},
		nsDocs:  map[string]*Doc{},
		written: map[model.Ref][]esRec{},
		open:    map[model.Ref]string{},
		merged:  map[model.Ref]bool{},
	}
	for _, d := range in.Docs {
		e.load(d)
	}
	e.promises()
	e.judge()
	e.sort()
	return e.report
}

func (e *evaluation) problem(d *Doc, format string, args ...any) {
	e.report.Problems = append(e.report.Problems, Problem{File: d.File, Line: d.Line, Message: fmt.Sprintf(format, args...)})
}

// namespaced kinds lint reads; cluster-scoped ones: Namespace, ClusterSecretStore.
func (e *evaluation) namespaceOf(d *Doc) string {
	switch d.Kind {
	case "Namespace", "ClusterSecretStore":
		return ""
	}
	if d.Namespace != "" {
		return d.Namespace
	}
	return e.opts.Namespace
}

// setNamespace writes the effective namespace into the object (the
// unstructured transforms read it from there).
func (e *evaluation) setNamespace(d *Doc, ns string) {
	md, ok := d.Obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		d.Obj["metadata"] = md
	}
	if ns != "" {
		md["namespace"] = ns
	}
}

func (e *evaluation) load(d *Doc) {
	g := d.Group()
	if d.Name == "" {
		return // nothing names it; generateName objects are not referenced by name
	}
	ns := e.namespaceOf(d)
	k := objKey{d.Kind, ns, d.Name}
	if prev := e.docs[k]; len(prev) > 0 && g == prev[0].Group() {
		e.report.Problems = append(e.report.Problems, Problem{File: d.File, Line: d.Line, Note: true,
			Message: fmt.Sprintf("%s is also defined at %s:%d: the later one is checked", finding.Object{Kind: d.Kind, Namespace: ns, Name: d.Name}.Qualified(), prev[0].File, prev[0].Line)})
	}
	switch {
	case d.Kind == "Secret" && d.APIVersion == "v1":
		e.secret(d, ns)
	case workloadKind(g, d.Kind):
		e.workload(d, ns)
	case g == "external-secrets.io" && d.Kind == "ExternalSecret":
		e.externalSecret(d, ns)
	case g == "external-secrets.io" && (d.Kind == "SecretStore" || d.Kind == "ClusterSecretStore"):
		e.secretStore(d, ns)
	case g == "argoproj.io" && d.Kind == "Application":
		e.application(d, ns)
	case g == flux.Group && d.Kind == "Kustomization":
		e.kustomization(d, ns)
	case d.APIVersion == "v1" && d.Kind == "ServiceAccount":
		e.serviceAccount(d, ns)
	case d.APIVersion == "v1" && d.Kind == "Namespace":
		e.namespace(d)
	default:
		return
	}
	e.docs[k] = append([]*Doc{d}, e.docs[k]...)
	e.report.Checked[d.Kind]++
}

func workloadKind(group, kind string) bool {
	switch group {
	case "":
		return kind == "Pod" || kind == "ReplicationController"
	case "apps", "extensions":
		return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "ReplicaSet"
	case "batch":
		return kind == "Job" || kind == "CronJob"
	case "argoproj.io":
		return kind == "Rollout"
	}
	return false
}

// metaOf decodes metadata. Its error is our own text: metadata of a Secret may
// carry a last-applied annotation holding values.
func metaOf(d *Doc) (metav1.ObjectMeta, bool) {
	var m metav1.ObjectMeta
	raw, ok := d.Obj["metadata"]
	if !ok || raw == nil {
		return m, true
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return m, false
	}
	if json.Unmarshal(b, &m) != nil {
		return m, false
	}
	return m, true
}

func (e *evaluation) secret(d *Doc, ns string) {
	meta, ok := metaOf(d)
	if !ok {
		e.problem(d, "malformed document: Secret %s: metadata does not decode (wrong types)", d.Name)
		scrubSecret(d)
		return
	}
	meta.Namespace = ns
	s := &corev1.Secret{ObjectMeta: meta}
	if t, ok := d.Obj["type"].(string); ok {
		s.Type = corev1.SecretType(t)
	}
	sr := &secretRec{doc: d}
	if data, ok := d.Obj["data"].(map[string]any); ok {
		s.Data = make(map[string][]byte, len(data))
		for k, v := range data {
			sr.dataKeys = append(sr.dataKeys, k)
			str, isStr := v.(string)
			if !isStr && v != nil {
				e.problem(d, "malformed document: Secret %s: data key %q is not a string", d.Name, k)
				continue
			}
			b, err := base64.StdEncoding.DecodeString(str)
			if err != nil {
				e.problem(d, "malformed document: Secret %s: data key %q is not valid base64", d.Name, k)
				continue
			}
			s.Data[k] = b
		}
	} else if v, has := d.Obj["data"]; has && v != nil {
		e.problem(d, "malformed document: Secret %s: data is not a mapping", d.Name)
	}
	if sd, ok := d.Obj["stringData"].(map[string]any); ok {
		s.StringData = make(map[string]string, len(sd))
		for k, v := range sd {
			sr.stringDataKeys = append(sr.stringDataKeys, k)
			switch x := v.(type) {
			case string:
				s.StringData[k] = x
			case nil:
				s.StringData[k] = ""
			default:
				// The apiserver rejects it; the key is still modelled so that
				// its readers are not reported too.
				e.problem(d, "malformed document: Secret %s: stringData key %q is not a string", d.Name, k)
				s.StringData[k] = fmt.Sprint(x)
			}
		}
	} else if v, has := d.Obj["stringData"]; has && v != nil {
		e.problem(d, "malformed document: Secret %s: stringData is not a mapping", d.Name)
	}
	slices.Sort(sr.dataKeys)
	slices.Sort(sr.stringDataKeys)
	rec, _ := e.t.Secret(s) // fingerprints every value and wipes data
	s.StringData = nil
	scrubSecret(d)
	sr.rec = rec.(*model.Secret)
	switch {
	case s.Type == corev1.SecretTypeServiceAccountToken:
		sr.open = "a service-account-token Secret: the token controller writes its keys"
	case len(sr.dataKeys)+len(sr.stringDataKeys) == 0:
		sr.open = "the manifest has no data: a placeholder whose keys are written in the cluster"
	}
	e.secrets[model.Ref{Namespace: ns, Name: d.Name}] = sr
}

// scrubSecret drops a Secret document's values (data, stringData, the
// last-applied annotation) from the decoded object and the node tree, once the
// transform has fingerprinted them.
func scrubSecret(d *Doc) {
	delete(d.Obj, "data")
	delete(d.Obj, "stringData")
	if md, ok := d.Obj["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, has := ann[model.AnnLastApplied]; has {
				ann[model.AnnLastApplied] = ""
			}
		}
	}
	for _, f := range []string{"data", "stringData"} {
		if _, v := nodeAt(d.node, f); v != nil {
			blank(v)
		}
	}
	if _, v := nodeAt(d.node, "metadata", "annotations", model.AnnLastApplied); v != nil {
		blank(v)
	}
}

// blank empties every scalar value under n (mapping keys, which are key names,
// stay).
func blank(n *yaml.Node) {
	if n == nil || n.Kind == yaml.AliasNode {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		n.Value = ""
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			blank(n.Content[i])
		}
	default:
		for _, c := range n.Content {
			blank(c)
		}
	}
}

// podTemplateOf returns the pod template of a workload document (the object
// itself for a Pod), and its path for messages.
func podTemplateOf(d *Doc) (map[string]any, []string) {
	get := func(m map[string]any, segs ...string) map[string]any {
		for _, s := range segs {
			next, ok := m[s].(map[string]any)
			if !ok {
				return nil
			}
			m = next
		}
		return m
	}
	switch d.Kind {
	case "Pod":
		return d.Obj, nil
	case "CronJob":
		return get(d.Obj, "spec", "jobTemplate", "spec", "template"), []string{"spec", "jobTemplate", "spec", "template"}
	}
	return get(d.Obj, "spec", "template"), []string{"spec", "template"}
}

// workload turns a workload's pod template into the pod it would run (Running,
// controlled by the workload) and that pod through the Pod transform.
func (e *evaluation) workload(d *Doc, ns string) {
	tmpl, at := podTemplateOf(d)
	if tmpl == nil {
		if d.Kind == "Rollout" {
			return // spec.workloadRef: the pods come from another workload
		}
		e.problem(d, "malformed document: %s %s has no %s", d.Kind, d.Name, strings.Join(append(at, "spec"), "."))
		return
	}
	b, err := json.Marshal(tmpl)
	var pt corev1.PodTemplateSpec
	if err == nil {
		err = json.Unmarshal(b, &pt)
	}
	if err != nil {
		e.problem(d, "malformed document: %s %s: the pod template does not decode: %s", d.Kind, d.Name, jsonErrText(err))
		return
	}
	wm, _ := metaOf(d)
	p := &corev1.Pod{ObjectMeta: pt.ObjectMeta, Spec: pt.Spec, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	p.Namespace = ns
	p.Name = d.Name
	if d.Kind != "Pod" {
		p.Name = d.Name + "~" + strings.ToLower(d.Kind) // a name of its own per workload
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Controller: &yes}}
		// The workload's driftwatch.io/ignore silences its pods' expectations.
		if v, ok := wm.Annotations[model.AnnIgnore]; ok {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			if old := p.Annotations[model.AnnIgnore]; old != "" {
				v = old + "," + v
			}
			p.Annotations[model.AnnIgnore] = v
		}
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	rec, _ := e.t.Pod(p)
	e.pods = append(e.pods, podRec{rec: rec.(*model.Pod), doc: d})
}

// jsonErrText names the field and types of a JSON decode error; other errors
// (a custom decoder's, whose text could quote input) become a fixed text.
func jsonErrText(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("%s: want %s, got %s", te.Field, te.Type, te.Value)
	}
	return "wrong types or values"
}

func (e *evaluation) unstructured(d *Doc, ns string) *unstructured.Unstructured {
	e.setNamespace(d, ns)
	return &unstructured.Unstructured{Object: d.Obj}
}

func (e *evaluation) externalSecret(d *Doc, ns string) {
	rec0, _ := e.t.ExternalSecret(e.unstructured(d, ns))
	rec := rec0.(*model.ExternalSecret)
	if rec.DecodeErr != "" {
		e.problem(d, "malformed document: ExternalSecret %s: spec does not decode", d.Name)
		return
	}
	// Offline semantics: the rendering has no status and no managedFields. The
	// ExternalSecret is taken as reconciled-to-be (its target will hold what it
	// writes), and what the user set is what the manifest says.
	rec.Ready = model.Condition{Status: "True", Reason: "SecretSynced"}
	rec.RefreshTime = time.Time{}
	rec.Managers = nil
	rec.CreationPolicyApplied = "unset"
	if _, set, _ := unstructured.NestedFieldNoCopy(d.Obj, "spec", "target", "creationPolicy"); set {
		rec.CreationPolicyApplied = "set"
	}
	e.ess = append(e.ess, esRec{rec: rec, doc: d, open: esOpen(rec)})
}

// esOpen says why the keys an ExternalSecret writes are not known from its
// manifest ("" when they are): a templateFrom literal or KeysAndValues item
// renders keys from content (model.ESWrites.TemplateOpen, read by the decoder
// of live ExternalSecrets), dataFrom brings whatever the store holds.
func esOpen(rec *model.ExternalSecret) string {
	switch rec.TemplateOpen {
	case model.TemplateOpenLiteral:
		return "its templateFrom renders keys from a literal template"
	case model.TemplateOpenKeysAndValues:
		return "its templateFrom renders keys from the content of a configMap or secret"
	}
	if rec.DataFrom > 0 && !rec.RendersOnly() {
		return "its dataFrom brings whatever keys the store holds"
	}
	return ""
}

func (e *evaluation) secretStore(d *Doc, ns string) {
	rec0, _ := e.t.SecretStore(d.Kind)(e.unstructured(d, ns))
	rec := rec0.(*model.SecretStore)
	if rec.DecodeErr != "" {
		e.problem(d, "malformed document: %s %s: spec does not decode", d.Kind, d.Name)
		return
	}
	rec.Ready = model.Condition{Status: "True", Reason: "Valid"}
	e.store.UpsertStore(rec)
	e.stores[model.StoreKey{Kind: d.Kind, Namespace: ns, Name: d.Name}] = d
}

func (e *evaluation) application(d *Doc, ns string) {
	rec0, _ := e.t.Application(e.unstructured(d, ns))
	rec := rec0.(*model.ArgoApp)
	if rec.DecodeErr != "" {
		e.problem(d, "malformed document: Application %s: spec does not decode", d.Name)
		return
	}
	// No status offline. An ignoreDifferences entry is judged against the kind it
	// names: an entry naming one group and kind (no glob) was written for a kind
	// the Application manages. An entry with a glob is not judged (what it
	// matches is known only from a live Application's status.resources).
	rec.SyncStatus, rec.SyncRevision, rec.SyncRevisions = "", "", nil
	rec.OperationPhase, rec.OperationRevision, rec.OperationRevisions = "", "", nil
	rec.OperationFinishedAt = time.Time{}
	rec.Resources = nil
	for i, id := range rec.IgnoreDifferences {
		if strings.ContainsAny(id.Group+id.Kind, "*?[") || id.Kind == "" {
			e.report.Assumptions = append(e.report.Assumptions, Assumption{Rule: "argocd_ignore_list_trap",
				Message: fmt.Sprintf("Application %s/%s: ignoreDifferences[%d] (group %q, kind %q) is not judged offline: the kinds a glob matches are known only from a live Application's status.resources",
					ns, d.Name, i, id.Group, id.Kind),
				Locations: []Location{e.loc(d, d.lineOf("spec", "ignoreDifferences", strconv.Itoa(i)), "")}})
			continue
		}
		rec.Resources = append(rec.Resources, model.ArgoResource{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name})
	}
	e.store.UpsertApp(rec)
	e.apps[model.Ref{Namespace: ns, Name: d.Name}] = d
}

// kustomization loads a Flux Kustomization. What it applies lives in its
// source, not in the rendering: a spec.ignore rule is judged against the kind
// its target names (a literal kind, no regular expression), as if the
// Kustomization applied an object of that kind (and name, when literal). A
// rule without a target, or with a pattern for a kind, is not judged offline.
func (e *evaluation) kustomization(d *Doc, ns string) {
	u := e.unstructured(d, ns)
	rec0, _ := e.t.Kustomization(u)
	rec := rec0.(*model.FluxKustomization)
	if rec.DecodeErr != "" {
		e.problem(d, "malformed document: Kustomization %s: spec does not decode", d.Name)
		return
	}
	if e.opts.FluxSource != nil && e.builtKustomization(d, ns, rec, u.Object) {
		return
	}
	literal := func(s string) bool { return !strings.ContainsAny(s, `*?[]()|+.^$\{}`) }
	rec.Ready, rec.LastAppliedRevision, rec.LastAttemptedRevision, rec.Inventory = model.Condition{}, "", "", nil
	var objs []model.Declared
	for i, r := range rec.Ignore {
		if !r.HasTarget || r.Kind == "" || !literal(r.Kind) {
			e.report.Assumptions = append(e.report.Assumptions, Assumption{Rule: "flux_ignore_trap",
				Message: fmt.Sprintf("Kustomization %s/%s: spec.ignore[%d] is not judged offline: the kinds it selects are known only from what the Kustomization applies",
					ns, d.Name, i),
				Locations: []Location{e.loc(d, d.lineOf("spec", "ignore", strconv.Itoa(i)), "")}})
			continue
		}
		name := r.Name
		if name == "" || !literal(name) {
			name = "*"
		}
		onNS := r.Namespace
		if onNS == "" || !literal(onNS) {
			onNS = ns
		}
		group := r.Group
		if group == "" && r.Kind == "ExternalSecret" {
			group = "external-secrets.io"
		}
		o := model.Declared{Group: group, Kind: r.Kind, Namespace: onNS, Name: name}
		objs = append(objs, o)
		rec.Inventory = append(rec.Inventory, model.FluxObjRef{Group: group, Kind: r.Kind, Namespace: onNS, Name: name})
	}
	e.store.UpsertKustomization(rec)
	e.store.SetFluxDesired(model.Ref{Namespace: ns, Name: d.Name}, &model.FluxDesired{Objects: objs})
}

// builtKustomization builds a Kustomization from --flux-source with the
// agent's build (Flux's own): its Secrets and ExternalSecrets are what it
// applies, as if kustomize-controller had applied them all (the inventory),
// and the detectors that read a build (the ignore trap) judge them. It
// reports false, with an assumption, when the build fails: the Kustomization
// is then judged from its spec alone.
func (e *evaluation) builtKustomization(d *Doc, ns string, rec *model.FluxKustomization, obj map[string]any) bool {
	res, err := build.Build(obj, e.opts.FluxSource)
	if err != nil {
		e.report.Assumptions = append(e.report.Assumptions, Assumption{Rule: "flux_ignore_trap",
			Message:   fmt.Sprintf("Kustomization %s/%s is not built from --flux-source (%v): judged from its spec alone", ns, d.Name, err),
			Locations: []Location{e.loc(d, d.lineOf("spec", "path"), "")}})
		return false
	}
	rec.Ready, rec.LastAppliedRevision, rec.LastAttemptedRevision, rec.Inventory = model.Condition{}, "", "", nil
	var objs []model.Declared
	for _, o := range res.Objects {
		if o.Undetermined != "" {
			e.report.Assumptions = append(e.report.Assumptions, Assumption{Rule: "flux_ignore_trap",
				Message:   fmt.Sprintf("Kustomization %s/%s: %s %s/%s is not judged: %s", ns, d.Name, o.Kind, o.Namespace, o.Name, o.Undetermined),
				Locations: []Location{e.loc(d, d.Line, "")}})
			continue
		}
		objs = append(objs, o)
		rec.Inventory = append(rec.Inventory, model.FluxObjRef{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
	}
	e.store.UpsertKustomization(rec)
	e.store.SetFluxDesired(model.Ref{Namespace: ns, Name: d.Name}, &model.FluxDesired{Objects: objs, BuildKey: rec.BuildKey})
	return true
}

func (e *evaluation) serviceAccount(d *Doc, ns string) {
	meta, ok := metaOf(d)
	if !ok {
		e.problem(d, "malformed document: ServiceAccount %s: metadata does not decode", d.Name)
		return
	}
	meta.Namespace = ns
	rec, _ := e.t.ServiceAccount(&corev1.ServiceAccount{ObjectMeta: meta})
	e.store.UpsertServiceAccount(rec.(*model.ServiceAccount))
	e.sas[model.Ref{Namespace: ns, Name: d.Name}] = d
}

func (e *evaluation) namespace(d *Doc) {
	meta, ok := metaOf(d)
	if !ok {
		e.problem(d, "malformed document: Namespace %s: metadata does not decode", d.Name)
		return
	}
	rec, _ := e.t.Namespace(&corev1.Namespace{ObjectMeta: meta})
	e.store.UpsertNamespace(rec.(*model.Namespace))
	e.nsDocs[d.Name] = d
}

// promises models what the ExternalSecrets of the rendering will write: each
// target as present with the keys ESO writes (creationPolicy None writes
// nothing; Merge writes into a Secret that must come from elsewhere), then puts
// the Secrets, pods and ExternalSecrets into the model.
func (e *evaluation) promises() {
	for _, x := range e.ess {
		if !x.rec.WritesTarget() {
			continue
		}
		r := model.Ref{Namespace: x.rec.Namespace, Name: x.rec.Target}
		e.written[r] = append(e.written[r], x)
	}
	refs := make([]model.Ref, 0, len(e.written))
	for r := range e.written {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	for _, r := range refs {
		writers := e.written[r]
		doc := e.secrets[r]
		var keys []model.KeyEntry
		var ignore []string
		merge := true
		for _, w := range writers {
			for _, k := range w.rec.WrittenKeys() {
				keys = append(keys, model.KeyEntry{Name: k})
			}
			if w.open != "" && e.open[r] == "" {
				e.open[r] = fmt.Sprintf("ExternalSecret %s/%s writes it and %s", r.Namespace, w.rec.Name, w.open)
			}
			if w.rec.CreationPolicy != "Merge" {
				merge = false
			}
			if v, ok, _ := unstructured.NestedString(w.doc.Obj, "spec", "target", "template", "metadata", "annotations", model.AnnIgnore); ok {
				ignore = append(ignore, v) // ESO writes the template's annotations onto the Secret
			}
		}
		if doc == nil && merge {
			continue // Merge never creates the Secret: it has to come from elsewhere
		}
		rec := &model.Secret{ObjectMeta: model.ObjectMeta{Name: r.Name, Namespace: r.Namespace}}
		if doc != nil {
			cp := *doc.rec
			rec = &cp
			if len(doc.dataKeys)+len(doc.stringDataKeys) > 0 {
				// Whatever applies the rendering (kubectl, Helm, Argo CD) writes
				// the manifest's data: a manager other than ESO owns it, which is
				// what the adoption detector's owner_over_existing reads.
				rec.Managers = []model.ManagedField{{Manager: "manifest", Operation: "Apply", OwnsData: true}}
			}
			for k, ki := range doc.rec.Keys.All() {
				keys = append([]model.KeyEntry{{Name: k, KeyInfo: ki}}, keys...)
			}
			if doc.open != "" && e.open[r] == "" && len(keys) == doc.rec.Keys.Len() {
				e.open[r] = doc.open
			}
		} else if len(ignore) > 0 {
			rec.Annotations = map[string]string{model.AnnIgnore: strings.Join(ignore, ",")}
		}
		// Of equal names the later wins: the manifest's own entries (with their
		// fingerprints) are put first, so an ExternalSecret's key (unknown value)
		// replaces them: ESO overwrites what it writes.
		rec.Keys = model.NewKeySetOf(keys)
		e.store.UpsertSecret(rec, time.Time{})
		e.merged[r] = true
	}
	for r, s := range e.secrets {
		if e.merged[r] {
			continue
		}
		if s.open != "" {
			e.open[r] = s.open
		}
		e.store.UpsertSecret(s.rec, time.Time{})
	}
	for _, x := range e.ess {
		e.store.UpsertExternalSecret(x.rec, time.Time{})
	}
	for _, p := range e.pods {
		e.store.UpsertPod(p.rec)
	}
}

func (e *evaluation) loc(d *Doc, line int, what string) Location {
	if line <= 0 {
		line = d.Line
	}
	l := Location{File: d.File, Line: line, What: what}
	if d.Item >= 0 {
		i := d.Item
		l.Item = &i
	}
	return l
}
