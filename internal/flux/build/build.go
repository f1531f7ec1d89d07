// Package build builds the desired state of a Flux Kustomization with Flux's
// own code; internal/flux/desired fetches the artifacts it builds and polls.
package build

// The desired state of a Flux Kustomization, built by Flux's own code: the
// generator and build of github.com/fluxcd/pkg/kustomize (the version
// kustomize-controller v1.9.6 runs, over kustomize api v0.21) on an in-memory
// copy of the artifact, then postBuild substitution with the same package,
// then reduced to what driftwatch keeps (identities and key names).

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/fluxcd/pkg/envsubst"
	generator "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// FS holds the files of an artifact: cleaned slash-separated paths relative
// to the artifact's root, without a leading "./" or "/", to their contents.
type FS map[string][]byte

// Wipe zeroes every file's bytes and deletes the entries: the caller calls
// it once the build is done with the FS (slices taken from it read zeros
// afterwards).
func (fs FS) Wipe() {
	for k, v := range fs {
		clear(v)
		delete(fs, k)
	}
}

// Result is a build's value-free outcome.
type Result struct {
	// Objects: the Secrets and ExternalSecrets of the build, sorted by
	// namespace, kind and name.
	// (model.Declared, read by parse.FluxObject; Source and Revision unset).
	Objects []model.Declared
	// Vars: for each variable used without a default, the first object (by
	// kind, namespace, name) using it; objects with substitution disabled are
	// left out.
	Vars []model.FluxVarUse
	// Count is the number of objects the build produced (every kind).
	Count int
}

// BuildError is why a build produced nothing. Detail is value-free: a fixed
// phrase, a path of the artifact or a limit, never kustomize's own error text
// (it may quote the manifests it failed on).
type BuildError struct{ Reason, Detail string }

func (e *BuildError) Error() string { return e.Reason + ": " + e.Detail }

