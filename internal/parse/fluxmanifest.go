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

// FluxDocument is the value-free reading of one object a Flux Kustomization's
// build produces: identity, labels and annotations (not last-applied), and the
// key names of a Secret (data, stringData) or what an ExternalSecret writes. A
// Secret's values, SOPS ciphertext included, are never read.
type FluxDocument struct {
	APIVersion, Kind, Namespace, Name string
	Labels, Annotations               map[string]string
	// Secret or ExternalSecret: Exp holds the key names (Keys: what the Secret
	// holds, or what the ExternalSecret writes into its target; SpecDataKeys:
	// spec.data secretKeys in order; Target).
	Secret, ExternalSecret bool
	Exp                    model.HelmExpectation
	// SOPS: the object carries a top-level "sops" stanza (an encrypted
	// Secret: key names are in clear, values are not).
	SOPS bool
}

// FluxObject reads one object (JSON or YAML). ok is false for a document that
// is not a Kubernetes object (no apiVersion or kind); a malformed one is an
// error from parse's vocabulary (value-free).
func FluxObject(doc []byte) (FluxDocument, bool, error) {
	if len(doc) > MaxFluxObjectBytes {
		e := newErr(inputFlux, "", ErrTooLarge)
		e.Limit = MaxFluxObjectBytes
		return FluxDocument{}, false, e
	}
	d, ok, err := fluxDocument(doc)
	if err != nil {
		return d, false, err
	}
	return d, ok, nil
}

// FluxVariables lists the postBuild variables an object (JSON) uses without a
// default, sorted and unique (see substVars).
func FluxVariables(j []byte) []string { return substVars(j) }

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
