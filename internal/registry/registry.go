// Package registry holds what an operator registered: handlers per kind,
// their options and filters, and decides which handlers a cause selects.
package registry

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/scopes"
	"github.com/kopf-go/kopf/pkg/fields"
)

// ChangeFunc is a change handler, adapted to untyped objects.
type ChangeFunc func(ctx context.Context, obj Object, c *causes.Cause) (any, error)

// ChangeHandler is one registered change handler (create, update, delete,
// resume, or field).
type ChangeHandler struct {
	execution.Handler
	Filters
	// Reason selects the cause; empty means any (field handlers).
	Reason causes.Reason
	// Initial marks resume handlers: they join only initial causes.
	Initial bool
	// Deleted lets a resume handler join the deletion of an object found
	// already deleted at startup.
	Deleted bool
	// RequiresFinalizer marks mandatory delete handlers.
	RequiresFinalizer bool
	// Old and New filter the field's old and new values (update and field
	// handlers only).
	Old, New Filter
	// FieldNeedsChange runs the handler only if the field changed (update
	// and field handlers).
	FieldNeedsChange bool
	Fn               ChangeFunc
}

// Kind is one watched resource kind and its handlers.
type Kind struct {
	// GVK identifies the kind; it may be left empty for typed objects and
	// filled from the scheme at setup.
	GVK schema.GroupVersionKind
	// Selector, if set, names the resources by name, category or all of
	// them (Kopf's resource selectors); the engine resolves it through
	// discovery while it runs, into any number of resources, each handled
	// with the kind's handlers. GVK is then empty.
	Selector *scopes.Selector
	// NewObject returns an empty object of the kind's Go type.
	NewObject func() Object
	// Changing are the change handlers in registration order.
	Changing []*ChangeHandler
	// Spawning are the daemons and timers in registration order.
	Spawning []*SpawnHandler
	// Watching are the on-event handlers, Indexing the index handlers.
	Watching []*EventHandler
	Indexing []*IndexHandler
	// Children are the kinds of children the kind's objects own, with
	// their handlers (handlers.Children).
	Children []*ChildKind
	// Conditions: the engine keeps status.conditions of the kind's objects
	// from their handlers' progress (internal/conditions).
	Conditions bool
}

// Registry is everything an operator registered.
type Registry struct {
	Kinds []*Kind
	// Activities are the operator-wide handlers, in registration order.
	Activities []*ActivityHandler
	errs       []error
	// indexIDs counts index handlers by id: indices are operator-wide.
	indexIDs map[string]int
}

// AddIndex registers an index handler for the kind.
func (r *Registry) AddIndex(k *Kind, h *IndexHandler) {
	if r.indexIDs == nil {
		r.indexIDs = map[string]int{}
	}
	r.indexIDs[h.ID]++
	k.Indexing = append(k.Indexing, h)
}

// Fail records a registration problem, reported later by Validate (so that
// registration calls stay free of error returns and panics).
func (r *Registry) Fail(err error) { r.errs = append(r.errs, err) }

// Validate reports every registration problem at once.
func (r *Registry) Validate() error {
	errs := append([]error(nil), r.errs...)
	errs = append(errs, r.validateActivities()...)
	for _, k := range r.Kinds {
		errs = append(errs, validateChanging(k)...)
		errs = append(errs, validateWatching(k)...)
		errs = append(errs, r.validateIndexing(k)...)
		errs = append(errs, validateSpawning(k)...)
		errs = append(errs, validateChildren(k)...)
	}
	return errors.Join(errs...)
}

// validateActivities finds activity handlers registered twice under one id.
func (r *Registry) validateActivities() []error {
	var errs []error
	activities := map[string]bool{}
	for _, h := range r.Activities {
		if activities[h.ID] {
			errs = append(errs, fmt.Errorf("activity handler id %q is registered twice", h.ID))
		}
		activities[h.ID] = true
	}
	return errs
}