func buildErr(reason, format string, a ...any) error {
	return &BuildError{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// Limits of a build.
const (
	// MaxBuildObjects: objects one build may produce.
	MaxBuildObjects = 20000
	// root of the artifact in the in-memory filesystem: one level below "/"
	// so that a path climbing out of the artifact finds nothing, as
	// kustomize-controller's secure filesystem refuses it.
	srcRoot = "/artifact"
)

// Build builds the Secrets and ExternalSecrets kustomize-controller applies
// for a Kustomization (the object as the apiserver returns it; its spec is
// read as the controller reads it) from the artifact's files. It runs Flux's
// generator (the Kustomization's targetNamespace, namePrefix, nameSuffix,
// patches, components and images merged into the path's kustomization, or
// one generated from its files) and Flux's build (kustomize with every load
// restriction off, plugins and exec functions disabled) on an in-memory
// filesystem, then the inline postBuild substitution as the controller
// applies it, and commonMetadata. Remote bases are never fetched (a build
// using one fails with reason remote_base); SOPS is never decrypted (see
// sops.go); a variable that comes from postBuild.substituteFrom, whose values
// driftwatch never reads, makes the objects that use it in a name or key
// undetermined. The files are not modified.
func Build(ks map[string]any, files FS) (res Result, err error) {
	spec, _ := ks["spec"].(map[string]any)
	p, _ := spec["path"].(string)
	rel := cleanRel(p)
	if rel == ".." {
		return Result{}, buildErr(flux.UnjudgedBuildFailed, "spec.path %q is outside the source", Truncate(p))
	}
	if !isDir(files, rel) {
		return Result{}, buildErr(flux.UnjudgedBuildFailed, "spec.path %q not found in the artifact", Truncate(p))
	}
	comps, _, _ := unstructured.NestedStringSlice(spec, "components")
	if where, ok := remoteReference(files, rel, comps); ok {
		return Result{}, buildErr(flux.UnjudgedRemoteBase, "%s", where)
	}
	post := postBuildOf(spec)
	commonLabels, _, _ := unstructured.NestedStringMap(spec, "commonMetadata", "labels")
	commonAnnotations, _, _ := unstructured.NestedStringMap(spec, "commonMetadata", "annotations")
	sops := decryptsSOPS(spec) && hasSOPSSources(files)

	var first standInVariant
	if sops {
		first = standIn0
	}
	resources, err := kustomize(ks, files, rel, first)
	if err != nil {
		return Result{}, err
	}
	if len(resources) > MaxBuildObjects {
		return Result{}, buildErr(flux.UnjudgedLimit, "the build produces %d objects, more than %d", len(resources), MaxBuildObjects)
	}
	nonce := newNonce()
	objs, vars, err := reduce(resources, post, nonce, commonLabels, commonAnnotations)
	if err != nil {
		return Result{}, err
	}
	if sops {
		// The generated names whose hash depends on the content the
		// controller decrypts first: a second build with other stand-ins
		// for the encrypted files moves them.
		again, err := kustomize(ks, files, rel, standIn1)
		if err != nil {
			return Result{}, err
		}
		objs2, _, err := reduce(again, post, nonce, commonLabels, commonAnnotations)
		if err != nil {
			return Result{}, err
		}
		same := map[[3]string]bool{}
		for _, o := range objs2 {
			same[[3]string{o.Kind, o.Namespace, o.Name}] = true
		}
		for i := range objs {
			if o := &objs[i]; !same[[3]string{o.Kind, o.Namespace, o.Name}] && o.Undetermined == "" {
				o.Undetermined = "its name is hashed from content kustomize-controller decrypts (SOPS) first"
			}
		}
	}
	sort.Slice(objs, func(i, j int) bool {
		a, c := objs[i], objs[j]
		if a.Namespace != c.Namespace {
			return a.Namespace < c.Namespace
		}
		if a.Kind != c.Kind {
			return a.Kind < c.Kind
		}
		return a.Name < c.Name
	})
	sort.Slice(vars, func(i, j int) bool { return vars[i].Var < vars[j].Var })
	return Result{Objects: objs, Vars: vars, Count: len(resources)}, nil
}

// newBuildFS makes the build's in-memory filesystem (a test keeps it to look
// inside after the build).
var newBuildFS = filesys.MakeFsInMemory

// kustomize runs Flux's generator and build on an in-memory copy of files
// (SOPS-encrypted files replaced by the stand-in variant).
func kustomize(ks map[string]any, files FS, rel string, variant standInVariant) (out []*resource.Resource, err error) {
	fs := newBuildFS()
	// kyaml's in-memory files are copies (fsnode.go addFile appends to a
	// new array, or to the file's own when it exists): zeroed after the
	// build by writing each file again as zeros of its length, which
	// overwrites the file's array in place. The parsed resources do not
	// alias them (strings of yaml.Node).
	written := map[string]int{}
	defer func() {
		for p, n := range written {
			_ = fs.WriteFile(p, make([]byte, n))
		}
	}()
	for p, b := range files {
		if variant != nil {
			if s, ok := variant(p, b); ok {
				b = s
			}
		}
		if err := fs.WriteFile(path.Join(srcRoot, p), b); err != nil {
			return nil, buildErr(flux.UnjudgedBuildFailed, "the artifact holds a path the build cannot place (%s)", Truncate(p))
		}
		written[path.Join(srcRoot, p)] = len(b)
	}
	dir := path.Join(srcRoot, rel)
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, buildErr(flux.UnjudgedBuildFailed, "Flux's generator panicked on the artifact")
		}
	}()
	g := generator.NewGenerator("", unstructured.Unstructured{Object: ks})
	if err := generatorOn(g, fs); err != nil {
		return nil, err
	}
	if _, err := g.WriteFile(dir); err != nil {
		return nil, buildErr(flux.UnjudgedBuildFailed, "Flux's generator fails on the Kustomization (%s)", kustomizeCategory(err))
	}
	m, err := generator.Build(fs, dir)
	if err != nil {
		return nil, buildErr(flux.UnjudgedBuildFailed, "kustomize build fails (%s)", kustomizeCategory(err))
	}
	for _, r := range m.Resources() {
		// kustomize-controller's check of every object it built.
		if r.GetName() == "" || r.GetKind() == "" || r.GetApiVersion() == "" {
			return nil, buildErr(flux.UnjudgedBuildFailed, "the build holds an object without apiVersion, kind or name")
		}
	}
	return m.Resources(), nil
}

