package clients

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/metrics"
)

// guardedClient is the engine's client as the operator's WrapClient made
// it, with the wrapper's panics contained: a request whose wrapper panics
// fails with an error (logged with the stack, and counted), which the
// engine treats as any failed request (a cycle's write is kept and
// written again, an object is throttled). The engine calls its client
// from informers' and daemons' goroutines too, where a panic would end
// the process.
type guardedClient struct {
	client.Client
	log logr.Logger
	// broken, if set, is the panic of the wrapper itself (WrapClient),
	// which made no client: every request fails with it, and Client is
	// the unwrapped client, for the scheme and the mapper.
	broken error
}

// Contain wraps the engine's client with the operator's wrapper and
// guards the result; a panic of the wrapper itself gives a client whose
// every request fails.
func Contain(wrap func(client.Client) client.Client, c client.Client, log logr.Logger) client.Client {
	wrapped, p := contain.Value(func() client.Client { return wrap(c) })
	if p != nil {
		metrics.CallbackPanicked("", metrics.CallbackClient, "")
		log.Error(p, fmt.Sprintf("The client's wrapper (WrapClient) panicked: %s; every request of the engine fails.", p), "stack", string(p.Stack))
		return &guardedClient{Client: c, log: log, broken: fmt.Errorf("the client's wrapper (WrapClient) panicked: %w", p)}
	}
	return Guard(wrapped, log)
}

// Guard guards the client that the operator's wrapper returned.
func Guard(c client.Client, log logr.Logger) client.Client {
	return &guardedClient{Client: c, log: log}
}

// do runs one request; a panic is its error.
func (g *guardedClient) do(method string, request func() error) error {
	if g.broken != nil {
		return g.broken
	}
	var err error
	if p := contain.Call(func() { err = request() }); p != nil {
		metrics.CallbackPanicked("", metrics.CallbackClient, "")
		g.log.Error(p, fmt.Sprintf("The client's wrapper (WrapClient) panicked in %s: %s", method, p), "stack", string(p.Stack))
		return fmt.Errorf("the client's wrapper panicked in %s: %w", method, p)
	}
	return err
}

func (g *guardedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return g.do("Get", func() error { return g.Client.Get(ctx, key, obj, opts...) })
}

func (g *guardedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return g.do("List", func() error { return g.Client.List(ctx, list, opts...) })
}

func (g *guardedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return g.do("Apply", func() error { return g.Client.Apply(ctx, obj, opts...) })
}

func (g *guardedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return g.do("Create", func() error { return g.Client.Create(ctx, obj, opts...) })
}

func (g *guardedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return g.do("Delete", func() error { return g.Client.Delete(ctx, obj, opts...) })
}

func (g *guardedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return g.do("Update", func() error { return g.Client.Update(ctx, obj, opts...) })
}

func (g *guardedClient) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return g.do("Patch", func() error { return g.Client.Patch(ctx, obj, p, opts...) })
}

func (g *guardedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return g.do("DeleteAllOf", func() error { return g.Client.DeleteAllOf(ctx, obj, opts...) })
}

func (g *guardedClient) GroupVersionKindFor(obj runtime.Object) (gvk schema.GroupVersionKind, err error) {
	err = g.do("GroupVersionKindFor", func() error { gvk, err = g.Client.GroupVersionKindFor(obj); return err })
	return gvk, err
}

func (g *guardedClient) IsObjectNamespaced(obj runtime.Object) (namespaced bool, err error) {
	err = g.do("IsObjectNamespaced", func() error { namespaced, err = g.Client.IsObjectNamespaced(obj); return err })
	return namespaced, err
}

// Status guards the wrapper's own status writer (which may differ from
// its SubResource("status")), and the making of it.
func (g *guardedClient) Status() client.SubResourceWriter {
	if g.broken != nil {
		return failedSub{err: g.broken}
	}
	var status client.SubResourceWriter
	if err := g.do("Status", func() error { status = g.Client.Status(); return nil }); err != nil {
		return failedSub{err: err}
	}
	return &guardedWriter{SubResourceWriter: status, g: g, name: "Status"}
}

// SubResource guards the subresource's client, and the making of it.
func (g *guardedClient) SubResource(name string) client.SubResourceClient {
	if g.broken != nil {
		return failedSub{err: g.broken}
	}
	var sub client.SubResourceClient
	if err := g.do("SubResource", func() error { sub = g.Client.SubResource(name); return nil }); err != nil {
		return failedSub{err: err}
	}
	return &guardedSub{guardedWriter: guardedWriter{SubResourceWriter: sub, g: g, name: "SubResource"}, reader: sub}
}

// guardedWriter guards a subresource's writes alike (the status's, or
// another subresource's); name prefixes its methods in the log.
type guardedWriter struct {
	client.SubResourceWriter
	g    *guardedClient
	name string
}

func (w *guardedWriter) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return w.g.do(w.name+".Create", func() error { return w.SubResourceWriter.Create(ctx, obj, sub, opts...) })
}

func (w *guardedWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return w.g.do(w.name+".Update", func() error { return w.SubResourceWriter.Update(ctx, obj, opts...) })
}

func (w *guardedWriter) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	return w.g.do(w.name+".Patch", func() error { return w.SubResourceWriter.Patch(ctx, obj, p, opts...) })
}

func (w *guardedWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return w.g.do(w.name+".Apply", func() error { return w.SubResourceWriter.Apply(ctx, obj, opts...) })
}

// guardedSub guards a subresource's reads and writes.
type guardedSub struct {
	guardedWriter
	reader client.SubResourceReader
}

func (s *guardedSub) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	return s.g.do("SubResource.Get", func() error { return s.reader.Get(ctx, obj, sub, opts...) })
}

// failedSub is a subresource's client that the wrapper panicked making:
// each of its requests fails.
type failedSub struct{ err error }

func (f failedSub) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return f.err
}

func (f failedSub) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return f.err
}

func (f failedSub) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return f.err
}

func (f failedSub) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return f.err
}

func (f failedSub) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return f.err
}
