// Package filter holds the tests of one value (a label's, an
// annotation's, a field's) by which handlers choose their objects:
// handlers.Labels{"app": filter.Present}, handlers.Field("spec.x",
// filter.Equals(1)).
package filter

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/pkg/fields"
)

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

// RunsCode reports whether matching the filter calls a function of the
// operator's (Check): the value it gets must then be one that the
// function may keep or modify.
func (f Filter) RunsCode() bool { return f.kind == filterCheck }

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

// Requirement is the filter of the label key as a Kubernetes label
// selector's requirement, so that the API server can filter too: Present
// as Exists, Absent as DoesNotExist, an exact value as In [value]. False
// for a filter that needs code to run (Check), or none.
func (f Filter) Requirement(key string) (metav1.LabelSelectorRequirement, bool) {
	switch f.kind {
	case filterPresent:
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists}, true
	case filterAbsent:
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}, true
	case filterEquals:
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn,
			Values: []string{fmt.Sprint(f.value)}}, true
	}
	return metav1.LabelSelectorRequirement{}, false
}
