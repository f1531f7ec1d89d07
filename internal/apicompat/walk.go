// Package apicompat is the walker that test/apicompat/eso and test/apicompat/argocd
// share (each is its own module and imports it through its replace of the agent).
// It proves a small local mirror struct against the upstream Go type it mirrors in
// two independent ways:
//
//  1. structure (CheckStructure): every JSON field of the local type must exist in
//     the upstream Go type under the same JSON name, with a compatible shape
//     (struct/slice/map/scalar kind; apimachinery types must be the identical type).
//     This needs no fixture, so a renamed or retyped field fails even if no fixture
//     populates it.
//  2. values (ValueChecker): a fully populated upstream object is JSON-encoded,
//     decoded the way the agent decodes it, and every leaf of the local struct must
//     equal the value at the same JSON path of the upstream JSON; and across all
//     fixtures every leaf of the local type must have been non-zero at least once
//     (coverage), so a field that silently decodes to zero cannot pass.
package apicompat

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// opaque types are compared as whole JSON values instead of being walked: shared
// apimachinery types (metav1.Time, metav1.Duration, ObjectMeta, TypeMeta) and any
// type with its own JSON encoding.
func opaque(t reflect.Type) bool {
	if strings.HasPrefix(t.PkgPath(), "k8s.io/apimachinery/") {
		return true
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return true
	}
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// jsonField returns the JSON name of a struct field, whether it is inlined
// (anonymous without a name, or ",inline"), and whether it is skipped.
func jsonField(f reflect.StructField) (name string, inline, skip bool) {
	if !f.IsExported() {
		return "", false, true
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	if f.Anonymous && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
		return "", true, false
	}
	if name == "" {
		name = f.Name
	}
	return name, false, false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// upstreamFields indexes the JSON fields of an upstream struct type, flattening
// inlined embedded structs; inlined opaque types are indexed by type.
func upstreamFields(t reflect.Type, byName map[string]reflect.Type, inlined map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline, skip := jsonField(f)
		switch {
		case skip:
		case inline && opaque(deref(f.Type)):
			inlined[deref(f.Type)] = true
		case inline:
			upstreamFields(deref(f.Type), byName, inlined)
		default:
			if _, dup := byName[name]; !dup {
				byName[name] = f.Type
			}
		}
	}
}

// CheckStructure walks the local type and the upstream type side by side and
// returns one message per local field that has no compatible upstream counterpart.
func CheckStructure(local, upstream reflect.Type) []string {
	var errs []string
	var walk func(path string, l, u reflect.Type)
	walk = func(path string, l, u reflect.Type) {
		l, u = deref(l), deref(u)
		switch {
		case opaque(l):
			// Shared apimachinery types must be the very same type upstream. (An
			// upstream type with its own MarshalJSON but a plain local mirror is
			// walked by its tags; the value check below sees the real encoding.)
			if l != u {
				errs = append(errs, fmt.Sprintf("%s: local type %v, upstream type %v", path, l, u))
			}
		case l.Kind() == reflect.Struct:
			if u.Kind() != reflect.Struct {
				errs = append(errs, fmt.Sprintf("%s: local is a struct, upstream is %v (%v)", path, u.Kind(), u))
				return
			}
			byName, inlined := map[string]reflect.Type{}, map[reflect.Type]bool{}
			upstreamFields(u, byName, inlined)
			for i := range l.NumField() {
				f := l.Field(i)
				name, inline, skip := jsonField(f)
				switch {
				case skip:
				case inline && opaque(deref(f.Type)):
					if !inlined[deref(f.Type)] {
						errs = append(errs, fmt.Sprintf("%s: upstream does not inline %v", path, f.Type))
					}
				case inline:
					walk(path, f.Type, u)
				default:
					ut, ok := byName[name]
					if !ok {
						errs = append(errs, fmt.Sprintf("%s.%s: no field with this JSON name upstream (%v); upstream has %s",
							path, name, u, strings.Join(sortedKeys(byName), ", ")))
						continue
					}
					walk(path+"."+name, f.Type, ut)
				}
			}
		case l.Kind() == reflect.Slice:
			if u.Kind() != reflect.Slice {
				errs = append(errs, fmt.Sprintf("%s: local is a list, upstream is %v (%v)", path, u.Kind(), u))
				return
			}
			walk(path+"[]", l.Elem(), u.Elem())
		case l.Kind() == reflect.Map:
			if u.Kind() != reflect.Map || l.Key().Kind() != u.Key().Kind() {
				errs = append(errs, fmt.Sprintf("%s: local is %v, upstream is %v", path, l, u))
				return
			}
			walk(path+"{}", l.Elem(), u.Elem())
		default:
			if l.Kind() != u.Kind() {
				errs = append(errs, fmt.Sprintf("%s: local kind %v, upstream kind %v (%v)", path, l.Kind(), u.Kind(), u))
			}
		}
	}
	walk(local.Name(), local, upstream)
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// leafPaths lists the schema paths of every leaf of a local type ("[]" for list
// elements, "{}" for map values).
func leafPaths(t reflect.Type) []string {
	var out []string
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		t = deref(t)
		switch {
		case opaque(t):
			out = append(out, path)
		case t.Kind() == reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				name, inline, skip := jsonField(f)
				switch {
				case skip:
				case inline && opaque(deref(f.Type)):
					walk(path+".<"+deref(f.Type).Name()+">", f.Type)
				case inline:
					walk(path, f.Type)
				default:
					walk(path+"."+name, f.Type)
				}
			}
		case t.Kind() == reflect.Slice:
			walk(path+"[]", t.Elem())
		case t.Kind() == reflect.Map:
			walk(path+"{}", t.Elem())
		default:
			out = append(out, path)
		}
	}
	walk(t.Name(), t)
	return out
}