// generatorOn makes g read and write fs. fluxcd/pkg/kustomize v1.35.7's
// Generator works on the filesystem in its unexported field fs when one is
// set (getFS: "If a custom FS was provided ..., it is returned directly"),
// else on the disk; it has no exported setter. The field is set by
// reflection; TestGeneratorFieldIsTheFilesystem fails if a new version
// changes it, and this returns an error instead of building on the disk.
func generatorOn(g *generator.Generator, fs filesys.FileSystem) error {
	f := reflect.ValueOf(g).Elem().FieldByName("fs")
	if !f.IsValid() || f.Type() != reflect.TypeFor[filesys.FileSystem]() {
		return buildErr(flux.UnjudgedBuildFailed, "this fluxcd/pkg/kustomize has no filesystem field to build in memory")
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(fs))
	return nil
}

// kustomizeCategory says, in a fixed phrase, what kind of failure a kustomize
// or generator error is; its text may quote manifests and is never kept.
func kustomizeCategory(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "cycle detected"):
		return "a cycle of kustomizations"
	case strings.Contains(s, "already registered id") || strings.Contains(s, "conflict"):
		return "two objects with the same identity"
	case strings.Contains(s, "must specify --enable-helm") || strings.Contains(s, "plugin"):
		return "a Helm chart or plugin, which Flux's build disables"
	case strings.Contains(s, "panic"):
		return "kustomize panicked"
	case strings.Contains(s, "unable to find one of"):
		return "a folder without a kustomization file"
	case strings.Contains(s, "must build at directory") || strings.Contains(s, "doesn't exist") || strings.Contains(s, "no such file"):
		return "a path it reads does not exist"
	case strings.Contains(s, "yaml") || strings.Contains(s, "json") || strings.Contains(s, "unmarshal"):
		return "a file does not parse"
	}
	return "see the Kustomization's own status"
}

// postBuild is what the build reads of spec.postBuild.
type postBuild struct {
	present bool
	// inline: postBuild.substitute (values are Git's or the Kustomization's,
	// never a Secret's); from: the number of substituteFrom references.
	inline map[string]string
	from   int
	always bool
}

func postBuildOf(spec map[string]any) postBuild {
	pb, ok := spec["postBuild"].(map[string]any)
	if !ok {
		return postBuild{}
	}
	p := postBuild{present: true}
	p.inline, _, _ = unstructured.NestedStringMap(pb, "substitute")
	if l, ok := pb["substituteFrom"].([]any); ok {
		p.from = len(l)
	}
	s, _ := pb["substituteStrategy"].(string)
	p.always = s == "Always"
	return p
}

// varName is kustomize-controller's rule for variable names.
var varName = regexp.MustCompile("^[_[:alpha:]][_[:alpha:][:digit:]]*$")

