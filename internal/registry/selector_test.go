package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLabelSelector(t *testing.T) {
	always := Check(func(any) bool { return true })
	tests := []struct {
		name   string
		labels map[string]Filter
		want   *metav1.LabelSelector
	}{
		{"none", nil, nil},
		{"only callables", map[string]Filter{"a": always}, nil},
		{"present", map[string]Filter{"a": Present}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "a", Operator: metav1.LabelSelectorOpExists}}}},
		{"absent", map[string]Filter{"a": Absent}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "a", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
		{"a value", map[string]Filter{"a": Equals("v")}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"v"}}}}},
		{"a number as its text", map[string]Filter{"a": Equals(1)}, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"1"}}}}},
		{"mixed, sorted by key, callables left out",
			map[string]Filter{"c": Equals("v"), "b": always, "a": Absent, "d": Present},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "a", Operator: metav1.LabelSelectorOpDoesNotExist},
				{Key: "c", Operator: metav1.LabelSelectorOpIn, Values: []string{"v"}},
				{Key: "d", Operator: metav1.LabelSelectorOpExists},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, LabelSelector(tt.labels)); diff != "" {
				t.Errorf("LabelSelector() -want +got:\n%s", diff)
			}
		})
	}
}