// ValueChecker compares decoded local values with the upstream JSON they came from
// and records which leaves were non-zero.
type ValueChecker struct {
	Errs []string
	seen map[string]bool
}

func NewValueChecker() *ValueChecker { return &ValueChecker{seen: map[string]bool{}} }

func (c *ValueChecker) errorf(format string, args ...any) {
	c.Errs = append(c.Errs, fmt.Sprintf(format, args...))
}

// check compares local (a decoded local struct) with upstream (the upstream
// object's JSON, as decoded by encoding/json into any).
func (c *ValueChecker) Check(local any, upstream any) {
	lv := reflect.ValueOf(local)
	c.walk(deref(lv.Type()).Name(), "", lv, upstream, true)
}

// canonical re-encodes v through JSON so numbers and named types compare equal.
func canonical(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// subset reports whether every map key of l is present in u with a subset value;
// lists must have equal length; scalars must be equal.
func subset(l, u any) bool {
	switch lt := l.(type) {
	case map[string]any:
		um, ok := u.(map[string]any)
		if !ok {
			return false
		}
		for k, lv := range lt {
			uv, ok := um[k]
			if !ok || !subset(lv, uv) {
				return false
			}
		}
		return true
	case []any:
		ul, ok := u.([]any)
		if !ok || len(ul) != len(lt) {
			return false
		}
		for i := range lt {
			if !subset(lt[i], ul[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(l, u)
	}
}

func (c *ValueChecker) walk(schema, path string, lv reflect.Value, uj any, present bool) {
	for lv.Kind() == reflect.Pointer {
		if lv.IsNil() {
			if present && uj != nil {
				c.errorf("%s: upstream has %s but the local value is nil", path, short(uj))
			}
			return
		}
		lv = lv.Elem()
	}
	t := lv.Type()
	switch {
	case opaque(t):
		if !present {
			if !lv.IsZero() {
				c.errorf("%s: local value %v has no upstream counterpart", path, lv.Interface())
			}
			return
		}
		lj, err := canonical(lv.Interface())
		if err != nil {
			c.errorf("%s: %v", path, err)
			return
		}
		if !subset(lj, uj) {
			c.errorf("%s: local %s != upstream %s", path, short(lj), short(uj))
			return
		}
		if !lv.IsZero() {
			c.seen[schema] = true
		}
	case t.Kind() == reflect.Struct:
		um, _ := uj.(map[string]any)
		if present && uj != nil && um == nil {
			c.errorf("%s: local is a struct, upstream JSON is %s", path, short(uj))
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, inline, skip := jsonField(f)
			switch {
			case skip:
			case inline && opaque(deref(f.Type)):
				c.walk(schema+".<"+deref(f.Type).Name()+">", path, lv.Field(i), uj, present)
			case inline:
				c.walk(schema, path, lv.Field(i), uj, present)
			default:
				sub, ok := um[name]
				c.walk(schema+"."+name, path+"."+name, lv.Field(i), sub, ok)
			}
		}
	case t.Kind() == reflect.Slice:
		ul, _ := uj.([]any)
		if len(ul) != lv.Len() {
			c.errorf("%s: local has %d items, upstream %d (%s)", path, lv.Len(), len(ul), short(uj))
			return
		}
		for i := range lv.Len() {
			c.walk(schema+"[]", fmt.Sprintf("%s[%d]", path, i), lv.Index(i), ul[i], true)
		}
	case t.Kind() == reflect.Map:
		um, _ := uj.(map[string]any)
		if len(um) != lv.Len() {
			c.errorf("%s: local has %d keys, upstream %d (%s)", path, lv.Len(), len(um), short(uj))
			return
		}
		for _, k := range lv.MapKeys() {
			sub, ok := um[k.String()]
			c.walk(schema+"{}", path+"["+k.String()+"]", lv.MapIndex(k), sub, ok)
		}
	default:
		if !present {
			if !lv.IsZero() {
				c.errorf("%s: local value %v has no upstream counterpart", path, lv.Interface())
			}
			return
		}
		lj, err := canonical(lv.Interface())
		if err != nil {
			c.errorf("%s: %v", path, err)
			return
		}
		if !reflect.DeepEqual(lj, uj) {
			c.errorf("%s: local %s != upstream %s", path, short(lj), short(uj))
			return
		}
		if !lv.IsZero() {
			c.seen[schema] = true
		}
	}
}

// uncovered lists the leaves of the local type that no fixture made non-zero.
func (c *ValueChecker) Uncovered(local reflect.Type) []string {
	var out []string
	for _, p := range leafPaths(local) {
		if !c.seen[p] {
			out = append(out, p)
		}
	}
	return out
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 160 {
		return string(b[:160]) + "..."
	}
	return string(b)
}
