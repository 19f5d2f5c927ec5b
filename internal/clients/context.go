package clients

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

type clientKey struct{}

// WithClient returns a context in which From returns c (a nil c
// leaves ctx as it is).
func WithClient(ctx context.Context, c client.Client) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, c)
}

// From returns the operator's client from a handler's context, nil
// outside handlers: the manager's client, which writes to the API server
// and reads through the manager's cache.
func From(ctx context.Context) client.Client {
	c, _ := ctx.Value(clientKey{}).(client.Client)
	return c
}
