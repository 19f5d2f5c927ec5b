package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

// readCounter counts the operator's reads of one resource at its
// transport: GETs of single objects, lists, and watches.
type readCounter struct {
	resource string
	mu       sync.Mutex
	gets     int
	lists    int
	watches  int
}

// config returns a connection to the control plane that counts reads.
func (r *readCounter) config() *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet {
				r.count(req.URL.Path, req.URL.Query().Get("watch") == "true")
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// count files a GET under watch, get or list: a path that ends with the
// resource lists, one that names an object after it gets.
func (r *readCounter) count(path string, watch bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, part := range parts {
		if part != r.resource {
			continue
		}
		r.mu.Lock()
		switch {
		case watch:
			r.watches++
		case i == len(parts)-1:
			r.lists++
		default:
			r.gets++
		}
		r.mu.Unlock()
		return
	}
}

func (r *readCounter) counts() (gets, lists, watches int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets, r.lists, r.watches
}

// The engine reads the objects it handles from its informer cache, for
// unstructured kinds (ForKind, as in the quick start) and typed ones
// alike: a whole lifecycle (creation, an update, a timer's ticks,
// deletion) costs no GET of the handled resource, only the informer's
// listing and watch.
func TestHandledObjectsAreReadFromTheCache(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource string
		setup    func(reg *handlers.Registry, handled func(string))
		object   func(ns, name string) client.Object
		update   string
	}{{
		name:     "unstructured",
		resource: "kopfexamples",
		setup: func(reg *handlers.Registry, handled func(string)) {
			kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
			fn := func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
				handled(string(c.Reason) + " " + obj.GetName())
				return map[string]any{"message": "done"}, nil
			}
			handlers.OnCreate(kind, "create_fn", fn)
			handlers.OnUpdate(kind, "update_fn", fn)
			handlers.OnDelete(kind, "delete_fn", fn)
			handlers.Timer(kind, "tick", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Daemon) (any, error) {
				handled("tick " + obj.GetName())
				return nil, nil
			}, handlers.Interval(100*time.Millisecond))
		},
		object: func(ns, name string) client.Object {
			obj := exampleObject(t, ns)
			obj.SetName(name)
			return obj
		},
		update: `{"spec":{"field":"changed"}}`,
	}, {
		name:     "typed",
		resource: "configmaps",
		setup: func(reg *handlers.Registry, handled func(string)) {
			kind := handlers.For[*corev1.ConfigMap](reg)
			fn := func(ctx context.Context, obj *corev1.ConfigMap, c *cause.Change) (any, error) {
				handled(string(c.Reason) + " " + obj.GetName())
				return nil, nil
			}
			handlers.OnCreate(kind, "create_fn", fn, handlers.Labels{"handled": filter.Present})
			handlers.OnUpdate(kind, "update_fn", fn, handlers.Labels{"handled": filter.Present})
			handlers.OnDelete(kind, "delete_fn", fn, handlers.Labels{"handled": filter.Present})
			handlers.Timer(kind, "tick", func(ctx context.Context, obj *corev1.ConfigMap, c *cause.Daemon) (any, error) {
				handled("tick " + obj.GetName())
				return nil, nil
			}, handlers.Interval(100*time.Millisecond), handlers.Labels{"handled": filter.Present})
		},
		object: func(ns, name string) client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Labels: map[string]string{"handled": "yes"}}, Data: map[string]string{"key": "value"}}
		},
		update: `{"data":{"key":"changed"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			var mu sync.Mutex
			seen := map[string]int{}
			handled := func(what string) {
				mu.Lock()
				defer mu.Unlock()
				seen[what]++
			}
			times := func(what string) int {
				mu.Lock()
				defer mu.Unlock()
				return seen[what]
			}
			reg := handlers.NewRegistry()
			tc.setup(reg, handled)
			reads := &readCounter{resource: tc.resource}
			op := env.StartOperator(t, ns, reg, handlers.Options{}, kopftest.WithConfig(reads.config()))

			const n = 3
			ctx := context.Background()
			for i := range n {
				if err := env.Client.Create(ctx, tc.object(ns, fmt.Sprintf("obj-%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				name := fmt.Sprintf("obj-%d", i)
				eventually(t, "the creation of "+name+" is handled and its timer ticks twice", func() bool {
					return times("create "+name) == 1 && times("tick "+name) >= 2
				})
				if err := env.Client.Patch(ctx, tc.object(ns, name), client.RawPatch("application/merge-patch+json", []byte(tc.update))); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the update of "+name+" is handled", func() bool { return times("update "+name) == 1 })
				if err := env.Client.Delete(ctx, tc.object(ns, name)); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the deletion of "+name+" is handled and the object is gone", func() bool {
					obj := tc.object(ns, name)
					return times("delete "+name) == 1 && env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj) != nil
				})
			}
			op.Stop(t)

			gets, lists, watches := reads.counts()
			if gets != 0 {
				t.Errorf("the operator read single %s from the API server %d times; want 0 (the cache has them)", tc.resource, gets)
			}
			// The informer lists once when it starts (or streams its
			// listing through the watch); a dropped watch may make it list
			// again, but never once per object.
			if lists >= n {
				t.Errorf("the operator listed %s %d times; want its informer's listing only", tc.resource, lists)
			}
			if watches == 0 {
				t.Errorf("no watch of %s was counted: the counter does not see the operator's requests", tc.resource)
			}
		})
	}
}

// A handler that reads with handlers.APIReader asks the API server each
// time and starts no informer: the secrets it reads are got, never
// listed or watched. The same read through handlers.Client starts an
// informer for the kind: a list and a watch of every secret.
func TestAPIReaderReadsWithoutAnInformer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		read     func(ctx context.Context) client.Reader
		informer bool
	}{
		{name: "APIReader", read: handlers.APIReader},
		{name: "Client", read: func(ctx context.Context) client.Reader { return handlers.Client(ctx) }, informer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: ns}, StringData: map[string]string{"token": "s3cr3t"}}
			if err := env.Client.Create(context.Background(), secret); err != nil {
				t.Fatal(err)
			}
			reg, kind := kex()
			handlers.OnCreate(kind, "read_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
				got := &corev1.Secret{}
				if err := tc.read(ctx).Get(ctx, client.ObjectKeyFromObject(secret), got); err != nil {
					return nil, err
				}
				return map[string]any{"token": string(got.Data["token"])}, nil
			})
			reads := &readCounter{resource: "secrets"}
			op := env.StartOperator(t, ns, reg, handlers.Options{}, kopftest.WithConfig(reads.config()))
			create(t, exampleObject(t, ns))
			eventually(t, "the handler's read lands in status", func() bool {
				token, _, _ := unstructured.NestedString(get(t, ns, "kopf-example-1").Object, "status", "read_fn", "token")
				return token == "s3cr3t"
			})
			op.Stop(t)

			gets, lists, watches := reads.counts()
			switch {
			case !tc.informer && (gets != 1 || lists != 0 || watches != 0):
				t.Errorf("secrets read through the API reader: %d gets, %d lists, %d watches; want 1, 0, 0", gets, lists, watches)
			case tc.informer && (gets != 0 || lists+watches == 0):
				t.Errorf("secrets read through the client: %d gets, %d lists, %d watches; want no get, and an informer's list or watch", gets, lists, watches)
			}
		})
	}
}
