package parse

import (
	"bytes"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Limits of the Flux source reader (a file of a source-controller artifact).
const (
	// MaxFluxFileBytes: one manifest or kustomization file.
	MaxFluxFileBytes = 4 << 20
	// MaxFluxDocuments: YAML documents in one file.
	MaxFluxDocuments = 10000
	// MaxFluxMetadataEntries: labels or annotations kept per document.
	MaxFluxMetadataEntries = 64
	// MaxFluxMetadataValue: a kept label or annotation value.
	MaxFluxMetadataValue = 1024
	// MaxFluxVariables: postBuild variables recorded per document.
	MaxFluxVariables = 256
)

const inputFlux = "flux manifest"

// FluxDocument is the value-free reading of one manifest document in a Flux
// source: identity, labels and annotations (not last-applied), the key names of
// a Secret (data, stringData) or the entries of an ExternalSecret, and the
// postBuild variables it uses without a default. A Secret's values, SOPS
// ciphertext included, are never read.
type FluxDocument struct {
	APIVersion, Kind, Namespace, Name string
	Labels, Annotations               map[string]string
	// Secret or ExternalSecret: Exp holds the key names (Keys: what the Secret
	// holds, or what the ExternalSecret writes into its target; SpecDataKeys:
	// spec.data secretKeys in order; Target).
	Secret, ExternalSecret bool
	Exp                    model.HelmExpectation
	// SOPS: the document carries a top-level "sops" stanza (an encrypted
	// Secret: key names are in clear, values are not).
	SOPS bool
	// Vars are the ${NAME} references without a default (sorted, unique), as
	// fluxcd/pkg/envsubst reads them; $${NAME} is an escape.
	Vars []string
}

// FluxManifest reads every document of one YAML file of a Flux source. A
// document that is not a Kubernetes object (no apiVersion or kind) is skipped;
// a malformed one is an error that names its index, and the rest are read.
func FluxManifest(data []byte) ([]FluxDocument, error) {
	if len(data) > MaxFluxFileBytes {
		e := newErr(inputFlux, "", ErrTooLarge)
		e.Limit = MaxFluxFileBytes
		return nil, e
	}
	var docs []FluxDocument
	var first *Error
	more, idx := 0, 0
	splitDocuments(data, func(doc []byte, offset int) bool {
		if idx >= MaxFluxDocuments {
			e := newErr(inputFlux, "manifest", ErrTooLarge)
			e.Detail, e.Limit, e.Offset = "too many documents", MaxFluxDocuments, int64(offset)
			if first == nil {
				first = e
			}
			return false
		}
		i := idx
		idx++
		d, ok, err := fluxDocument(doc)
		if err != nil {
			err.Index, err.Offset = i, int64(offset)
			if first == nil {
				first = err
			} else {
				more++
			}
			return true
		}
		if ok {
			docs = append(docs, d)
		}
		return true
	})
	if first != nil {
		first.More = more
		return docs, first
	}
	return docs, nil
}

var fluxTop = []string{"apiVersion", "kind", "metadata", "sops"}

func fluxDocument(doc []byte) (d FluxDocument, ok bool, err *Error) {
	j, yerr := yamlToJSON(doc)
	defer clear(j)
	if yerr {
		return d, false, newErr(inputFlux, "yaml", ErrMalformed)
	}
	if jsonType(j) != '{' {
		return d, false, nil
	}
	top := make([][]byte, len(fluxTop))
	fields(j, fluxTop, top)
	var ok1, ok2 bool
	d.APIVersion, ok1 = optString(top[0])
	d.Kind, ok2 = optString(top[1])
	if !ok1 || !ok2 || d.APIVersion == "" || d.Kind == "" {
		return d, false, nil
	}
	bad := func(field, detail string) *Error {
		e := newErr(inputFlux, "yaml", ErrMalformed)
		e.Field, e.Detail = field, detail
		return e
	}
	if m := top[2]; present(m) {
		if jsonType(m) != '{' {
			return d, false, bad("metadata", "not an object")
		}
		mf := make([][]byte, 4)
		fields(m, []string{"name", "namespace", "labels", "annotations"}, mf)
		var okN, okNS bool
		d.Name, okN = optString(mf[0])
		d.Namespace, okNS = optString(mf[1])
		if !okN || !okNS {
			return d, false, bad("metadata", "name or namespace is not a string")
		}
		d.Labels = stringMap(mf[2], "")
		d.Annotations = stringMap(mf[3], "kubectl.kubernetes.io/last-applied-configuration")
	}
	d.SOPS = present(top[3])
	d.Secret, d.ExternalSecret = isSecret(d.APIVersion, d.Kind), isExternalSecret(d.APIVersion, d.Kind)
	if d.Secret || d.ExternalSecret {
		exp, okE, e := documentExpectation(doc, "")
		if e != nil {
			return d, false, e
		}
		if okE {
			d.Exp = exp
		}
	}
	d.Vars = substVars(j)
	return d, true, nil
}

// stringMap reads a JSON object of strings (labels, annotations), bounded; a
// member that is not a string, or named skip, is left out.
func stringMap(obj []byte, skip string) map[string]string {
	if jsonType(obj) != '{' {
		return nil
	}
	var out map[string]string
	eachMember(obj, func(k, v []byte) bool {
		if len(out) >= MaxFluxMetadataEntries {
			return false
		}
		key, ok := unquoteString(k)
		if !ok || key == skip || jsonType(v) != '"' || len(v) > MaxFluxMetadataValue+2 {
			return true
		}
		val, ok := unquoteString(v)
		if !ok {
			return true
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = val
		return true
	})
	return out
}

// substVars lists the variables fluxcd/pkg/envsubst would look up without a
// default: ${NAME}, ${NAME:?msg}, ${NAME?msg} and the case and substring
// operators; ${NAME:-x}, ${NAME-x}, ${NAME:=x}, ${NAME=x} carry a default.
// $${ is an escape. NAME follows kustomize-controller's rule
// ^[_[:alpha:]][_[:alpha:][:digit:]]*$. It reads the JSON form, so YAML
// comments are not seen (kustomize drops them before substitution).
func substVars(j []byte) []string {
	var vars []string
	for i := 0; i < len(j); i++ {
		if j[i] != '$' {
			continue
		}
		if i+1 < len(j) && j[i+1] == '$' {
			i++ // $$: an escaped dollar
			continue
		}
		if i+1 >= len(j) || j[i+1] != '{' {
			continue
		}
		k := i + 2
		start := k
		for k < len(j) && (j[k] == '_' || isAlpha(j[k]) || (k > start && isDigit(j[k]))) {
			k++
		}
		if k == start || k >= len(j) {
			continue
		}
		name := string(j[start:k])
		switch j[k] {
		case '-', '=':
			// ${NAME-x}, ${NAME=x}: a default
		case ':':
			if k+1 < len(j) && (j[k+1] == '-' || j[k+1] == '=') {
				break // ${NAME:-x}, ${NAME:=x}
			}
			vars = append(vars, name)
		default:
			vars = append(vars, name)
		}
		if len(vars) >= MaxFluxVariables {
			break
		}
		i = k
	}
	return sortDedupe(vars)
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// KustomizationFile is the reading of a kustomization.yaml: the fields
// driftwatch's reduced build follows, and the names of the others that are
// present (it does not reproduce them). Nothing else is kept: a
// secretGenerator's literals hold values.
type KustomizationFile struct {
	Resources, Components []string
	Namespace             string
	NamePrefix            string
	NameSuffix            string
	CommonAnnotations     map[string]string
	CommonLabels          map[string]string
	// Patches: each patch's target (kind and name patterns, "" when unset)
	// and, for a patch without a target, the patch file or inline text's
	// kind and name; File is the patch file's path ("" when inline).
	Patches []KustomizePatch
	// Other lists the other top-level fields present (sorted).
	Other []string
}

// KustomizePatch is one patch of a kustomization file.
type KustomizePatch struct {
	Kind, Name string // a pattern (target) or the patch's own (no target); "" = any
	File       string
	Inline     bool
	// HasSelector: the target also selects by labels or annotations.
	HasSelector bool
}

// The kustomization fields that cannot change a Secret's or an
// ExternalSecret's keys, names, annotations or labels.
var kustomizeHarmless = map[string]bool{
	"apiVersion": true, "kind": true, "metadata": true, "images": true, "replicas": true,
	"buildMetadata": true, "sortOptions": true, "openapi": true, "crds": true,
	"generatorOptions": true, "configurations": true,
}

// ParseKustomizationFile reads a kustomization file.
func ParseKustomizationFile(data []byte) (KustomizationFile, error) {
	var k KustomizationFile
	if len(data) > MaxFluxFileBytes {
		e := newErr("kustomization", "", ErrTooLarge)
		e.Limit = MaxFluxFileBytes
		return k, e
	}
	j, yerr := yamlToJSON(data)
	defer clear(j)
	if yerr {
		return k, newErr("kustomization", "yaml", ErrMalformed)
	}
	if jsonType(j) != '{' {
		return k, nil
	}
	bad := func(field string) error {
		e := newErr("kustomization", "yaml", ErrMalformed)
		e.Field = field
		return e
	}
	var err error
	eachMember(j, func(rk, v []byte) bool {
		name, ok := unquoteString(rk)
		if !ok {
			err = bad("")
			return false
		}
		switch name {
		case "resources", "bases":
			l, ok := stringList(v)
			if !ok {
				err = bad(name)
				return false
			}
			k.Resources = append(k.Resources, l...)
		case "components":
			if k.Components, ok = stringList(v); !ok {
				err = bad(name)
				return false
			}
		case "namespace":
			k.Namespace, ok = optString(v)
		case "namePrefix":
			k.NamePrefix, ok = optString(v)
		case "nameSuffix":
			k.NameSuffix, ok = optString(v)
		case "commonAnnotations":
			k.CommonAnnotations = stringMap(v, "")
		case "commonLabels":
			k.CommonLabels = stringMap(v, "")
		case "labels":
			// labels: [{pairs: {...}, includeSelectors: ...}]
			eachElement(v, func(el []byte) bool {
				p := make([][]byte, 1)
				fields(el, []string{"pairs"}, p)
				for lk, lv := range stringMap(p[0], "") {
					if k.CommonLabels == nil {
						k.CommonLabels = map[string]string{}
					}
					k.CommonLabels[lk] = lv
				}
				return true
			})
		case "patches", "patchesJson6902":
			ok = eachElement(v, func(el []byte) bool {
				k.Patches = append(k.Patches, readPatch(el))
				return true
			})
		case "patchesStrategicMerge":
			ok = eachElement(v, func(el []byte) bool {
				s, good := optString(el)
				if !good {
					return false
				}
				if looksInline(s) {
					p := KustomizePatch{Inline: true}
					p.Kind, p.Name = patchIdentity([]byte(s))
					k.Patches = append(k.Patches, p)
				} else {
					k.Patches = append(k.Patches, KustomizePatch{File: s})
				}
				return true
			})
		default:
			if !kustomizeHarmless[name] {
				k.Other = append(k.Other, name)
			}
		}
		if !ok {
			err = bad(name)
			return false
		}
		return true
	})
	k.Other = sortDedupe(k.Other)
	return k, err
}

// readPatch reads a patches/patchesJson6902 entry: {path|patch, target}.
func readPatch(el []byte) KustomizePatch {
	f := make([][]byte, 3)
	fields(el, []string{"path", "patch", "target"}, f)
	var p KustomizePatch
	p.File, _ = optString(f[0])
	if t := f[2]; present(t) {
		tf := make([][]byte, 4)
		fields(t, []string{"kind", "name", "labelSelector", "annotationSelector"}, tf)
		p.Kind, _ = optString(tf[0])
		p.Name, _ = optString(tf[1])
		p.HasSelector = present(tf[2]) || present(tf[3])
		p.File = "" // the target decides; the file need not be read
		return p
	}
	if inline, _ := optString(f[1]); inline != "" {
		p.Inline = true
		p.Kind, p.Name = patchIdentity([]byte(inline))
	}
	return p
}

// PatchIdentity returns the kind and name of a strategic-merge patch document
// ("" when it has none).
func PatchIdentity(data []byte) (kind, name string) { return patchIdentity(data) }

func patchIdentity(data []byte) (kind, name string) {
	j, yerr := yamlToJSON(data)
	defer clear(j)
	if yerr || jsonType(j) != '{' {
		return "", ""
	}
	top := make([][]byte, 2)
	fields(j, []string{"kind", "metadata"}, top)
	kind, _ = optString(top[0])
	if present(top[1]) {
		m := make([][]byte, 1)
		fields(top[1], []string{"name"}, m)
		name, _ = optString(m[0])
	}
	return kind, name
}

// looksInline: a patchesStrategicMerge entry holding YAML rather than a path.
func looksInline(s string) bool { return bytes.ContainsAny([]byte(s), "\n:") }

func stringList(v []byte) ([]string, bool) {
	switch jsonType(v) {
	case 0, 'n':
		return nil, true
	case '[':
	default:
		return nil, false
	}
	var out []string
	ok := eachElement(v, func(el []byte) bool {
		s, good := optString(el)
		if !good {
			return false
		}
		out = append(out, s)
		return true
	})
	return out, ok
}
