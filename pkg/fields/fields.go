// Package fields reads and writes fields of JSON-like bodies: the
// map[string]any form of Kubernetes objects that unstructured.Unstructured
// and encoding/json produce.
package fields

import (
	"encoding/json"
	"strings"
)

// Path is a field path in a JSON-like body, e.g. {"spec", "field"}.
// A path is a list rather than a dotted string because map keys (annotation
// names in particular) may contain dots themselves.
type Path []string

// Parse splits a dotted path such as "spec.field" into its parts.
// An empty string is the empty path (the root).
func Parse(dotted string) Path {
	if dotted == "" {
		return nil
	}
	return Path(strings.Split(dotted, "."))
}

// ParseAll parses several dotted paths, e.g. for
// diffbase.Annotations.Ignored.
func ParseAll(dotted ...string) []Path {
	out := make([]Path, len(dotted))
	for i, d := range dotted {
		out[i] = Parse(d)
	}
	return out
}

// String renders the path dotted, as Kopf shows field ids ("spec.field").
func (p Path) String() string { return strings.Join(p, ".") }

// HasPrefix reports whether p starts with prefix.
func (p Path) HasPrefix(prefix Path) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

// Resolve returns the value at the path and whether it is there at all.
// A present key with a JSON null value counts as present.
func Resolve(body any, p Path) (any, bool) {
	cur := body
	for _, key := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[key]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Set stores the value at the path, creating intermediate maps as needed and
// replacing non-map values that stand in the way.
func Set(body map[string]any, p Path, value any) {
	if len(p) == 0 {
		return
	}
	cur := body
	for _, key := range p[:len(p)-1] {
		next, ok := cur[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[key] = next
		}
		cur = next
	}
	cur[p[len(p)-1]] = value
}

// Remove deletes the value at the path if it is there, and reports whether
// it was. Parents are left in place, even if they become empty.
func Remove(body map[string]any, p Path) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := Resolve(body, p[:len(p)-1])
	if !ok {
		return false
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	if _, ok := m[p[len(p)-1]]; !ok {
		return false
	}
	delete(m, p[len(p)-1])
	return true
}

// DeepCopy copies a JSON-like value: maps and slices are copied recursively,
// scalars are shared (they are immutable).
func DeepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			out[k] = DeepCopy(val)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, val := range v {
			out[i] = DeepCopy(val)
		}
		return out
	default:
		return v
	}
}

// Equal compares two JSON-like values by their JSON meaning: numbers compare
// by value whatever their Go type (int64 from the API machinery, float64
// from encoding/json), maps by their keys and values, lists item by item.
func Equal(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !Equal(a[i], bl[i]) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	}
	if an, ok := number(a); ok {
		bn, ok := number(b)
		return ok && an == bn
	}
	switch b.(type) {
	case map[string]any, []any, nil:
		return false
	}
	return a == b
}

// number converts the numeric types that JSON decoders produce to float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Normalize turns any JSON-encodable Go value (structs, typed maps and
// slices, numbers of any width) into the plain JSON-like form: maps of
// string to any, slices of any, float64/int64, string, bool and nil.
// Values that are already in that form are returned as they are.
func Normalize(v any) (any, error) {
	if isPlain(v) {
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func isPlain(v any) bool {
	switch v := v.(type) {
	case nil, string, bool, int64, float64:
		return true
	case map[string]any:
		for _, val := range v {
			if !isPlain(val) {
				return false
			}
		}
		return true
	case []any:
		for _, val := range v {
			if !isPlain(val) {
				return false
			}
		}
		return true
	}
	return false
}

// PruneEmpty removes each of the paths, in the order given, where it holds
// an empty map, so that children go before their parents.
func PruneEmpty(body map[string]any, paths ...Path) {
	for _, p := range paths {
		if v, ok := Resolve(body, p); ok {
			if m, ok := v.(map[string]any); ok && len(m) == 0 {
				Remove(body, p)
			}
		}
	}
}

// stanzas are the containers of a body that an essence keeps, children
// before their parents, for PruneEmptyStanzas.
var stanzas = []Path{{"metadata", "annotations"}, {"metadata", "labels"}, {"metadata"}, {"status"}}

// PruneEmptyStanzas removes metadata.annotations, metadata.labels, metadata
// and status where they are left as empty maps, so that an essence that
// loses its last label, annotation or stored field equals one that never
// had any. The essence is diffbase's idea, but the list lives here:
// progress clears its records from essences too, the two packages are
// peers in the layering (test/arch) and may not import each other, and
// fields is the lowest package that both use.
func PruneEmptyStanzas(body map[string]any) { PruneEmpty(body, stanzas...) }

// RemovePruning deletes the field at the path and then every map on the
// path that it leaves empty, as Kopf's dicts.remove does, so that removing
// a field leaves no empty parents behind.
func RemovePruning(body map[string]any, p Path) {
	switch len(p) {
	case 0:
		return
	case 1:
		delete(body, p[0])
		return
	}
	child, ok := body[p[0]].(map[string]any)
	if !ok {
		return
	}
	RemovePruning(child, p[1:])
	if len(child) == 0 {
		delete(body, p[0])
	}
}
