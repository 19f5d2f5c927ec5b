// Package diff computes field-level differences between two essences, the
// way Kopf does: maps are compared key by key, lists and scalars as whole
// values.
package diff

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/kopf-go/kopf/pkg/fields"
)

// Op is the kind of a difference at one field.
type Op string

// The operations, with Kopf's names.
const (
	Add    Op = "add"
	Change Op = "change"
	Remove Op = "remove"
)

// Item is one difference: the operation, the field it happened at (empty for
// the root), and the old and new values (nil for an addition or removal).
type Item struct {
	Op    Op
	Field fields.Path
	Old   any
	New   any
}

// Diff is an ordered list of differences. Nil or empty means "no change".
type Diff []Item

// Compute returns the differences from a to b. A nil value means "absent".
// Keys are visited in a stable order: additions, then removals, then common
// keys, each group sorted, so that logs and tests are reproducible.
func Compute(a, b any) Diff {
	var out Diff
	compute(a, b, nil, &out)
	return out
}

func compute(a, b any, path fields.Path, out *Diff) {
	if fields.Equal(a, b) {
		return
	}
	if a == nil {
		*out = append(*out, Item{Op: Add, Field: clonePath(path), New: b})
		return
	}
	if b == nil {
		*out = append(*out, Item{Op: Remove, Field: clonePath(path), Old: a})
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		*out = append(*out, Item{Op: Change, Field: clonePath(path), Old: a, New: b})
		return
	}
	for _, k := range sortedKeys(bm) {
		if _, ok := am[k]; !ok {
			compute(nil, bm[k], append(path, k), out)
		}
	}
	for _, k := range sortedKeys(am) {
		if _, ok := bm[k]; !ok {
			compute(am[k], nil, append(path, k), out)
		}
	}
	for _, k := range sortedKeys(am) {
		if _, ok := bm[k]; ok {
			compute(am[k], bm[k], append(path, k), out)
		}
	}
}

// Reduce narrows the diff to one field, with paths relative to that field.
// Items about the field's children are re-rooted; items about its parents
// (e.g. the whole spec added at once) are expanded into the field's own
// difference.
func (d Diff) Reduce(path fields.Path) Diff {
	if len(path) == 0 {
		return d
	}
	var out Diff
	for _, item := range d {
		switch {
		case item.Field.HasPrefix(path):
			out = append(out, Item{Op: item.Op, Field: clonePath(item.Field[len(path):]), Old: item.Old, New: item.New})
		case path.HasPrefix(item.Field):
			tail := path[len(item.Field):]
			oldTail, _ := fields.Resolve(item.Old, tail)
			newTail, _ := fields.Resolve(item.New, tail)
			out = append(out, Compute(oldTail, newTail)...)
		}
	}
	return out
}

// String renders the diff as Kopf logs it: a tuple of 4-tuples, e.g.
// (('change', ('spec', 'field'), 'value', 'changed'),).
func (d Diff) String() string {
	var b strings.Builder
	b.WriteString("(")
	for i, item := range d {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %s, %s, %s)", quote(string(item.Op)), pathRepr(item.Field), valueRepr(item.Old), valueRepr(item.New))
	}
	if len(d) == 1 {
		b.WriteString(",")
	}
	b.WriteString(")")
	return b.String()
}

func pathRepr(p fields.Path) string {
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = quote(k)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// valueRepr renders a value as Python's repr does for the same JSON value:
// None/True/False, quoted strings, [lists] and {maps} (keys sorted, as Go
// maps have no order), and numbers as JSON writes them.
func valueRepr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case string:
		return quote(v)
	case bool:
		if v {
			return "True"
		}
		return "False"
	case []any:
		parts := make([]string, len(v))
		for i, item := range v {
			parts[i] = valueRepr(item)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := sortedKeys(v)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = quote(k) + ": " + valueRepr(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// quote renders a string as Python's repr does: single quotes unless the
// string has single quotes and no double ones, with backslash escapes for
// the quote, the backslash and unprintable characters.
func quote(s string) string {
	q := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteRune(q)
	for _, r := range s {
		switch {
		case r == q || r == '\\':
			b.WriteRune('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteRune(q)
	return b.String()
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func clonePath(p fields.Path) fields.Path {
	if len(p) == 0 {
		return fields.Path{}
	}
	return slices.Clone(p)
}
