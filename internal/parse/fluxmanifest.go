package parse

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// Limits of the Flux object reader (one object of a Kustomization's build).
const (
	// MaxFluxObjectBytes: one object's JSON (or YAML). The artifact reader's
	// per-file limit is the same (internal/flux), so no file the build
	// reads holds an object this reader refuses for its size alone.
	MaxFluxObjectBytes = 8 << 20
	// MaxFluxMetadataEntries: labels or annotations kept per object.
	MaxFluxMetadataEntries = 64
	// MaxFluxMetadataValue: a kept label or annotation value.
	MaxFluxMetadataValue = 1024
	// MaxFluxVariables: postBuild variables recorded per object.
	MaxFluxVariables = 256
)

const inputFlux = "flux object"

// FluxObject reads one object of a Flux Kustomization's build (JSON or YAML)
// with Declared: ok is true for a Secret or an ExternalSecret, whose labels
// and annotations (not last-applied) and SOPS stanza are read too.
func FluxObject(doc []byte) (model.Declared, bool, error) {
	if len(doc) > MaxFluxObjectBytes {
		e := newErr(inputFlux, "", ErrTooLarge)
		e.Limit = MaxFluxObjectBytes
		return model.Declared{}, false, e
	}
	d, ok, err := declared(doc, Input{What: inputFlux, Meta: true})
	if err != nil {
		return d, false, err
	}
	return d, ok, nil
}

// FluxVariables lists the postBuild variables an object (JSON) uses without a
// default, sorted and unique (see substVars).
func FluxVariables(j []byte) []string { return substVars(j) }

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
