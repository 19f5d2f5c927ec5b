package registry

import (
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/pkg/fields"
)

// Object is a Kubernetes object, typed or unstructured.
type Object = causes.Object

type filterKind int

const (
	filterEquals filterKind = iota + 1
	filterPresent
	filterAbsent
	filterCheck
)

// Filter tests one value: of a label, an annotation or a field. The zero
// Filter is "not set".
type Filter struct {
	kind  filterKind
	value any
	check func(value any) bool
}

// Present matches when the label, annotation or field is there, whatever its value.
var Present = Filter{kind: filterPresent}

// Absent matches when the label, annotation or field is not there.
var Absent = Filter{kind: filterAbsent}

// Equals matches an exact value (compared by JSON meaning for fields).
func Equals(value any) Filter { return Filter{kind: filterEquals, value: value} }

// Check matches when fn returns true; fn gets nil for an absent value.
func Check(fn func(value any) bool) Filter { return Filter{kind: filterCheck, check: fn} }

// IsSet reports whether the filter was given at all.
func (f Filter) IsSet() bool { return f.kind != 0 }

// Match tests a value, given whether it is present at all.
func (f Filter) Match(value any, present bool) bool {
	switch f.kind {
	case 0:
		return true
	case filterPresent:
		return present
	case filterAbsent:
		return !present
	case filterCheck:
		if !present {
			value = nil
		}
		return f.check(value)
	}
	return present && fields.Equal(f.value, value)
}

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
