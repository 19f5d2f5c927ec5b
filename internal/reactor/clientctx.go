package reactor

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

type clientKey struct{}

// withClient puts the operator's client into a handler's context.
func withClient(ctx context.Context, c client.Client) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientFrom returns the operator's client from a handler's context, nil
// outside handlers: the manager's client, which writes to the API server
// and reads through the manager's cache.
func ClientFrom(ctx context.Context) client.Client {
	c, _ := ctx.Value(clientKey{}).(client.Client)
	return c
}
