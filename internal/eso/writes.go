package eso

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/model"
)

// MaxManifestBytes bounds an ExternalSecret manifest DecodeJSON reads (a live
// object is bounded by the apiserver's own limits).
const MaxManifestBytes = 4 << 20

// DecodeJSON decodes an ExternalSecret manifest given as JSON (an Argo CD
// target state, a Helm manifest document converted from YAML) with the same
// decoder as live objects (Decode). Its errors name fields and JSON types,
// never input bytes. The decoded map is transient: nothing of it is kept but
// what Decode reads (template bodies are not).
func DecodeJSON(b []byte) (ExternalSecret, error) {
	var es ExternalSecret
	if len(b) > MaxManifestBytes {
		return es, fmt.Errorf("manifest larger than %d bytes", MaxManifestBytes)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return es, fmt.Errorf("not a JSON object (%s)", te.Value)
		}
		return es, errors.New("malformed JSON")
	}
	if err := decode(obj, &es); err != nil {
		return es, err
	}
	return es, nil
}

// Writes summarises what an ExternalSecret named name writes into its target,
// from its spec (decoded by Decode or DecodeJSON): the one place the template
// rules are read. Policies absent from the spec get the CRD's defaults
// (creationPolicy Owner, deletionPolicy Retain), as the apiserver gives them
// to live objects.
//
// What ESO v0.20.4 renders (pkg/controllers/templating/parser.go): a
// templateFrom configMap/secret item with templateAs Values (the default)
// writes the item's key; one with templateAs KeysAndValues, and a
// templateFrom literal, write keys taken from content (TemplateOpen); a
// templateFrom whose target is Labels or Annotations writes no data. Any
// templateFrom entry or template.data makes the template render data
// (ApplyTemplate: the provider's data is then copied only with mergePolicy
// Merge).
func Writes(name string, sp *ExternalSecretSpec) model.ESWrites {
	w := model.ESWrites{
		Target:         sp.Target.Name, // a name: not interned (model.Intern)
		CreationPolicy: model.Intern(sp.Target.CreationPolicy),
		DeletionPolicy: model.Intern(sp.Target.DeletionPolicy),
		HasSpecData:    sp.Data != nil,
	}
	if w.Target == "" {
		w.Target = name
	}
	if w.CreationPolicy == "" {
		w.CreationPolicy = "Owner"
	}
	if w.DeletionPolicy == "" {
		w.DeletionPolicy = "Retain"
	}
	if len(sp.Data) > 0 {
		w.DataKeys = make([]string, 0, len(sp.Data))
	}
	for _, d := range sp.Data {
		w.DataKeys = append(w.DataKeys, model.Intern(d.SecretKey))
	}
	if tpl := sp.Target.Template; tpl != nil {
		w.HasTemplate = true
		w.TemplateMergePolicy = model.Intern(tpl.MergePolicy)
		w.TemplateRendersData = len(tpl.Data) > 0 || len(tpl.TemplateFrom) > 0
		for k := range tpl.Data {
			w.TemplateKeys = append(w.TemplateKeys, model.Intern(k))
		}
		for _, tf := range tpl.TemplateFrom {
			if tf.Target != "" && !strings.EqualFold(tf.Target, "Data") {
				continue // Labels, Annotations: no data
			}
			if tf.Literal != nil && w.TemplateOpen == "" {
				w.TemplateOpen = model.TemplateOpenLiteral
			}
			for _, ref := range []*TemplateRef{tf.ConfigMap, tf.Secret} {
				if ref == nil {
					continue
				}
				for _, it := range ref.Items {
					switch it.TemplateAs {
					case "", "Values":
						w.TemplateKeys = append(w.TemplateKeys, model.Intern(it.Key))
					case "KeysAndValues":
						if w.TemplateOpen == "" {
							w.TemplateOpen = model.TemplateOpenKeysAndValues
						}
					}
				}
			}
		}
		slices.Sort(w.TemplateKeys)
		w.TemplateKeys = slices.Compact(w.TemplateKeys)
	}
	w.DataFrom = len(sp.DataFrom)
	for _, df := range sp.DataFrom {
		if df.Find != nil {
			w.DataFromFind++
		}
		if df.SourceRef != nil && df.SourceRef.GeneratorRef != nil {
			w.DataFromGenerators++
		}
	}
	return w
}
