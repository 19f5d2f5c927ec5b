package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/handlertest"
)

// A change handler gets its object and its cause; what it returns lands
// in status.<id>, what it sets in c.Patch is written with it. Here it is
// called as the engine would call it, through pkg/handlertest.
func ExampleOnCreate() {
	greet := func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		c.Patch.SetLabel("greeted", "yes")
		return map[string]any{"message": "hello " + obj.GetName()}, nil
	}
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", greet, handlers.Labels{"app": filter.Present}, handlers.Retries(3))

	obj := &unstructured.Unstructured{}
	obj.SetName("kex-1")
	c := handlertest.Create(obj, handlertest.ID("create_fn"))
	result, err := greet(handlertest.Context(nil), obj, c)
	fmt.Println(result, err)
	fmt.Println(handlertest.Patch(c))
	// Output:
	// map[message:hello kex-1] <nil>
	// map[metadata:map[labels:map[greeted:yes]]]
}

// A handler that cannot go on yet asks to be called again later; one that
// never will ends for this cause. errors.As finds either in a chain.
func ExampleTemporary() {
	err := fmt.Errorf("reconcile: %w", handlers.Temporary(errors.New("the database is not ready"), 10*time.Second))
	var temporary *failure.TemporaryError
	if errors.As(err, &temporary) {
		fmt.Println("retried after", temporary.Delay, "because", temporary.Err)
	}
	var permanent *failure.PermanentError
	fmt.Println(errors.As(handlers.Permanent(errors.New("size 'huge' is not supported")), &permanent))
	// Output:
	// retried after 10s because the database is not ready
	// true
}

// A sub-handler is registered from within its parent, through the
// parent's context; it runs after the parent, under "<parent>/<id>".
func ExampleSubhandler() {
	parent := func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		for _, item := range []string{"a", "b"} {
			if err := handlers.Subhandler(ctx, item, func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
				return map[string]any{"item": item}, nil
			}); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	ctx := handlertest.Context(nil)
	obj := &unstructured.Unstructured{}
	_, err := parent(ctx, obj, handlertest.Create(obj))
	fmt.Println(handlertest.Subhandlers(ctx), err)
	fmt.Println(handlers.Subhandler(context.Background(), "c", parent) != nil)
	// Output:
	// [a b] <nil>
	// true
}

// The engine joins a manager of the program's own, beside its other
// controllers; Options are the engine's settings.
func ExampleSetupWithManager() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, nil
	})
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	if err := handlers.SetupWithManager(mgr, reg, handlers.Options{Standalone: true}); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// The standalone runner makes the manager itself, with Kopf's command
// line; RunOptions add the settings of that manager to the engine's.
func ExampleMain() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.Timer(kex, "tick", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		return map[string]any{"seen": obj.GetResourceVersion()}, nil
	}, handlers.Interval(time.Minute))
	handlers.Main(reg, handlers.RunOptions{
		Options:            handlers.Options{DefaultBackoff: 10 * time.Second},
		MetricsBindAddress: ":8443",
	})
}
