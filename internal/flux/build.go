package flux

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// FS holds the files of an artifact that a build may read: cleaned
// slash-separated paths relative to the artifact's root, without a leading
// "./" or "/", to their contents.
type FS map[string][]byte

// BuildSpec is what a Kustomization adds to the build of its path
// (fluxcd/pkg/kustomize's generator writes these into the top kustomization).
type BuildSpec struct {
	Path            string
	TargetNamespace string
	NamePrefix      string
	NameSuffix      string
	// Patches: kind and name pattern of each spec.patches entry (the target,
	// else the patch's own kind and name; "" = any).
	Patches           []PatchTarget
	Components        []string
	CommonAnnotations map[string]string
	CommonLabels      map[string]string
}

// PatchTarget is what a patch may touch.
type PatchTarget struct {
	Kind, Name  string
	HasSelector bool
}

// Object is a Secret or an ExternalSecret the build produces, value-free.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	Labels, Annotations               map[string]string
	// DataKeys: a Secret's data and stringData key names. ES: what an
	// ExternalSecret writes (its target, spec.data, template).
	DataKeys []string
	ES       *model.ESWrites
	SOPS     bool
	// Undetermined says why driftwatch cannot tell this object's keys (a
	// patch or a generator it does not reproduce may change them): its keys
	// are no expectation.
	Undetermined string
}

// Group is the object's API group ("" for Secrets).
func (o *Object) Group() string {
	if i := strings.IndexByte(o.APIVersion, '/'); i > 0 {
		return o.APIVersion[:i]
	}
	return ""
}

// VarUse is a postBuild variable an object uses without a default.
type VarUse struct {
	Var                   string
	Kind, Namespace, Name string
}

// Result is a build's value-free outcome.
type Result struct {
	Objects []Object
	// Vars: for each variable used without a default, the first object (by
	// kind, namespace, name) using it; objects with substitution disabled are
	// left out.
	Vars []VarUse
	// Unsupported, when set, names what the build uses that driftwatch does
	// not reproduce (components, generators, remote resources...): nothing is
	// expected from it.
	Unsupported string
}

// Limits of a build.
const (
	maxBuildDepth   = 32
	maxBuildObjects = 20000
)

var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomization fields whose effect driftwatch does not reproduce: a build
// using them is Unsupported.
var unsupportedFields = map[string]bool{
	"generators": true, "transformers": true, "validators": true, "replacements": true,
	"vars": true, "helmCharts": true, "helmGlobals": true, "helmChartInflationGenerator": true,
}