// reduce turns the built objects into value-free Objects: postBuild
// substitution as kustomize-controller applies it (after the build, object by
// object), commonMetadata, then the Secrets' and ExternalSecrets' identities
// and key names.
func reduce(resources []*resource.Resource, post postBuild, nonce string, labels, annotations map[string]string) ([]model.Declared, []model.FluxVarUse, error) {
	var objs []model.Declared
	var vars []model.FluxVarUse
	seen := map[string]bool{}
	for _, r := range resources {
		kind := r.GetKind()
		interesting := kind == "Secret" || kind == "ExternalSecret"
		disabled := r.GetLabels()[flux.AnnotationSubstitute] == flux.ReconcileDisabled || r.GetAnnotations()[flux.AnnotationSubstitute] == flux.ReconcileDisabled
		if !interesting && (!post.present || disabled) {
			continue
		}
		before, err := r.MarshalJSON()
		if err != nil {
			return nil, nil, buildErr(flux.UnjudgedBuildFailed, "an object does not serialize")
		}
		if post.present && !disabled {
			for _, v := range parse.FluxVariables(before) {
				if !seen[v] {
					seen[v] = true
					vars = append(vars, model.FluxVarUse{Var: v, Kind: kind, Namespace: r.GetNamespace(), Name: r.GetName()})
				}
			}
		}
		if !interesting {
			clear(before)
			continue
		}
		var after []byte
		undetermined := ""
		if post.present && !disabled {
			after, undetermined, err = substitute(r, post, nonce)
			if err != nil {
				return nil, nil, err
			}
		}
		o, err := objectOf(before, after, nonce, undetermined)
		clear(before)
		clear(after)
		if err != nil {
			return nil, nil, err
		}
		if o == nil {
			continue
		}
		if len(labels) > 0 {
			o.Labels = merged(o.Labels, labels)
		}
		if len(annotations) > 0 {
			o.Annotations = merged(o.Annotations, annotations)
		}
		objs = append(objs, *o)
	}
	return objs, vars, nil
}

// substitute applies the inline postBuild variables to r the way
// kustomize-controller does (fluxcd/pkg/kustomize SubstituteVariables, strict
// as v1.9's StrictPostBuildSubstitutions feature gate is by default: a
// variable without a default that nothing defines fails the build), with
// every variable the object
// uses that only postBuild.substituteFrom may define set to a marker holding
// nonce: wherever the marker lands in a name or a key, the object is
// undetermined. It returns the substituted object's JSON ("" when nothing is
// substituted) and, when whether the controller substitutes at all is unknown
// (no inline variable and only substituteFrom ones, which may hold none), a
// reason to tell the caller to judge both forms.
func substitute(r *resource.Resource, post postBuild, nonce string) ([]byte, string, error) {
	runs := len(post.inline) > 0 || post.always
	maybe := !runs && post.from > 0
	if !runs && !maybe {
		return nil, "", nil
	}
	vars := map[string]any{}
	for k, v := range post.inline {
		vars[k] = v
	}
	if post.from > 0 {
		text, err := r.AsYAML()
		if err != nil {
			return nil, "", buildErr(flux.UnjudgedBuildFailed, "an object does not serialize")
		}
		for _, name := range referenced(text) {
			if _, ok := post.inline[name]; !ok && varName.MatchString(name) {
				vars[name] = nonce + name + "."
			}
		}
		clear(text)
	}
	c := r.DeepCopy()
	u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"postBuild": map[string]any{"substitute": vars}}}}
	out, err := generator.SubstituteVariables(context.Background(), nil, u, c,
		generator.SubstituteWithDryRun(true), generator.SubstituteWithStrict(true), generator.SubstituteWithAlways(post.always))
	if err != nil {
		return nil, "", buildErr(flux.UnjudgedBuildFailed, "postBuild substitution fails on %s %s", r.GetKind(), Truncate(r.GetName()))
	}
	if out == nil {
		return nil, "", nil
	}
	j, err := out.MarshalJSON()
	if err != nil {
		return nil, "", buildErr(flux.UnjudgedBuildFailed, "an object does not serialize")
	}
	if maybe {
		return j, "maybe", nil
	}
	return j, "", nil
}

