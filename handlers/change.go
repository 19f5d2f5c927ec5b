package handlers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/fields"
)

// ChangeFunc is a change handler: it gets its object and the cause of the
// call (cause.Change: the reason, the diff, the patch, the memo; see
// pkg/cause). A non-nil result lands in status.<id>: a map is merged into
// what is there, anything else replaces it. The logger is in ctx
// (logr.FromContextOrDiscard). pkg/handlertest builds causes for unit
// tests.
type ChangeFunc[T client.Object] func(ctx context.Context, obj T, c *cause.Change) (any, error)

// OnCreate registers a handler for objects seen for the first time (no last
// handled state on them), including those created while the operator was
// down.
func OnCreate[T client.Object](res *Resource[T], id string, fn ChangeFunc[T], opts ...CreateOption) {
	h := newChangeHandler(id, fn, causes.Create)
	applyAll(target{handler: &h.Handler, filters: &h.Filters, change: h}, opts)
	res.addChange(h)
}

// OnUpdate registers a handler for changes of the object's essence (spec,
// labels, annotations, and any field some handler watches; never status).
func OnUpdate[T client.Object](res *Resource[T], id string, fn ChangeFunc[T], opts ...UpdateOption) {
	h := newChangeHandler(id, fn, causes.Update)
	h.FieldNeedsChange = true
	applyAll(target{handler: &h.Handler, filters: &h.Filters, change: h}, opts)
	res.addChange(h)
}

// OnDelete registers a handler for objects being deleted. Unless Optional,
// it puts the framework's finalizer on matching objects, so that deletion
// waits for it.
func OnDelete[T client.Object](res *Resource[T], id string, fn ChangeFunc[T], opts ...DeleteOption) {
	h := newChangeHandler(id, fn, causes.Delete)
	h.RequiresFinalizer = true
	applyAll(target{handler: &h.Handler, filters: &h.Filters, change: h}, opts)
	res.addChange(h)
}

// OnResume registers a handler for objects that exist when the operator
// starts, once per process; it joins whatever cause that object has then
// (an update during the downtime, say), but not deletions unless Deleted.
func OnResume[T client.Object](res *Resource[T], id string, fn ChangeFunc[T], opts ...ResumeOption) {
	h := newChangeHandler(id, fn, "")
	h.Initial = true
	applyAll(target{handler: &h.Handler, filters: &h.Filters, change: h}, opts)
	res.addChange(h)
}

// OnField registers a handler for changes of one field (dotted, e.g.
// "spec.field"), whatever the cause: it also runs on creation when the
// field is there, as in Kopf. Its id becomes "<id>/<field>"; it sees the
// field's old and new values. It takes the options of OnUpdate.
func OnField[T client.Object](res *Resource[T], id, field string, fn ChangeFunc[T], opts ...UpdateOption) {
	h := newChangeHandler(id, fn, "")
	h.Field = fields.Parse(field)
	h.FieldNeedsChange = true
	applyAll(target{handler: &h.Handler, filters: &h.Filters, change: h}, opts)
	res.addChange(h)
}

// newChangeHandler adapts fn to the engine's untyped objects.
func newChangeHandler[T client.Object](id string, fn ChangeFunc[T], reason causes.Reason) *registry.ChangeHandler {
	h := &registry.ChangeHandler{Reason: reason}
	h.ID = id
	h.Fn = func(ctx context.Context, obj registry.Object, c *causes.Cause) (any, error) {
		return fn(ctx, obj.(T), c)
	}
	return h
}

// addChange finishes the handler's id (a field adds "/<field>") and
// registers it.
func (res *Resource[T]) addChange(h *registry.ChangeHandler) {
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	res.res.kind.Changing = append(res.res.kind.Changing, h)
}

// Subhandler registers a sub-handler from within a change handler (Kopf's
// @kopf.subhandler and kopf.register): it runs after the parent returns,
// with the same cause, under the id "<parent id>/<id>", with progress and
// retries of its own, and its result in status.<parent id>/<id>. Until all
// of a parent's sub-handlers are finished, the parent is called again on
// every cycle, so it must register them the same way each time. Options
// are those of OnUpdate (filters, limits, Field with ValueBefore and
// ValueAfter). ctx is the parent's (it carries the parent's call, as
// Kopf's context variable does); it fails outside a change handler.
func Subhandler[T client.Object](ctx context.Context, id string, fn ChangeFunc[T], opts ...UpdateOption) error {
	h := newChangeHandler(id, fn, "")
	applyAll(target{handler: &h.Handler, filters: &h.Filters, change: h}, opts)
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
		h.FieldNeedsChange = true
	}
	if !causes.AddSubhandler(ctx, h) {
		return fmt.Errorf("register the sub-handler %q: sub-handlers can be registered only while a change handler runs", id)
	}
	return nil
}
