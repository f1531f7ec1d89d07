package build

// Remote bases are never fetched: kustomize would GET a remote file over HTTP
// and run `git clone` for a remote folder from the agent's network position
// (kustomize api internal/loader: httpClientGetContent, ClonerUsingGitExec).
// Before a build, every kustomization file the build can reach is read with
// kustomize's own types and every path it loads is checked; one remote path
// and the build does not run.

import (
	"path"
	"regexp"
	"strings"

	generator "github.com/fluxcd/pkg/kustomize"
	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// remoteReference reports the first remote path a build of the folder rel
// (with the Kustomization's spec.components) can load, as "FILE: FIELD
// PATH"-free text: the kustomization file and the field, never the URL (it
// may carry credentials).
func remoteReference(files FS, rel string, components []string) (string, bool) {
	var queue []string
	if kustomizationFile(files, rel) != "" {
		queue = append(queue, rel)
	} else {
		// Flux's generator lists the sub-folders that hold a kustomization
		// (and the files): every kustomization folder under rel may be read.
		for p := range files {
			if under(p, rel) && isKustomizationName(path.Base(p)) {
				queue = append(queue, path.Dir(p))
			}
		}
	}
	for _, c := range components {
		if isRemotePath(c) {
			return "spec.components names a remote component", true
		}
		queue = append(queue, joinRel(rel, c))
	}
	visited := map[string]bool{}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if dir == ".." || visited[dir] {
			continue
		}
		visited[dir] = true
		kf := kustomizationFile(files, dir)
		if kf == "" {
			continue
		}
		var k kustypes.Kustomization
		if err := k.Unmarshal(files[kf]); err != nil {
			continue // kustomize fails on it too: the build reports it
		}
		k.FixKustomization()
		for _, f := range loadedPaths(&k) {
			if isRemotePath(f.path) {
				return kf + ": " + f.field + " names a remote resource", true
			}
			if f.folder {
				if d := joinRel(dir, f.path); isDir(files, d) {
					queue = append(queue, d)
				}
			}
		}
	}
	return "", false
}

type loaded struct {
	field, path string
	folder      bool // may be a kustomization folder
}

// loadedPaths lists every path a kustomization loads (kustomize api v0.21
// types.Kustomization): resources and components (files or folders), and the
// files of crds, configurations, generators, transformers, validators,
// patches, replacements, openapi and the generators' file and env sources
// (bases and env: FixKustomization, which kustomize runs too, has moved them
// to resources and envs).
// Entries of generators, transformers, validators and patchesStrategicMerge
// may be inline YAML instead of a path: those are skipped.
func loadedPaths(k *kustypes.Kustomization) []loaded {
	var out []loaded
	add := func(field string, folder bool, l ...string) {
		for _, p := range l {
			if p = strings.TrimSpace(p); p != "" && !strings.ContainsAny(p, "\n") {
				out = append(out, loaded{field: field, path: p, folder: folder})
			}
		}
	}
	add("resources", true, k.Resources...) // FixKustomization moved bases here
	add("components", true, k.Components...)
	add("crds", false, k.Crds...)
	add("configurations", false, k.Configurations...)
	for _, l := range [][]string{k.Generators, k.Transformers, k.Validators} {
		for _, p := range l {
			if !strings.Contains(p, ":") || isRemotePath(p) {
				add("generators/transformers/validators", true, p)
			}
		}
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // deprecated, still loaded by kustomize
		if s := string(p); !strings.Contains(s, "\n") && (!strings.Contains(s, ": ") || isRemotePath(s)) {
			add("patchesStrategicMerge", false, s)
		}
	}
	for _, p := range k.Patches {
		add("patches", false, p.Path)
	}
	for _, p := range k.PatchesJson6902 { //nolint:staticcheck // deprecated, still loaded by kustomize
		add("patchesJson6902", false, p.Path)
	}
	for _, r := range k.Replacements {
		add("replacements", false, r.Path)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		add("openapi", false, p)
	}
	sources := func(field string, s kustypes.KvPairSources) {
		for _, f := range s.FileSources {
			if _, file, ok := strings.Cut(f, "="); ok {
				f = file
			}
			add(field, false, f)
		}
		add(field, false, s.EnvSources...)
		add(field, false, s.EnvSource)
	}
	for _, g := range k.ConfigMapGenerator {
		sources("configMapGenerator", g.KvPairSources)
	}
	for _, g := range k.SecretGenerator {
		sources("secretGenerator", g.KvPairSources)
	}
	for _, h := range k.HelmCharts {
		add("helmCharts", false, h.Repo)
	}
	return out
}

var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// isRemotePath reports whether kustomize would load p over the network (or
// from outside the artifact): a URL of any scheme, kustomize's git forms
// (git::, gh:, github.com/, user@host:path), or what Flux's own
// IsLocalRelativePath does not accept (it refuses absolute paths too, which
// kustomize-controller's secure filesystem refuses as well).
func isRemotePath(p string) bool {
	lower := strings.ToLower(p)
	return strings.Contains(p, "://") || strings.HasPrefix(lower, "git::") || scpUser.MatchString(p) ||
		strings.Contains(p, "?ref=") || strings.Contains(p, "?version=") || !generator.IsLocalRelativePath(p)
}

// kustomizationFile returns the path of dir's kustomization file ("" when it
// has none), trying kustomize's names in its order.
func kustomizationFile(files FS, dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, n)
		if _, ok := files[p]; ok {
			return p
		}
	}
	return ""
}

func isKustomizationName(base string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if base == n {
			return true
		}
	}
	return false
}

// under reports whether p lies below dir ("" the root).
func under(p, dir string) bool {
	return dir == "" || strings.HasPrefix(p, dir+"/")
}

// joinRel joins a path relative to a folder of the artifact, ".." when it
// climbs out.
func joinRel(dir, p string) string {
	return cleanRel(path.Join(dir, p))
}
