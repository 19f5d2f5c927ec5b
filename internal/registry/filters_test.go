package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/pkg/fields"
)

type m = map[string]any

func TestFilterMatch(t *testing.T) {
	isV := Check(func(v any) bool { return v == "v" })
	isNil := Check(func(v any) bool { return v == nil })
	tests := []struct {
		name    string
		f       Filter
		value   any
		present bool
		want    bool
	}{
		{"unset matches a value", Filter{}, "x", true, true},
		{"unset matches absence", Filter{}, nil, false, true},
		{"present, present", Present, "x", true, true},
		{"present, present as null", Present, nil, true, true},
		{"present, absent", Present, nil, false, false},
		{"absent, absent", Absent, nil, false, true},
		{"absent, present", Absent, "x", true, false},
		{"absent, present as null", Absent, nil, true, false},
		{"equals, same", Equals("v"), "v", true, true},
		{"equals, other", Equals("v"), "w", true, false},
		{"equals, absent", Equals("v"), nil, false, false},
		{"equals nil, absent", Equals(nil), nil, false, false},
		{"equals nil, present as null", Equals(nil), nil, true, true},
		{"equals by JSON meaning", Equals(1), 1.0, true, true},
		{"equals int64 and float64", Equals(int64(3)), 3.0, true, true},
		{"equals a map", Equals(m{"a": 1}), m{"a": 1.0}, true, true},
		{"check, true", isV, "v", true, true},
		{"check, false", isV, "w", true, false},
		{"check gets nil for absence", isNil, "ignored", false, true},
		{"check, present as null", isNil, nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(tt.value, tt.present); got != tt.want {
				t.Errorf("Match(%#v, %v) = %v, want %v", tt.value, tt.present, got, tt.want)
			}
		})
	}
}

func TestFilterIsSet(t *testing.T) {
	for name, tt := range map[string]struct {
		f    Filter
		want bool
	}{
		"zero":    {Filter{}, false},
		"present": {Present, true},
		"absent":  {Absent, true},
		"equals":  {Equals(nil), true},
		"check":   {Check(func(any) bool { return false }), true},
	} {
		if got := tt.f.IsSet(); got != tt.want {
			t.Errorf("%s: IsSet() = %v, want %v", name, got, tt.want)
		}
	}
}

