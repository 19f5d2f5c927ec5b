package posting

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// Target is where the Events that handlers post (handlers.PostEvent and
// its kin) go: the engine's Poster, or a unit test's recorder
// (pkg/handlertest), which posts nothing and keeps them for the test.
type Target interface {
	Event(objs runtime.Object, eventType, reason, message string) error
}

// posterKey is how a Target is found in a context.
type posterKey struct{}

// NewContext returns a context that carries the poster, so that handlers
// reach it without a client (handlers.Event and its kin read it). The
// engine puts its poster into every handler's context; a nil poster
// leaves ctx as it is.
func NewContext(ctx context.Context, p *Poster) context.Context {
	if p == nil {
		return ctx
	}
	return WithTarget(ctx, p)
}

// WithTarget returns a context that carries t for the handlers' Events.
func WithTarget(ctx context.Context, t Target) context.Context {
	return context.WithValue(ctx, posterKey{}, t)
}

// FromContext returns the target that NewContext or WithTarget put into
// ctx, or nil.
func FromContext(ctx context.Context) Target {
	t, _ := ctx.Value(posterKey{}).(Target)
	return t
}