// Build reads the Secrets and ExternalSecrets kustomize-controller would apply
// for spec from the artifact's files, the way kustomize-controller builds them
// (fluxcd/pkg/kustomize: a kustomization.yaml at spec.path, else one generated
// from every YAML file under it, sub-folders with their own kustomization
// taken whole; the Kustomization's targetNamespace, namePrefix/nameSuffix,
// patches and commonMetadata on top). It follows resources, namespace,
// namePrefix/nameSuffix, commonAnnotations, commonLabels and labels; an object
// a patch or a secretGenerator may change is Undetermined; components,
// generators, transformers, replacements, helmCharts and remote resources make
// the whole build Unsupported. An error means kustomize itself would fail.
func Build(fs FS, spec BuildSpec) (Result, error) {
	b := &builder{fs: fs, visiting: map[string]bool{}}
	root := cleanRel(spec.Path)
	if root == ".." || strings.HasPrefix(root, "../") {
		return Result{}, fmt.Errorf("path %q is outside the source", spec.Path)
	}
	objs, err := b.dir(root, true, 0)
	if err != nil {
		var u unsupported
		if errors.As(err, &u) {
			return Result{Unsupported: string(u)}, nil
		}
		return Result{}, err
	}
	if len(spec.Components) > 0 {
		return Result{Unsupported: "spec.components"}, nil
	}
	level := parse.KustomizationFile{Namespace: spec.TargetNamespace, NamePrefix: spec.NamePrefix,
		NameSuffix: spec.NameSuffix, CommonAnnotations: spec.CommonAnnotations, CommonLabels: spec.CommonLabels}
	for _, p := range spec.Patches {
		level.Patches = append(level.Patches, parse.KustomizePatch{Kind: p.Kind, Name: p.Name, HasSelector: p.HasSelector})
	}
	b.transform(objs, level, "", "spec.patches")
	res := Result{}
	seen := map[VarUse]bool{}
	for _, o := range objs {
		if o.Secret || o.ExternalSecret {
			res.Objects = append(res.Objects, o.Object)
		}
		if o.substDisabled {
			continue
		}
		for _, v := range o.vars {
			k := VarUse{Var: v}
			if !seen[k] {
				seen[k] = true
				res.Vars = append(res.Vars, VarUse{Var: v, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
			}
		}
	}
	sort.Slice(res.Objects, func(i, j int) bool {
		a, c := res.Objects[i], res.Objects[j]
		if a.Namespace != c.Namespace {
			return a.Namespace < c.Namespace
		}
		if a.Kind != c.Kind {
			return a.Kind < c.Kind
		}
		return a.Name < c.Name
	})
	sort.Slice(res.Vars, func(i, j int) bool { return res.Vars[i].Var < res.Vars[j].Var })
	return res, nil
}

type unsupported string

func (u unsupported) Error() string { return "unsupported: " + string(u) }

type builder struct {
	fs       FS
	visiting map[string]bool
	count    int
}

// bobj is an object being built.
type bobj struct {
	Object
	Secret, ExternalSecret bool
	vars                   []string
	substDisabled          bool
}

func (b *builder) kfile(dir string) string {
	for _, n := range kustomizationFiles {
		p := join(dir, n)
		if _, ok := b.fs[p]; ok {
			return p
		}
	}
	return ""
}

func (b *builder) isDir(p string) bool {
	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	for k := range b.fs {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// dir builds a kustomization folder (top: the Kustomization's path, where
// kustomize-controller generates a kustomization when there is none).
func (b *builder) dir(dir string, top bool, depth int) ([]*bobj, error) {
	if depth > maxBuildDepth {
		return nil, fmt.Errorf("resources nested deeper than %d", maxBuildDepth)
	}
	if b.visiting[dir] {
		return nil, fmt.Errorf("cycle through %q", dir)
	}
	b.visiting[dir] = true
	defer delete(b.visiting, dir)

	kf := b.kfile(dir)
	if kf == "" {
		if !top {
			return nil, fmt.Errorf("no kustomization in %q", dir)
		}
		if !b.isDir(dir) {
			return nil, fmt.Errorf("path %q not found in the source", dir)
		}
		var out []*bobj
		for _, r := range b.generated(dir) {
			objs, err := b.resource(dir, r, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	k, err := parse.ParseKustomizationFile(b.fs[kf])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kf, err)
	}
	for _, f := range k.Other {
		if unsupportedFields[f] {
			return nil, unsupported(kf + ": " + f)
		}
	}
	if len(k.Components) > 0 {
		return nil, unsupported(kf + ": components")
	}
	var out []*bobj
	for _, r := range k.Resources {
		objs, err := b.resource(dir, r, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	gen := ""
	for _, f := range k.Other {
		if f == "secretGenerator" {
			gen = kf + ": secretGenerator"
		}
	}
	b.transform(out, k, dir, kf)
	if gen != "" {
		// A generated Secret may merge into (or replace) one of these.
		for _, o := range out {
			if o.Secret && o.Undetermined == "" {
				o.Undetermined = gen
			}
		}
	}
	return out, nil
}

// generated lists what kustomize-controller's generated kustomization holds:
// every .yaml/.yml file under dir that parses as Kubernetes objects, and every
// sub-folder with its own kustomization (not descended into).
func (b *builder) generated(dir string) []string {
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	kdirs := map[string]bool{}
	for p := range b.fs {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		base := path.Base(p)
		for _, n := range kustomizationFiles {
			if base == n { // dir itself has none: this is a sub-folder's
				kdirs[path.Dir(p)] = true
			}
		}
	}
	var out []string
	for d := range kdirs {
		// Only the outermost kustomization folders count.
		inner := false
		for e := range kdirs {
			if e != d && strings.HasPrefix(d, e+"/") {
				inner = true
			}
		}
		if !inner {
			out = append(out, strings.TrimPrefix(d, prefix))
		}
	}
	for p := range b.fs {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		ext := path.Ext(p)
		if ext != ".yaml" && ext != ".yml" {
			continue
		}
		under := false
		for d := range kdirs {
			if strings.HasPrefix(p, d+"/") {
				under = true
			}
		}
		if !under {
			out = append(out, strings.TrimPrefix(p, prefix))
		}
	}
	sort.Strings(out)
	return out
}

func isRemote(r string) bool {
	return strings.Contains(r, "://") || strings.HasPrefix(r, "git@") || strings.Contains(r, "?ref=") ||
		strings.HasPrefix(r, "github.com/") || strings.HasPrefix(r, "gitlab.com/")
}

// resource reads one resources entry of dir: a file of objects or a folder
// with its own kustomization.
func (b *builder) resource(dir, r string, depth int) ([]*bobj, error) {
	if isRemote(r) {
		return nil, unsupported("remote resource")
	}
	p := join(dir, r)
	if p == ".." || strings.HasPrefix(p, "../") {
		return nil, fmt.Errorf("resource %q is outside the source", r)
	}
	if data, ok := b.fs[p]; ok {
		docs, err := parse.FluxManifest(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		var out []*bobj
		for _, d := range docs {
			b.count++
			if b.count > maxBuildObjects {
				return nil, fmt.Errorf("more than %d objects", maxBuildObjects)
			}
			if d.Kind == "Kustomization" && strings.HasPrefix(d.APIVersion, "kustomize.config.k8s.io/") {
				continue // a kustomization file listed as a file is not an object
			}
			o := &bobj{Secret: d.Secret, ExternalSecret: d.ExternalSecret, vars: d.Vars}
			o.APIVersion, o.Kind, o.Namespace, o.Name = d.APIVersion, d.Kind, d.Namespace, d.Name
			o.Labels, o.Annotations, o.SOPS = d.Labels, d.Annotations, d.SOPS
			o.substDisabled = d.Labels[AnnotationSubstitute] == "disabled" || d.Annotations[AnnotationSubstitute] == "disabled"
			if d.Secret || d.ExternalSecret {
				o.DataKeys = d.Exp.Keys
				if d.Exp.ES != nil {
					es := *d.Exp.ES
					o.ES = &es
				}
			}
			out = append(out, o)
		}
		return out, nil
	}
	if b.isDir(p) {
		return b.dir(p, false, depth+1)
	}
	return nil, fmt.Errorf("resource %q not found", p)
}

// transform applies one kustomization level's transformers to its objects:
// namespace, name prefix/suffix, common annotations and labels, and marks
// what its patches may touch.
func (b *builder) transform(objs []*bobj, k parse.KustomizationFile, dir, where string) {
	for _, p := range k.Patches {
		kind, name, sel := p.Kind, p.Name, p.HasSelector
		if p.File != "" {
			if data, ok := b.fs[join(dir, p.File)]; ok {
				kind, name = parse.PatchIdentity(data)
			} else {
				kind, name = "", "" // unreadable: may touch anything
			}
		}
		kre, nre := pattern(kind), pattern(name)
		for _, o := range objs {
			if !(o.Secret || o.ExternalSecret) || o.Undetermined != "" {
				continue
			}
			if sel || (kre(o.Kind) && nre(o.Name)) {
				o.Undetermined = where + ": a patch"
			}
		}
	}
	for _, o := range objs {
		oldName := o.Name
		if k.Namespace != "" && namespaced(o.Kind) {
			o.Namespace = k.Namespace
		}
		if k.NamePrefix != "" || k.NameSuffix != "" {
			o.Name = k.NamePrefix + o.Name + k.NameSuffix
		}
		if len(k.CommonAnnotations) > 0 {
			o.Annotations = merged(o.Annotations, k.CommonAnnotations)
		}
		if len(k.CommonLabels) > 0 {
			o.Labels = merged(o.Labels, k.CommonLabels)
		}
		if o.ExternalSecret && o.ES != nil && o.Name != oldName && o.ES.Target == oldName && o.Undetermined == "" {
			// The target defaults to the ExternalSecret's name (now changed),
			// unless spec.target.name spelled it out: which one is not known.
			o.Undetermined = where + ": namePrefix/nameSuffix and a target named like the ExternalSecret"
		}
	}
}

// namespaced: the kinds a namespace transformer leaves alone (cluster-scoped
// ones commonly found next to Secrets); anything else gets the namespace.
func namespaced(kind string) bool {
	switch kind {
	case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
		"ClusterSecretStore", "ClusterExternalSecret", "StorageClass", "PriorityClass",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "PersistentVolume":
		return false
	}
	return true
}

// pattern compiles a kustomize selector field (an anchored regular
// expression; "" matches everything; an invalid one matches everything).
func pattern(p string) func(string) bool {
	if p == "" {
		return func(string) bool { return true }
	}
	re, err := regexp.Compile("^(?:" + p + ")$")
	if err != nil {
		return func(string) bool { return true }
	}
	return re.MatchString
}

func merged(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// cleanRel cleans a path relative to the artifact root ("" for the root).
func cleanRel(p string) string {
	p = path.Clean(strings.TrimLeft(p, "/"))
	switch {
	case p == ".":
		return ""
	case p == ".." || strings.HasPrefix(p, "../"):
		return ".."
	}
	return p
}

func join(dir, r string) string {
	if strings.HasPrefix(r, "/") {
		return ".." // absolute paths are refused, as outside the source
	}
	p := path.Clean(path.Join(dir, r))
	if p == "." {
		return ""
	}
	return p
}
