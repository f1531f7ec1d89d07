package parse

import (
	"encoding/json"
	"errors"

	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Input says where a manifest document comes from, for Declared.
type Input struct {
	// What names the input in errors ("helm release", "flux object", ...).
	What string
	// Namespace and Name: used when the document's metadata omits them (a
	// Helm release's namespace; the identity Argo CD names beside a target
	// state).
	Namespace, Name string
	// Group and Kind: the object's kind when the caller knows it (Argo CD
	// names it beside the target state). The document may then omit
	// apiVersion and kind; when it has them they must agree.
	Group, Kind string
	// Meta: keep labels and annotations (bounded, last-applied left out) and
	// whether a "sops" stanza is present.
	Meta bool
	// JSON: the document is JSON and is read as is, not converted from YAML.
	JSON bool
}

// Declared reads one manifest document as the object a source declares: the
// one reader of Helm release manifests, Argo CD target states and Flux builds.
// ok is true for a Secret (its data and stringData key names; values are
// never read) or an ExternalSecret (what it writes, through the decoder live
// ExternalSecrets use: eso.DecodeJSON, eso.Writes); any other document, or one
// that is not a Kubernetes object, gives ok false and no error. A malformed
// document is an error of this package's vocabulary (value-free). YAML is
// converted to JSON as Helm and kubectl do; the converted copy is zeroed.
func Declared(doc []byte, in Input) (model.Declared, bool, error) {
	d, ok, err := declared(doc, in)
	if err != nil {
		return d, false, err
	}
	return d, ok, nil
}

var declTop = []string{"apiVersion", "kind", "metadata", "data", "stringData", "spec", "sops"}

const (
	declAPIVersion = iota
	declKind
	declMetadata
	declData
	declStringData
	declSpec
	declSOPS
)

func declared(doc []byte, in Input) (d model.Declared, ok bool, err *Error) {
	j := doc
	if !in.JSON {
		var yerr bool
		j, yerr = yamlToJSON(doc)
		defer clear(j)
		if yerr {
			return d, false, newErr(in.What, "yaml", ErrMalformed)
		}
	}
	stage := "yaml"
	if in.JSON {
		stage = "json"
		if jsonType(j) != 0 && !json.Valid(j) {
			e := newErr(in.What, stage, ErrMalformed)
			e.Offset = syntaxOffset(j)
			return d, false, e
		}
	}
	if jsonType(j) != '{' { // empty or comment-only document, or a scalar
		return d, false, nil
	}
	bad := func(field, detail string) *Error {
		e := newErr(in.What, stage, ErrMalformed)
		e.Field, e.Detail = field, detail
		return e
	}
	top := make([][]byte, len(declTop))
	fields(j, declTop, top)
	apiVersion, ok1 := optString(top[declAPIVersion])
	kind, ok2 := optString(top[declKind])
	if !ok1 || !ok2 {
		return d, false, nil // not a Kubernetes object; none of our business
	}
	if in.Kind != "" {
		if kind != "" && kind != in.Kind {
			return d, false, bad("kind", "not the kind the source names")
		}
		if apiVersion == "" {
			apiVersion = in.Group + "/v1"
			if in.Group == "" {
				apiVersion = "v1"
			}
		}
		kind = in.Kind
	}
	secret, es := isSecret(apiVersion, kind), isExternalSecret(apiVersion, kind)
	if !secret && !es {
		if in.Kind != "" {
			return d, false, bad("apiVersion", "not the group the source names")
		}
		return d, false, nil
	}
	d.Kind = kind
	if es {
		d.Group = eso.Group
	}
	if m := top[declMetadata]; present(m) {
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
		if in.Meta {
			d.Labels = stringMap(mf[2], "")
			d.Annotations = stringMap(mf[3], "kubectl.kubernetes.io/last-applied-configuration")
		}
	}
	if in.Name != "" {
		d.Name = in.Name
	}
	if d.Namespace == "" || (in.Name != "" && in.Namespace != "") {
		d.Namespace = in.Namespace
	}
	if in.Meta {
		d.SOPS = present(top[declSOPS])
	}
	if secret {
		var keys []string
		for _, f := range []struct {
			idx  int
			name string
		}{{declData, "data"}, {declStringData, "stringData"}} {
			k, good := objectKeys(top[f.idx])
			if !good {
				return d, false, bad(f.name, "not an object")
			}
			keys = append(keys, k...)
		}
		d.Keys = sortDedupe(keys)
		return d, true, nil
	}
	obj, derr := eso.DecodeJSON(j)
	if derr != nil {
		// The error names the field and its type; parse's errors keep to
		// their fixed vocabulary (the fuzz tests hold them to it).
		e := newErr(in.What, stage, ErrMalformed)
		e.Field = "spec"
		var de *eso.DecodeError
		if errors.As(derr, &de) {
			switch de.Want {
			case "object":
				e.Detail = "not an object"
			case "list":
				e.Detail = "not an array"
			case "string":
				e.Detail = "not a string"
			default: // duration, RFC 3339 time
				e.Detail = "bad string"
			}
		}
		return d, false, e
	}
	w := eso.Writes(d.Name, &obj.Spec)
	d.ES = &w
	return d, true, nil
}
