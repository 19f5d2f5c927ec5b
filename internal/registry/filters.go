package registry

import (
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/filter"
)

// Object is a Kubernetes object, typed or unstructured.
type Object = causes.Object

// Filter tests one value: of a label, an annotation or a field (the
// public filter.Filter).
type Filter = filter.Filter

// The filters, as the public package makes them.
var (
	Present = filter.Present
	Absent  = filter.Absent
	Equals  = filter.Equals
	Check   = filter.Check
)

// Filters are the conditions a handler puts on objects, joined with AND.
type Filters struct {
	Labels      map[string]Filter
	Annotations map[string]Filter
	// Field, when set, must be present (or match Value) in the old or the
	// new essence; for change handlers it also narrows old/new/diff.
	Field fields.Path
	Value Filter
	// When is evaluated last, with the object and the cause.
	When func(obj Object, c *causes.Cause) bool
}

// MatchMeta checks labels or annotations of an object: every key must
// match its filter (admission checks requests' objects with it too).
func MatchMeta(pattern map[string]Filter, content map[string]string) bool {
	for key, f := range pattern {
		value, present := content[key]
		var v any
		if present {
			v = value
		}
		if !f.Match(v, present) {
			return false
		}
	}
	return true
}

// matchFieldValue checks the field in the new and the old values (either
// may match), as Kopf does for change causes.
func (f *Filters) matchFieldValue(old, new any) bool {
	if len(f.Field) == 0 {
		return true
	}
	for _, essence := range []any{new, old} {
		v, present := fields.Resolve(essence, f.Field)
		if !f.Value.IsSet() {
			if present {
				return true
			}
			continue
		}
		if f.Value.Match(v, present) {
			return true
		}
	}
	return false
}

// runCode reports whether matching the filters calls a function of the
// operator's: When, or a Check of a label, an annotation or the field.
func (f *Filters) runCode() bool {
	if f.When != nil || f.Value.RunsCode() {
		return true
	}
	for _, m := range []map[string]Filter{f.Labels, f.Annotations} {
		for _, v := range m {
			if v.RunsCode() {
				return true
			}
		}
	}
	return false
}
