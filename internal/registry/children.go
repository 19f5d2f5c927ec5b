package registry

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/fields"
)

// ChildFunc is a child handler, adapted to untyped objects: the owner, and
// the child (its last state if it is deleted).
type ChildFunc func(ctx context.Context, owner, child Object, c *cause.Child) error

// ChildHandler is one registered child handler.
type ChildHandler struct {
	execution.Handler
	// Filters test the child: its labels, annotations, and a field (which,
	// for a changed child, must have changed). When is not offered.
	Filters
	Fn ChildFunc
}

// ChildKind is a kind of children that a kind's objects own (as their
// controller), and the handlers that hear of them.
type ChildKind struct {
	// GVK is the children's kind; empty for typed children, whose kind
	// comes from the scheme at setup.
	GVK schema.GroupVersionKind
	// NewObject returns an empty child of the kind's Go type.
	NewObject func() Object
	// Handlers are the child handlers in registration order.
	Handlers []*ChildHandler
}

// ChildSubject is a child and what became of it, as the child handlers'
// filters see it.
type ChildSubject struct {
	Labels, Annotations map[string]string
	Reason              cause.ChildReason
	// Old and New are the child's bodies before and after (nil: absent).
	Old, New map[string]any
	// FilterPanicked hears of a handler whose filter functions panicked
	// (as Subject's).
	FilterPanicked func(h *execution.Handler, p *contain.Panic)
}

// Matches reports whether the handler cares about what became of the
// child: its labels and annotations match, its field (if any) is present
// or matches Value in the old or new state, and, for a changed child,
// that field changed.
func (h *ChildHandler) Matches(s *ChildSubject) bool {
	subject := Subject{FilterPanicked: s.FilterPanicked}
	return subject.contained(&h.Handler, func() bool {
		if !MatchMeta(h.Labels, s.Labels) || !MatchMeta(h.Annotations, s.Annotations) {
			return false
		}
		if len(h.Field) == 0 {
			return true
		}
		old, new := asAny(s.Old), asAny(s.New)
		if !h.matchFieldValue(old, new) {
			return false
		}
		if s.Reason != cause.ChildChanged {
			return true
		}
		was, wasPresent := fields.Resolve(old, h.Field)
		is, isPresent := fields.Resolve(new, h.Field)
		return wasPresent != isPresent || !fields.Equal(was, is)
	})
}

// asAny keeps an absent body absent (a nil map in an interface is not
// nil).
func asAny(body map[string]any) any {
	if body == nil {
		return nil
	}
	return body
}

// validateChildren checks the kind's children: one registration per child
// kind, and handler ids unique within it.
func validateChildren(k *Kind) []error {
	var errs []error
	for _, ck := range k.Children {
		seen := map[string]bool{}
		for _, h := range ck.Handlers {
			switch {
			case h.ID == "":
				errs = append(errs, fmt.Errorf("%s: a child handler has no id", k.GVK.Kind))
			case seen[h.ID]:
				errs = append(errs, fmt.Errorf("%s: child handler id %q is registered twice for the same children", k.GVK.Kind, h.ID))
			}
			seen[h.ID] = true
			if h.Value.IsSet() && len(h.Field) == 0 {
				errs = append(errs, fmt.Errorf("%s: child handler %q: a value filter needs a field", k.GVK.Kind, h.ID))
			}
			if h.Retries < 0 || h.Timeout < 0 || (h.Backoff != nil && *h.Backoff < 0) {
				errs = append(errs, fmt.Errorf("%s: child handler %q: retries, timeout and backoff cannot be negative", k.GVK.Kind, h.ID))
			}
		}
	}
	return errs
}
