package hierarchies

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestOwnerKindValue(t *testing.T) {
	long := schema.GroupKind{Group: strings.Repeat("g", 40) + ".example.com", Kind: "AVeryLongKindNameIndeed"}
	other := schema.GroupKind{Group: strings.Repeat("g", 40) + ".example.org", Kind: "AVeryLongKindNameIndeed"}
	dotted := schema.GroupKind{Group: strings.Repeat("a", 38) + "." + strings.Repeat("b", 30), Kind: "K"}
	tests := []struct {
		gk   schema.GroupKind
		want string
	}{
		{schema.GroupKind{Group: "kopf.dev", Kind: "KopfExample"}, "kopfexample.kopf.dev"},
		{schema.GroupKind{Kind: "Pod"}, "pod"},
	}
	for _, tt := range tests {
		got := OwnerKindValue(tt.gk)
		if got != tt.want {
			t.Errorf("OwnerKindValue(%v) = %q, want %q", tt.gk, got, tt.want)
		}
	}
	for _, gk := range []schema.GroupKind{long, other, dotted} {
		got := OwnerKindValue(gk)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("OwnerKindValue(%v) = %q, not a label value: %v", gk, got, errs)
		}
		if !strings.HasPrefix(got, "averylongkindnameindeed.") && gk != dotted {
			t.Errorf("OwnerKindValue(%v) = %q, want it to start with the kind", gk, got)
		}
	}
	if OwnerKindValue(long) == OwnerKindValue(other) {
		t.Errorf("two long kinds share the value %q", OwnerKindValue(long))
	}
}
