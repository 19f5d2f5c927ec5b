// Package handlertest builds what handlers get from the engine, so that a
// handler function can be unit-tested without an API server, in
// milliseconds, as Kopf users test theirs:
//
//	c := handlertest.Update(oldObj, newObj)
//	result, err := myUpdateHandler(handlertest.Context(fakeClient), newObj, c)
//	patch := handlertest.Patch(c) // what the handler would write
//
// The causes are the engine's own: Old, New and Diff are computed from
// the objects' essences as the engine computes them (spec, labels and
// annotations without the framework's; never status), and the patch is
// the one the engine would apply. For the engine itself, its retries and
// its storage, use pkg/kopftest with a real API server.
package handlertest

import (
	"context"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/internal/mergepatch"
	"github.com/kopf-go/kopf/internal/posting"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"

	"github.com/kopf-go/kopf/pkg/cause"
)

// Option adjusts a cause.
type Option func(*cause.Change)

// ID names the handler being called (cause.Change.HandlerID).
func ID(id string) Option { return func(c *cause.Change) { c.HandlerID = id } }

// Retry makes it the handler's retry-th attempt, the first of which began
// at started (cause.Change.Retry, Started and Runtime).
func Retry(retry int, started time.Time) Option {
	return func(c *cause.Change) {
		c.Retry, c.Started, c.Runtime = retry, started, time.Since(started)
	}
}

// Memo gives the object's memo (shared with its other handlers); a fresh
// one by default.
func Memo(m *memo.Memo) Option { return func(c *cause.Change) { c.Memo = m } }

// Indices gives the operator's indices; empty ones by default. Fill an
// index with Indices.Ensure(id).Replace(object, entries).
func Indices(i *indexing.Indices) Option { return func(c *cause.Change) { c.Indices = i } }

// Field narrows the cause to a field, as the engine does for handlers
// registered with handlers.Field: Old, New and Diff are the field's.
func Field(dotted string) Option {
	return func(c *cause.Change) {
		path := fields.Parse(dotted)
		c.Old, _ = fields.Resolve(c.Old, path)
		c.New, _ = fields.Resolve(c.New, path)
		c.Diff = c.Diff.Reduce(path)
	}
}

// Create is the cause of a create handler for obj.
func Create(obj client.Object, opts ...Option) *cause.Change {
	return build(cause.Create, nil, obj, opts)
}

// Update is the cause of an update handler for a change from old (the
// last handled state) to obj.
func Update(old, obj client.Object, opts ...Option) *cause.Change {
	return build(cause.Update, old, obj, opts)
}

// Resume is the cause of a resume handler for obj, handled before (by an
// earlier run of the operator) in the state old, or nil if unknown.
func Resume(old, obj client.Object, opts ...Option) *cause.Change {
	return build(cause.Resume, old, obj, opts)
}

// Delete is the cause of a delete handler for obj.
func Delete(obj client.Object, opts ...Option) *cause.Change {
	return build(cause.Delete, obj, obj, opts)
}

// build makes the cause as the engine would.
func build(reason cause.Reason, old, obj client.Object, opts []Option) *cause.Change {
	body := mustBody(obj)
	c := &cause.Change{Reason: reason, Body: body, New: diffbase.BuildEssence(body, nil, nil),
		Patch: patch.New(), Memo: &memo.Memo{}, Indices: &indexing.Indices{}, Started: time.Now()}
	if old != nil {
		// An absent old state stays a nil interface, as the engine's.
		c.Old = diffbase.BuildEssence(mustBody(old), nil, nil)
	}
	c.Diff = diff.Compute(c.Old, c.New)
	for _, o := range opts {
		o(c)
	}
	return c
}

// Body is the object as a JSON-like map, as handlers see it in
// cause.Change.Body: an unstructured object's own map, a typed object converted.
func Body(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T to a map: %w", obj, err)
	}
	return m, nil
}

func mustBody(obj client.Object) map[string]any {
	body, err := Body(obj)
	if err != nil {
		panic(err) // a test's object that cannot be a map is the test's bug
	}
	return body
}

// Patch is what the handler put in its cause's patch, as the merge patch
// the engine would apply (status included); nil if nothing.
func Patch(c *cause.Change) map[string]any { return mergepatch.Whole(c.Patch) }

// Subhandlers are the ids of the sub-handlers that handlers registered
// (handlers.Subhandler) in ctx, a Context, in order. The engine would run
// them after the handler; a test calls their functions itself.
func Subhandlers(ctx context.Context) []string {
	subs := causes.SubhandlersOf(ctx)
	if subs == nil {
		return nil
	}
	var ids []string
	for _, h := range subs.List() {
		if ch, ok := h.(*registry.ChangeHandler); ok {
			ids = append(ids, ch.ID)
		}
	}
	return ids
}

// Context is a handler's context, as the engine gives it to a change
// handler: handlers.Client and handlers.APIReader return c (for example
// controller-runtime's fake client; nil: no client), handlers.Subhandler
// registers sub-handlers, which Subhandlers lists, and with RecordEvents,
// the handler's Events are recorded. Use one Context per call.
func Context(c client.Client, opts ...ContextOption) context.Context {
	var parts contextParts
	for _, o := range opts {
		o(&parts)
	}
	ctx := clients.ForHandlers(context.Background(), c, c)
	if parts.events != nil {
		ctx = posting.WithTarget(ctx, parts.events)
	}
	ctx, _ = causes.WithSubhandlers(ctx)
	return ctx
}
