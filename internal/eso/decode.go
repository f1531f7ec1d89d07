package eso

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decode fills the fields of es.Spec and es.Status that driftwatch reads
// (Writes and the ExternalSecret transform), straight from an unstructured map
// (a live object, or a manifest decoded by DecodeJSON): the
// reflective converter cost more than the rest of the transform. It follows the
// converter's rules for those fields (absent or null: zero value; a value of the
// wrong JSON type: an error; times RFC 3339, durations as time.ParseDuration)
// and ignores every other field. TestExternalSecretDecodeMatchesConverter holds
// it to the converter. On error the fields decoded so far are kept.
func Decode(obj map[string]any, es *ExternalSecret) string {
	if err := decode(obj, es); err != nil {
		return err.Error()
	}
	return ""
}

// DecodeError is a field of an ExternalSecret with the wrong JSON type: its
// path and the type it needs, never its value.
type DecodeError struct {
	// Path is the field ("spec.data[].secretKey").
	Path string
	// Want is what it should be: object, list, string, duration, RFC 3339 time.
	Want string
}

func (e *DecodeError) Error() string {
	article := "a"
	if e.Want == "object" || e.Want == "RFC 3339 time" {
		article = "an"
	}
	return fmt.Sprintf("decode: %s: not %s %s", e.Path, article, e.Want)
}

func decode(obj map[string]any, es *ExternalSecret) *DecodeError {
	d := esDecoder{}
	if spec := d.object(obj["spec"], "spec"); spec != nil {
		sp := &es.Spec
		if ref := d.object(spec["secretStoreRef"], "spec.secretStoreRef"); ref != nil {
			sp.SecretStoreRef.Name = d.str(ref["name"], "spec.secretStoreRef.name")
			sp.SecretStoreRef.Kind = d.str(ref["kind"], "spec.secretStoreRef.kind")
		}
		if t := d.object(spec["target"], "spec.target"); t != nil {
			sp.Target.Name = d.str(t["name"], "spec.target.name")
			sp.Target.CreationPolicy = d.str(t["creationPolicy"], "spec.target.creationPolicy")
			sp.Target.DeletionPolicy = d.str(t["deletionPolicy"], "spec.target.deletionPolicy")
			sp.Target.Template = d.template(t["template"])
		}
		if v, ok := spec["refreshInterval"]; ok && v != nil {
			if s, ok := v.(string); !ok {
				d.fail("spec.refreshInterval", "string")
			} else if dur, err := time.ParseDuration(s); err != nil {
				d.fail("spec.refreshInterval", "duration")
			} else {
				sp.RefreshInterval = &metav1.Duration{Duration: dur}
			}
		}
		sp.RefreshPolicy = d.str(spec["refreshPolicy"], "spec.refreshPolicy")
		if l := d.list(spec["data"], "spec.data"); l != nil {
			sp.Data = make([]ExternalSecretData, 0, len(l)) // present, possibly empty
		}
		for _, e := range d.list(spec["data"], "spec.data") {
			if m := d.object(e, "spec.data[]"); m != nil {
				sp.Data = append(sp.Data, ExternalSecretData{SecretKey: d.str(m["secretKey"], "spec.data[].secretKey")})
			} else {
				sp.Data = append(sp.Data, ExternalSecretData{})
			}
		}
		for _, e := range d.list(spec["dataFrom"], "spec.dataFrom") {
			var df ExternalSecretDataFromRemote
			if m := d.object(e, "spec.dataFrom[]"); m != nil {
				if d.object(m["find"], "spec.dataFrom[].find") != nil {
					df.Find = &ExternalSecretFind{}
				}
				if sr := d.object(m["sourceRef"], "spec.dataFrom[].sourceRef"); sr != nil {
					if g := d.object(sr["generatorRef"], "spec.dataFrom[].sourceRef.generatorRef"); g != nil {
						df.SourceRef = &StoreGeneratorSourceRef{GeneratorRef: &GeneratorRef{
							Kind: d.str(g["kind"], "spec.dataFrom[].sourceRef.generatorRef.kind"),
							Name: d.str(g["name"], "spec.dataFrom[].sourceRef.generatorRef.name")}}
					} else {
						df.SourceRef = &StoreGeneratorSourceRef{}
					}
				}
			}
			sp.DataFrom = append(sp.DataFrom, df)
		}
	}
	if st := d.object(obj["status"], "status"); st != nil {
		es.Status.RefreshTime = d.time(st["refreshTime"], "status.refreshTime")
		es.Status.SyncedResourceVersion = d.str(st["syncedResourceVersion"], "status.syncedResourceVersion")
		for _, e := range d.list(st["conditions"], "status.conditions") {
			var c StatusCondition
			if m := d.object(e, "status.conditions[]"); m != nil {
				c.Type = d.str(m["type"], "status.conditions[].type")
				c.Status = d.str(m["status"], "status.conditions[].status")
				c.Reason = d.str(m["reason"], "status.conditions[].reason")
				c.Message = d.str(m["message"], "status.conditions[].message")
				c.LastTransitionTime = d.time(m["lastTransitionTime"], "status.conditions[].lastTransitionTime")
			}
			es.Status.Conditions = append(es.Status.Conditions, c)
		}
	}
	return d.err
}

