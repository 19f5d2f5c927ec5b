package clients

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

type clientKey struct{}

type readerKey struct{}

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

// WithReader returns a context in which ReaderFrom returns r (a nil r
// leaves ctx as it is).
func WithReader(ctx context.Context, r client.Reader) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, readerKey{}, r)
}

// ReaderFrom returns the operator's uncached reader from a handler's
// context, nil outside handlers: the manager's API reader, whose every
// read is a request to the API server, so that reading a kind starts no
// informer (and needs no list or watch permission on it).
func ReaderFrom(ctx context.Context) client.Reader {
	r, _ := ctx.Value(readerKey{}).(client.Reader)
	return r
}

// ForHandlers is the context a handler runs in, as far as clients go:
// the client (From) and the uncached reader (ReaderFrom).
func ForHandlers(ctx context.Context, c client.Client, r client.Reader) context.Context {
	return WithReader(WithClient(ctx, c), r)
}
