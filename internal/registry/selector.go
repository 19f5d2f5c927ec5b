package registry

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelSelector renders the label filters that need no code to run as a
// Kubernetes label selector, so that the API server can filter too (e.g. a
// webhook's objectSelector): Present as Exists, Absent as DoesNotExist, an
// exact value as In [value]. Callable filters are left to the handler's own
// matching. Nil when nothing is left.
func LabelSelector(labels map[string]Filter) *metav1.LabelSelector {
	var exprs []metav1.LabelSelectorRequirement
	for key, f := range labels {
		switch f.kind {
		case filterPresent:
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists})
		case filterAbsent:
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist})
		case filterEquals:
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn,
				Values: []string{fmt.Sprint(f.value)}})
		}
	}
	if len(exprs) == 0 {
		return nil
	}
	sort.Slice(exprs, func(i, j int) bool { return exprs[i].Key < exprs[j].Key })
	return &metav1.LabelSelector{MatchExpressions: exprs}
}
