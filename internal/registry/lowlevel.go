package registry

import (
	"context"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

// EventFunc is an on-event handler, adapted to untyped objects.
type EventFunc func(ctx context.Context, obj Object, e *causes.Event) (any, error)

// EventHandler sees every watch event of the objects it matches: no
// progress, no finalizer, errors logged and ignored.
type EventHandler struct {
	execution.Handler
	Filters
	Fn EventFunc
}

// IndexFunc is an index handler, adapted to untyped objects: it returns
// the object's contributions to the index (see indexing.Entries).
type IndexFunc func(ctx context.Context, obj Object, c *causes.Cause) (any, error)

// IndexHandler keeps one index from the objects it matches.
type IndexHandler struct {
	execution.Handler
	Filters
	Fn IndexFunc
}

// MatchEvents returns the on-event handlers that match the object now.
func (k *Kind) MatchEvents(s *Subject) []*EventHandler {
	var out []*EventHandler
	for _, h := range k.Watching {
		if h.matchBody(s, &h.Handler) {
			out = append(out, h)
		}
	}
	return out
}

// Matches reports whether the index handler's filters match the object now
// (a panic in them: no).
func (h *IndexHandler) Matches(s *Subject) bool { return h.matchBody(s, &h.Handler) }