// esDecoder records the first type error; it names fields and types only,
// never values.
type esDecoder struct{ err *DecodeError }

func (d *esDecoder) fail(path, want string) {
	if d.err == nil {
		d.err = &DecodeError{Path: path, Want: want}
	}
}

func (d *esDecoder) object(v any, path string) map[string]any {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "object")
	}
	return m
}

func (d *esDecoder) list(v any, path string) []any {
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		d.fail(path, "list")
	}
	return l
}

func (d *esDecoder) str(v any, path string) string {
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.fail(path, "string")
	}
	return s
}

func (d *esDecoder) time(v any, path string) metav1.Time {
	if v == nil {
		return metav1.Time{}
	}
	s, ok := v.(string)
	if !ok {
		d.fail(path, "string")
		return metav1.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d.fail(path, "RFC 3339 time")
		return metav1.Time{}
	}
	return metav1.Time{Time: t.Local()}
}

func (d *esDecoder) template(v any) *ExternalSecretTemplate {
	m := d.object(v, "spec.target.template")
	if m == nil {
		return nil
	}
	tpl := &ExternalSecretTemplate{MergePolicy: d.str(m["mergePolicy"], "spec.target.template.mergePolicy")}
	if data := d.object(m["data"], "spec.target.template.data"); data != nil {
		tpl.Data = make(map[string]string, len(data))
		for k, v := range data {
			_ = d.str(v, "spec.target.template.data{}") // the value (a template) is not kept
			tpl.Data[k] = ""
		}
	}
	for _, e := range d.list(m["templateFrom"], "spec.target.template.templateFrom") {
		var tf TemplateFrom
		if f := d.object(e, "spec.target.template.templateFrom[]"); f != nil {
			tf.Target = d.str(f["target"], "spec.target.template.templateFrom[].target")
			tf.ConfigMap = d.templateRef(f["configMap"], "spec.target.template.templateFrom[].configMap")
			tf.Secret = d.templateRef(f["secret"], "spec.target.template.templateFrom[].secret")
			if l, ok := f["literal"]; ok && l != nil {
				_ = d.str(l, "spec.target.template.templateFrom[].literal") // the template itself is not kept
				tf.Literal = new(string)
			}
		}
		tpl.TemplateFrom = append(tpl.TemplateFrom, tf)
	}
	return tpl
}

func (d *esDecoder) templateRef(v any, path string) *TemplateRef {
	m := d.object(v, path)
	if m == nil {
		return nil
	}
	ref := &TemplateRef{Name: d.str(m["name"], path+".name")}
	for _, e := range d.list(m["items"], path+".items") {
		var it TemplateRefItem
		if im := d.object(e, path+".items[]"); im != nil {
			it.Key = d.str(im["key"], path+".items[].key")
			it.TemplateAs = d.str(im["templateAs"], path+".items[].templateAs")
		}
		ref.Items = append(ref.Items, it)
	}
	return ref
}