func TestMetadataFilters(t *testing.T) {
	content := map[string]string{"somelabel": "somevalue", "empty": ""}
	tests := []struct {
		name    string
		pattern map[string]Filter
		want    bool
	}{
		{"no pattern", nil, true},
		{"equal value", map[string]Filter{"somelabel": Equals("somevalue")}, true},
		{"other value", map[string]Filter{"somelabel": Equals("other")}, false},
		{"value of an absent key", map[string]Filter{"missing": Equals("x")}, false},
		{"empty value", map[string]Filter{"empty": Equals("")}, true},
		{"present", map[string]Filter{"somelabel": Present}, true},
		{"present but empty", map[string]Filter{"empty": Present}, true},
		{"present, missing", map[string]Filter{"missing": Present}, false},
		{"absent", map[string]Filter{"missing": Absent}, true},
		{"absent, there", map[string]Filter{"somelabel": Absent}, false},
		{"callable", map[string]Filter{"somelabel": Check(func(v any) bool { return v == "somevalue" })}, true},
		{"callable gets nil when absent", map[string]Filter{"missing": Check(func(v any) bool { return v == nil })}, true},
		{"all must match", map[string]Filter{"somelabel": Present, "missing": Present}, false},
		{"all match", map[string]Filter{"somelabel": Equals("somevalue"), "missing": Absent}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchMeta(tt.pattern, content); got != tt.want {
				t.Errorf("MatchMeta() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFieldValueFilters(t *testing.T) {
	field := fields.Path{"spec", "field"}
	withField := func(v any) m { return m{"spec": m{"field": v}} }
	tests := []struct {
		name     string
		filters  Filters
		old, new any
		want     bool
	}{
		{"no field", Filters{}, nil, nil, true},
		{"field in new", Filters{Field: field}, nil, withField("x"), true},
		{"field in old only", Filters{Field: field}, withField("x"), m{}, true},
		{"field nowhere", Filters{Field: field}, m{"spec": m{}}, m{"spec": m{"other": 1}}, false},
		{"field null counts as present", Filters{Field: field}, nil, withField(nil), true},
		{"value in new", Filters{Field: field, Value: Equals("value")}, withField("old"), withField("value"), true},
		{"value in old", Filters{Field: field, Value: Equals("value")}, withField("value"), withField("new"), true},
		{"value nowhere", Filters{Field: field, Value: Equals("value")}, withField("a"), withField("b"), false},
		{"value by JSON meaning", Filters{Field: field, Value: Equals(1)}, nil, withField(int64(1)), true},
		{"present", Filters{Field: field, Value: Present}, nil, withField("x"), true},
		{"absent in old", Filters{Field: field, Value: Absent}, nil, withField("x"), true},
		{"absent in neither", Filters{Field: field, Value: Absent}, withField("x"), withField("y"), false},
		{"callable on new", Filters{Field: field, Value: Check(func(v any) bool { return v == "y" })}, withField("x"), withField("y"), true},
		{"callable on neither", Filters{Field: field, Value: Check(func(v any) bool { return v == "z" })}, withField("x"), withField("y"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filters.matchFieldValue(tt.old, tt.new); got != tt.want {
				t.Errorf("matchFieldValue() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFieldChangeFilters(t *testing.T) {
	field := fields.Path{"spec", "field"}
	withField := func(v any) m { return m{"spec": m{"field": v}} }
	tests := []struct {
		name     string
		h        ChangeHandler
		old, new any
		want     bool
	}{
		{"no field", ChangeHandler{FieldNeedsChange: true}, nil, nil, true},
		{"changed", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, withField("a"), withField("b"), true},
		{"unchanged", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, withField("a"), withField("a"), false},
		{"unchanged by JSON meaning", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, withField(1.0), withField(int64(1)), false},
		{"unchanged but no change needed", ChangeHandler{Filters: Filters{Field: field}}, withField("a"), withField("a"), true},
		{"added", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, nil, withField("a"), true},
		{"added as null", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, m{}, withField(nil), true},
		{"removed", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, withField("a"), m{}, true},
		{"absent in both", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true}, m{}, m{}, false},
		{"old and new match", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, Old: Equals("value"), New: Equals("changed")},
			withField("value"), withField("changed"), true},
		{"old does not match", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, Old: Equals("value"), New: Equals("changed")},
			withField("changed"), withField("other"), false},
		{"new does not match", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, Old: Equals("value"), New: Equals("changed")},
			withField("value"), withField("other"), false},
		{"absent to present on addition", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, Old: Absent, New: Present},
			m{}, withField("x"), true},
		{"absent to present on a change", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, Old: Absent, New: Present},
			withField("y"), withField("x"), false},
		{"absent to present on removal", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, Old: Absent, New: Present},
			withField("y"), m{}, false},
		{"new callable", ChangeHandler{Filters: Filters{Field: field}, FieldNeedsChange: true, New: Check(func(v any) bool { return v == nil })},
			withField("y"), m{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Subject{Obj: &unstructured.Unstructured{}, Cause: &causes.Cause{Reason: causes.Update, Old: tt.old, New: tt.new}}
			if got := tt.h.matchFieldChange(s); got != tt.want {
				t.Errorf("matchFieldChange() = %v, want %v", got, tt.want)
			}
		})
	}
}

// A kind's filters run code when a change handler's or a daemon's has a
// When or a Check of a label, an annotation, the field's value or its old
// or new value; Equals, Present and Absent run none.
func TestFiltersRunCode(t *testing.T) {
	check := Check(func(any) bool { return true })
	when := func(Object, *causes.Cause) bool { return true }
	tests := []struct {
		name     string
		changing *ChangeHandler
		spawning *SpawnHandler
		want     bool
	}{
		{name: "no filters", changing: &ChangeHandler{}, spawning: &SpawnHandler{}},
		{name: "filters that run no code", changing: &ChangeHandler{Filters: Filters{Labels: map[string]Filter{"a": Present},
			Annotations: map[string]Filter{"b": Absent}, Field: fields.Path{"spec"}, Value: Equals(1)}, Old: Present}},
		{name: "a change handler's when", changing: &ChangeHandler{Filters: Filters{When: when}}, want: true},
		{name: "a label's check", changing: &ChangeHandler{Filters: Filters{Labels: map[string]Filter{"a": check}}}, want: true},
		{name: "an annotation's check", spawning: &SpawnHandler{Filters: Filters{Annotations: map[string]Filter{"a": check}}}, want: true},
		{name: "a field value's check", spawning: &SpawnHandler{Filters: Filters{Field: fields.Path{"spec"}, Value: check}}, want: true},
		{name: "a new value's check", changing: &ChangeHandler{Filters: Filters{Field: fields.Path{"spec"}}, New: check}, want: true},
		{name: "a daemon's when", spawning: &SpawnHandler{Filters: Filters{When: when}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &Kind{}
			if tt.changing != nil {
				k.Changing = append(k.Changing, tt.changing)
			}
			if tt.spawning != nil {
				k.Spawning = append(k.Spawning, tt.spawning)
			}
			if got := k.FiltersRunCode(); got != tt.want {
				t.Errorf("FiltersRunCode() = %v, want %v", got, tt.want)
			}
		})
	}
}