// validateChanging checks the kind's change handlers: ids, which must be
// unique per cause, filters that only make sense together, and limits.
func validateChanging(k *Kind) []error {
	type idReason struct {
		id     string
		reason causes.Reason
	}
	var errs []error
	seen := map[idReason]bool{}
	for _, h := range k.Changing {
		if h.ID == "" {
			errs = append(errs, fmt.Errorf("%s: a handler has no id", k.GVK.Kind))
		}
		if key := (idReason{h.ID, h.Reason}); seen[key] {
			errs = append(errs, fmt.Errorf("%s: handler id %q is registered twice for the same cause", k.GVK.Kind, h.ID))
		} else {
			seen[key] = true
		}
		if (h.Old.IsSet() || h.New.IsSet()) && h.Value.IsSet() {
			errs = append(errs, fmt.Errorf("%s: handler %q: a value filter cannot be combined with old/new filters", k.GVK.Kind, h.ID))
		}
		if (h.Old.IsSet() || h.New.IsSet() || h.Value.IsSet()) && len(h.Field) == 0 {
			errs = append(errs, fmt.Errorf("%s: handler %q: value/old/new filters need a field", k.GVK.Kind, h.ID))
		}
		if h.Retries < 0 || h.Timeout < 0 || (h.Backoff != nil && *h.Backoff < 0) {
			errs = append(errs, fmt.Errorf("%s: handler %q: retries, timeout and backoff cannot be negative", k.GVK.Kind, h.ID))
		}
	}
	return errs
}

// validateWatching finds the kind's on-event handlers registered twice.
func validateWatching(k *Kind) []error {
	var errs []error
	lowLevel := map[string]bool{}
	for _, h := range k.Watching {
		if lowLevel["event "+h.ID] {
			errs = append(errs, fmt.Errorf("%s: on-event handler id %q is registered twice", k.GVK.Kind, h.ID))
		}
		lowLevel["event "+h.ID] = true
	}
	return errs
}

// validateIndexing finds the kind's indices whose ids are registered more
// than once: index ids are operator-wide, so each clash is reported once,
// at the first index with that id, whichever kinds the others are of.
func (r *Registry) validateIndexing(k *Kind) []error {
	var errs []error
	for _, h := range k.Indexing {
		if r.indexIDs[h.ID] > 1 {
			errs = append(errs, fmt.Errorf("index %q is registered twice: index ids are operator-wide", h.ID))
			r.indexIDs[h.ID] = 1 // report once
		}
	}
	return errs
}

// validateSpawning checks the kind's daemons and timers: ids, which must be
// unique per kind, the value filter's field, and durations.
func validateSpawning(k *Kind) []error {
	var errs []error
	spawned := map[string]bool{}
	for _, h := range k.Spawning {
		if h.ID == "" {
			errs = append(errs, fmt.Errorf("%s: a daemon or timer has no id", k.GVK.Kind))
		}
		if spawned[h.ID] {
			errs = append(errs, fmt.Errorf("%s: daemon or timer id %q is registered twice", k.GVK.Kind, h.ID))
		}
		spawned[h.ID] = true
		if h.Value.IsSet() && len(h.Field) == 0 {
			errs = append(errs, fmt.Errorf("%s: %s: a value filter needs a field", k.GVK.Kind, h.Handler))
		}
		if h.Retries < 0 || h.Timeout < 0 || (h.Backoff != nil && *h.Backoff < 0) || h.Interval < 0 || h.Idle < 0 ||
			h.CancellationBackoff < 0 || h.CancellationTimeout < 0 || h.CancellationPolling < 0 {
			errs = append(errs, fmt.Errorf("%s: %s: durations and retries cannot be negative", k.GVK.Kind, h.Handler))
		}
	}
	return errs
}

// ExtraFields are the fields some handler watches; they join the essence
// even where it would leave them out (e.g. status.phase).
func (k *Kind) ExtraFields() []fields.Path {
	var out []fields.Path
	for _, h := range k.Changing {
		if len(h.Field) > 0 {
			out = append(out, h.Field)
		}
	}
	for _, h := range k.Spawning {
		if len(h.Field) > 0 {
			out = append(out, h.Field)
		}
	}
	for _, h := range k.Watching {
		if len(h.Field) > 0 {
			out = append(out, h.Field)
		}
	}
	return out
}

// IDs are the ids of the kind's change handlers, deduplicated, in order.
func (k *Kind) IDs() []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range k.Changing {
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h.ID)
		}
	}
	return out
}
