package registry

import (
	"context"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

// ActivityKind tells the operator-wide handlers apart.
type ActivityKind int

// The activities, as Kopf's on.startup, on.cleanup, on.login, on.probe.
const (
	ActivityStartup ActivityKind = iota + 1
	ActivityCleanup
	ActivityLogin
	ActivityProbe
)

// ActivityFunc is an activity handler, adapted to one signature.
type ActivityFunc func(ctx context.Context, a *causes.Activity) (any, error)

// ActivityHandler is one registered activity handler.
type ActivityHandler struct {
	execution.Handler
	Kind ActivityKind
	Fn   ActivityFunc
}

// AddActivity registers an operator-wide handler.
func (r *Registry) AddActivity(h *ActivityHandler) { r.Activities = append(r.Activities, h) }

// ActivitiesOf returns the activity handlers of one kind, in order.
func (r *Registry) ActivitiesOf(kind ActivityKind) []*ActivityHandler {
	var out []*ActivityHandler
	for _, h := range r.Activities {
		if h.Kind == kind {
			out = append(out, h)
		}
	}
	return out
}
