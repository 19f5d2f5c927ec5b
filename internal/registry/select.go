package registry

import (
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/fields"
)

// Subject is the object and cause that handlers are matched against.
type Subject struct {
	Obj Object
	// Labels and Annotations are the object's; if nil, they are read from
	// Obj when a filter first needs them (each read copies them, and most
	// handlers filter on neither).
	Labels      map[string]string
	Annotations map[string]string
	metaRead    bool
	// Cause carries the reason and the old/new essences and diff.
	Cause *causes.Cause
	// Initial: the cause is initial (resume handlers join it).
	Initial bool
	// Deleting: the object is marked for deletion.
	Deleting bool
	// FilterPanicked hears of a handler whose filters panicked (When, or a
	// function given to Labels, Annotations, Value, ValueBefore or
	// ValueAfter): the handler does not match, and the engine logs and
	// counts the panic. nil: the panic is a mismatch that nobody hears of.
	FilterPanicked func(h *execution.Handler, p *contain.Panic)
}

// matchMeta applies label and annotation filters, reading the object's
// labels and annotations only if there are any.
func (s *Subject) matchMeta(labels, annotations map[string]Filter) bool {
	if len(labels) == 0 && len(annotations) == 0 {
		return true
	}
	if !s.metaRead && s.Obj != nil {
		s.metaRead = true
		if s.Labels == nil {
			s.Labels = s.Obj.GetLabels()
		}
		if s.Annotations == nil {
			s.Annotations = s.Obj.GetAnnotations()
		}
	}
	return MatchMeta(labels, s.Labels) && MatchMeta(annotations, s.Annotations)
}

// contained runs the filters of the handler: a panic in one of them is a
// mismatch, told to FilterPanicked.
func (s *Subject) contained(h *execution.Handler, match func() bool) bool {
	matched, p := contain.Value(match)
	if p != nil {
		if s.FilterPanicked != nil {
			s.FilterPanicked(h, p)
		}
		return false
	}
	return matched
}

// prematch applies the filters that do not depend on the cause's changes:
// labels, annotations, the field's presence or value, and when.
func (h *ChangeHandler) prematch(s *Subject) bool {
	return s.contained(&h.Handler, func() bool {
		return s.matchMeta(h.Labels, h.Annotations) &&
			h.matchFieldValue(s.Cause.Old, s.Cause.New) &&
			h.matchWhen(s)
	})
}

// match adds the field's change, and the old/new filters, to prematch.
func (h *ChangeHandler) match(s *Subject) bool {
	return s.contained(&h.Handler, func() bool {
		return s.matchMeta(h.Labels, h.Annotations) &&
			h.matchFieldValue(s.Cause.Old, s.Cause.New) &&
			h.matchFieldChange(s) &&
			h.matchWhen(s)
	})
}

func (h *ChangeHandler) matchFieldChange(s *Subject) bool {
	if len(h.Field) == 0 {
		return true
	}
	old, oldPresent := fields.Resolve(s.Cause.Old, h.Field)
	new, newPresent := fields.Resolve(s.Cause.New, h.Field)
	if h.FieldNeedsChange && oldPresent == newPresent && fields.Equal(old, new) {
		return false
	}
	return h.Old.Match(old, oldPresent) && h.New.Match(new, newPresent)
}

func (h *ChangeHandler) matchWhen(s *Subject) bool {
	if h.When == nil {
		return true
	}
	// As in Kopf, filters see the whole cause; only the handler's own call
	// gets the field's values.
	c := *s.Cause
	c.HandlerID, c.Param = h.ID, h.Param
	return h.When(s.Obj, &c)
}

// narrow makes the cause's old/new/diff those of the handler's field.
func (h *ChangeHandler) narrow(c *causes.Cause) {
	if len(h.Field) == 0 {
		return
	}
	c.Old, _ = fields.Resolve(c.Old, h.Field)
	c.New, _ = fields.Resolve(c.New, h.Field)
	c.Diff = c.Diff.Reduce(h.Field)
}

// Narrow returns the cause as the handler sees it: for a handler of a
// field, old/new/diff are those of the field.
func (h *ChangeHandler) Narrow(c causes.Cause) causes.Cause {
	c.HandlerID, c.Param = h.ID, h.Param
	h.narrow(&c)
	return c
}

// Select returns the change handlers the cause selects, deduplicated by
// id (the first registered wins), in registration order.
func (k *Kind) Select(s *Subject) []*ChangeHandler {
	var out []*ChangeHandler
	seen := map[string]bool{}
	for _, h := range k.Changing {
		if seen[h.ID] {
			continue
		}
		if h.Reason != "" && h.Reason != s.Cause.Reason {
			continue
		}
		if h.Initial && !s.Initial {
			continue // resume handlers join only initial causes
		}
		if h.Initial && s.Deleting && !h.Deleted {
			continue // nor deletions, unless they ask for it
		}
		if h.match(s) {
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out
}

// Prematch reports whether any change handler could care about the object;
// when none does, the object is left alone entirely (no state, no logs).
func (k *Kind) Prematch(s *Subject) bool {
	for _, h := range k.Changing {
		if h.prematch(s) {
			return true
		}
	}
	return false
}

// RequiresFinalizer reports whether a mandatory delete handler prematches.
func (k *Kind) RequiresFinalizer(s *Subject) bool {
	for _, h := range k.Changing {
		if h.RequiresFinalizer && h.prematch(s) {
			return true
		}
	}
	return false
}

// FiltersRunCode reports whether the filters of some change handler,
// daemon or timer of the kind call a function of the operator's, which
// then gets the object, its body, or a value within it.
func (k *Kind) FiltersRunCode() bool {
	for _, h := range k.Changing {
		if h.runCode() || h.Old.RunsCode() || h.New.RunsCode() {
			return true
		}
	}
	for _, h := range k.Spawning {
		if h.runCode() {
			return true
		}
	}
	return false
}
