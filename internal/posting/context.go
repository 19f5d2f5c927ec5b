package posting

import "context"

// posterKey is how a Poster is found in a context.
type posterKey struct{}

// NewContext returns a context that carries the poster, so that handlers
// reach it without a client (handlers.Event and its kin read it). The
// engine puts its poster into every handler's context.
func NewContext(ctx context.Context, p *Poster) context.Context {
	return context.WithValue(ctx, posterKey{}, p)
}

// FromContext returns the poster that NewContext put into ctx, or nil.
func FromContext(ctx context.Context) *Poster {
	p, _ := ctx.Value(posterKey{}).(*Poster)
	return p
}
