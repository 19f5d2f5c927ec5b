package handlers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
)

// EventFunc is an on-event handler: it gets its object and the raw watch
// event (cause.Event: its type, cause.EventListed, EventAdded,
// EventModified or EventDeleted, a patch, the memo and the indices). A
// non-nil result lands in status.<id>, as in Kopf.
type EventFunc[T client.Object] func(ctx context.Context, obj T, e *cause.Event) (any, error)

// OnEvent registers a handler for every raw watch event of matching
// objects: the listing, additions, modifications and deletions, in order.
// It keeps no progress and needs no finalizer; its errors are logged and
// ignored, so it takes filters but no limits. It should be quick: the
// resource's events wait for it.
func OnEvent[T client.Object](res *Resource[T], id string, fn EventFunc[T], opts ...FilterOption) {
	h := &registry.EventHandler{}
	h.ID, h.Title = id, "Handler"
	h.Fn = func(ctx context.Context, obj registry.Object, e *causes.Event) (any, error) {
		return fn(ctx, obj.(T), e)
	}
	applyAll(target{handler: &h.Handler, filters: &h.Filters}, opts)
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	res.res.kind.Watching = append(res.res.kind.Watching, h)
}

// IndexFunc is an index handler: it returns the object's contributions to
// the index. A map adds its key-value pairs (use arrays or structs as keys
// where Kopf uses tuples); nil leaves the object's values as they are; any
// other value is stored under the key nil.
type IndexFunc[T client.Object] func(ctx context.Context, obj T, c *cause.Change) (any, error)

// Index registers an index: an in-memory map from keys to the values of
// the matching objects, kept up to date with every event, and readable by
// every handler (cause.Change.Indices, cause.Daemon.Indices: an
// indexing.Indices) by the id. At the
// start (and after a freeze), handlers wait until all objects of the
// indexed kinds are indexed. Errors are ignored by default (the object's
// values stay); a permanent failure takes the object out of the index
// until the operator restarts, a temporary one until its delay is over.
func Index[T client.Object](res *Resource[T], id string, fn IndexFunc[T], opts ...IndexOption) {
	h := &registry.IndexHandler{}
	h.ID, h.Title = id, "Indexer"
	h.Fn = func(ctx context.Context, obj registry.Object, c *causes.Cause) (any, error) {
		return fn(ctx, obj.(T), c)
	}
	applyAll(target{handler: &h.Handler, filters: &h.Filters}, opts)
	res.reg.reg.AddIndex(res.res.kind, h)
}