// objectOf reads the value-free Object of a Secret or ExternalSecret from its
// JSON before and after substitution (after nil: none). The object's name
// and keys are those after substitution; when a substituteFrom marker is in
// them, or when substitution may or may not run and the two forms differ, the
// object is undetermined.
func objectOf(before, after []byte, nonce, maybe string) (*model.Declared, error) {
	read := func(j []byte) (*model.Declared, error) {
		d, ok, err := parse.FluxObject(j)
		if err != nil {
			return nil, buildErr(flux.UnjudgedBuildFailed, "a %s does not decode", kindOf(j))
		}
		if !ok {
			return nil, nil
		}
		return &d, nil
	}
	o, err := read(before)
	if err != nil || after == nil || o == nil {
		return o, err
	}
	s, err := read(after)
	if err != nil {
		if maybe != "" || strings.Contains(string(after), nonce) {
			o.Undetermined = "a postBuild.substituteFrom variable changes its structure"
			return o, nil
		}
		return nil, err
	}
	if s == nil {
		o.Undetermined = "a postBuild variable changes its kind"
		return o, nil
	}
	if used := markers(s, nonce); len(used) > 0 {
		s.Undetermined = "postBuild.substituteFrom variable " + strings.Join(used, ", ") + " in its name, namespace or keys"
		return s, nil
	}
	if maybe != "" && !sameShape(o, s) {
		s.Undetermined = "its name or keys depend on whether postBuild substitutes (no inline variable, only substituteFrom ones)"
	}
	return s, nil
}

// markers lists the substituteFrom variables whose marker is in an object's
// identity, keys or the metadata kustomize-controller's apply reads.
func markers(o *model.Declared, nonce string) []string {
	var out []string
	look := func(s string) {
		for {
			i := strings.Index(s, nonce)
			if i < 0 {
				return
			}
			s = s[i+len(nonce):]
			name, _, _ := strings.Cut(s, ".")
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	look(o.Namespace)
	look(o.Name)
	for _, k := range o.Keys {
		look(k)
	}
	if o.ES != nil {
		look(o.ES.Target)
		for _, k := range o.ES.WrittenKeys() {
			look(k)
		}
		for _, k := range o.ES.DataKeys {
			look(k)
		}
	}
	for _, m := range []map[string]string{o.Labels, o.Annotations} {
		for k, v := range m {
			if strings.HasPrefix(k, flux.Group+"/") {
				look(k + "=" + v)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sameShape(a, b *model.Declared) bool {
	if a.Kind != b.Kind || a.Namespace != b.Namespace || a.Name != b.Name || !slices.Equal(a.Keys, b.Keys) {
		return false
	}
	if (a.ES == nil) != (b.ES == nil) {
		return false
	}
	return a.ES == nil || (a.ES.Target == b.ES.Target && slices.Equal(a.ES.WrittenKeys(), b.ES.WrittenKeys()))
}

// referenced lists the variables fluxcd/pkg/envsubst looks up in text (with
// or without a default), read by envsubst's own parser.
func referenced(text []byte) []string {
	var out []string
	seen := map[string]bool{}
	_, _ = envsubst.Eval(string(text), func(name string) (string, bool) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		return "", true
	})
	return out
}

// kindOf names the kind of an object that does not decode, for the build's
// value-free error: Secret or ExternalSecret (the only kinds read), else
// "object".
func kindOf(j []byte) string {
	var head struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(j, &head) == nil && (head.Kind == "Secret" || head.Kind == "ExternalSecret") {
		return head.Kind
	}
	return "object"
}

// isDir reports whether the artifact holds a folder rel ("" the root).
func isDir(files FS, rel string) bool {
	if rel == "" {
		return true
	}
	prefix := rel + "/"
	for p := range files {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// cleanRel cleans a path relative to the artifact root ("" for the root,
// ".." when it climbs out). A leading "/" is the root, as kustomize-controller
// joins spec.path to the artifact's folder.
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

// Truncate bounds a path or name quoted in a detail.
func Truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// newNonce is the prefix of the markers standing for substituteFrom
// variables: random, so that no manifest holds it by chance. A marker is
// nonce + variable name + "." (a variable name holds no dot).
func newNonce() string {
	return "dwvar" + strings.ToLower(rand.Text()) + "x"
}
