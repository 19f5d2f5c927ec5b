package registry

import (
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
		if r, ok := f.Requirement(key); ok {
			exprs = append(exprs, r)
		}
	}
	if len(exprs) == 0 {
		return nil
	}
	sort.Slice(exprs, func(i, j int) bool { return exprs[i].Key < exprs[j].Key })
	return &metav1.LabelSelector{MatchExpressions: exprs}
}
