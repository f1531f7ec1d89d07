package lint

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// converter turns a YAML node tree into the values encoding/json would decode
// the same object into (map[string]any, []any, string, int64, float64, bool,
// nil), resolving aliases and merge keys within bounds. Its errors name lines
// and node kinds, never content.
type converter struct {
	offset int
	nodes  int
	// aliased counts the nodes reached through an alias; budget bounds them
	// by the document's size, so a small document cannot expand to millions of
	// nodes (the way YAML decoders bound alias expansion).
	aliased, budget, inAlias int
}

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	c.nodes++
	if c.nodes > maxNodes {
		return nil, fmt.Errorf("more than %d nodes (aliases expanded)", maxNodes)
	}
	if c.inAlias > 0 {
		c.aliased++
		if c.aliased > c.budget {
			return nil, fmt.Errorf("aliases expand to more than %d nodes for a document this size", c.budget)
		}
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d levels", c.offset+n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unresolved alias", c.offset+n.Line)
		}
		c.inAlias++
		v, err := c.value(n.Alias, depth+1)
		c.inAlias--
		return v, err
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		// Merge keys first: explicit keys win over merged ones wherever they are.
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge" {
				continue
			}
			v := deref(n.Content[i+1])
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, s := range srcs {
				mv, err := c.value(s, depth+1)
				if err != nil {
					return nil, err
				}
				m, ok := mv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("line %d: a merge key (<<) must name a mapping", c.offset+k.Line)
				}
				for kk, vv := range m {
					if _, set := out[kk]; !set {
						out[kk] = vv
					}
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key is not a scalar", c.offset+k.Line)
			}
			if k.ShortTag() == "!!merge" {
				continue
			}
			v, err := c.value(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		return scalar(n), nil
	}
	return nil, fmt.Errorf("line %d: unknown node", c.offset+n.Line)
}

// scalar resolves a scalar as a YAML 1.2 core-schema parser does; anything it
// cannot represent in JSON stays a string (decode errors are dropped: their
// text could quote the value).
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// mapGet returns the value node of key in mapping n (nil when absent).
func mapGet(n *yaml.Node, key string) *yaml.Node {
	_, v := mapEntry(n, key)
	return v
}

// mapEntry returns the key and value nodes of key in mapping n.
func mapEntry(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := len(n.Content) - 2; i >= 0; i -= 2 { // the last of duplicate keys wins
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return k, deref(n.Content[i+1])
		}
	}
	return nil, nil
}

// nodeAt follows a path of mapping keys and sequence indexes ("3") and returns
// the last step's key node (the element itself for an index) and value node.
func nodeAt(n *yaml.Node, segs ...string) (key, val *yaml.Node) {
	val = n
	for _, s := range segs {
		val = deref(val)
		if val == nil {
			return nil, nil
		}
		if val.Kind == yaml.SequenceNode {
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(val.Content) {
				return nil, nil
			}
			val = deref(val.Content[i])
			key = val
			continue
		}
		key, val = mapEntry(val, s)
		if key == nil {
			return nil, nil
		}
	}
	return key, deref(val)
}

// lineOf is the absolute line of the deepest node of segs that exists under the
// document (the document's line when none does).
func (d *Doc) lineOf(segs ...string) int {
	for i := len(segs); i > 0; i-- {
		if k, _ := nodeAt(d.node, segs[:i]...); k != nil {
			return d.offset + k.Line
		}
	}
	return d.Line
}

// scalarText is a scalar node's text ("" for other nodes).
func scalarText(n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// walkMappings calls fn for every mapping node under n (n included), depth first,
// in document order, until fn returns false.
func walkMappings(n *yaml.Node, fn func(*yaml.Node) bool) bool {
	return walkBounded(n, fn, 0)
}

func walkBounded(n *yaml.Node, fn func(*yaml.Node) bool, depth int) bool {
	if n == nil || depth > maxDepth || n.Kind == yaml.AliasNode {
		return true // aliases were walked where they are defined
	}
	if n.Kind == yaml.MappingNode && !fn(n) {
		return false
	}
	for _, c := range n.Content {
		if !walkBounded(c, fn, depth+1) {
			return false
		}
	}
	return true
}

// secretRefLine finds, in a workload's document, the line where it reads Secret
// name: the secretKeyRef, volume item or projected item naming key, or, for key
// "", the first reference to the Secret. 0 when none is found.
func (d *Doc) secretRefLine(name, key string) int {
	line := 0
	walkMappings(d.node, func(m *yaml.Node) bool {
		if r := mapGet(m, "secretKeyRef"); r != nil && scalarText(mapGet(r, "name")) == name {
			kk, kv := mapEntry(r, "key")
			if key == "" || scalarText(kv) == key {
				line = d.offset + r.Line
				if kk != nil && key != "" {
					line = d.offset + kk.Line
				}
				return false
			}
		}
		if r := mapGet(m, "secretRef"); r != nil && key == "" && scalarText(mapGet(r, "name")) == name {
			line = d.offset + r.Line
			return false
		}
		if r := mapGet(m, "secret"); r != nil {
			ref := mapGet(r, "secretName")
			if ref == nil {
				ref = mapGet(r, "name")
			}
			if scalarText(ref) != name {
				return true
			}
			if key == "" {
				line = d.offset + ref.Line
				return false
			}
			if items := mapGet(r, "items"); items != nil && items.Kind == yaml.SequenceNode {
				for _, it := range items.Content {
					if kk, kv := mapEntry(it, "key"); kk != nil && scalarText(kv) == key {
						line = d.offset + kk.Line
						return false
					}
				}
			}
		}
		return true
	})
	return line
}

// scalarLine finds the line of the first scalar equal to s under the value at
// segs (0 when none).
func (d *Doc) scalarLine(s string, segs ...string) int {
	_, n := nodeAt(d.node, segs...)
	return findScalar(n, s, 0, d.offset)
}

func findScalar(n *yaml.Node, s string, depth, offset int) int {
	if n == nil || depth > maxDepth || n.Kind == yaml.AliasNode {
		return 0
	}
	if n.Kind == yaml.ScalarNode && n.Value == s {
		return offset + n.Line
	}
	for _, c := range n.Content {
		if l := findScalar(c, s, depth+1, offset); l > 0 {
			return l
		}
	}
	return 0
}

// keyList renders key names for a message.
func keyList(keys []string) string {
	if len(keys) == 0 {
		return "no keys"
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}
