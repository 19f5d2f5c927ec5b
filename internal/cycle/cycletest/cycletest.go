// Package cycletest gives the tests of whole cycles (internal/cycle's,
// and the engine's wiring of a kind) the example kind with a create, an
// update, a resume and a delete handler that record their calls, and a
// fake API server that counts the writes and can refuse them.
package cycletest

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/write/writetest"
)

// API is controller-runtime's fake client holding one object, which
// answers the writes' preconditions as the API server does.
type API struct {
	C client.WithWatch
	// Writes counts the patches; Written are their bodies ("status ..."
	// for /status), for the failure messages and the checks.
	Writes  int
	Written []string
	// Conflict makes every main patch a 409; Fail every main patch a 500.
	Conflict, Fail bool
}

// NewAPI holds obj, which has a status subresource.
func NewAPI(t testing.TB, obj *unstructured.Unstructured) *API {
	t.Helper()
	api := &API{}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(obj.GroupVersionKind(), meta.RESTScopeNamespace)
	api.C = fake.NewClientBuilder().WithRESTMapper(mapper).WithStatusSubresource(obj.DeepCopy()).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				api.Writes++
				if data, err := p.Data(o); err == nil {
					api.Written = append(api.Written, string(data))
				}
				if api.Conflict {
					return apierrors.NewConflict(schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}, o.GetName(), errors.New("changed"))
				}
				if api.Fail {
					return apierrors.NewInternalError(errors.New("etcd is down"))
				}
				if err := writetest.Preconditions(ctx, c, o, p, false); err != nil {
					return err
				}
				return c.Patch(ctx, o, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				api.Writes++
				if data, err := p.Data(o); err == nil {
					api.Written = append(api.Written, sub+" "+string(data))
				}
				if err := writetest.Preconditions(ctx, c, o, p, true); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			},
		}).WithObjects(obj).Build()
	return api
}

// Handlers are the example kind's change handlers: create_fn, update_fn,
// resume_fn and delete_fn (mandatory, as the facade registers delete
// handlers), whose outcome Outcome decides.
type Handlers struct {
	Outcome func(id string) (any, error)
	// Calls are the handlers called, in order.
	Calls []string
	// Meanwhile runs once, in the first handler called: what others do
	// while it runs.
	Meanwhile func()
}

// Kind is the example kind with the handlers.
func (h *Handlers) Kind() *registry.Kind {
	record := func(id string) registry.ChangeFunc {
		return func(context.Context, registry.Object, *causes.Cause) (any, error) {
			h.Calls = append(h.Calls, id)
			if f := h.Meanwhile; f != nil {
				h.Meanwhile = nil
				f()
			}
			return h.Outcome(id)
		}
	}
	kind := &registry.Kind{GVK: writetest.GVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	for _, c := range []struct {
		id     string
		reason causes.Reason
	}{{"create_fn", causes.Create}, {"update_fn", causes.Update}, {"resume_fn", causes.Resume}, {"delete_fn", causes.Delete}} {
		kind.Changing = append(kind.Changing, &registry.ChangeHandler{Handler: execution.Handler{ID: c.id}, Reason: c.reason,
			RequiresFinalizer: c.reason == causes.Delete, Fn: record(c.id)})
	}
	return kind
}
