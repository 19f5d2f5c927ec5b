// Package handlers is what operator authors import: register one function
// per cause (create, update, delete, resume, a field's change) for any
// Kubernetes resource, typed or unstructured, and add the engine to a
// controller-runtime manager (SetupWithManager) or run it standalone (Main).
//
//	reg := handlers.NewRegistry()
//	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
//	handlers.OnCreate(kex, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
//		return map[string]any{"message": "hello world"}, nil // lands in status.create_fn
//	})
//	handlers.Main(reg, handlers.RunOptions{})
//
// The registration functions (On..., Daemon, Timer, Index) are Kopf's
// decorators, with options that the compiler checks per function;
// docs/kopf-to-go.md maps every Kopf name to its Go name.
package handlers

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/ring/share"
	"github.com/kopf-go/kopf/internal/scopes"
)

// Registry holds an operator's handlers. There is no global registry: make
// one, register into it, and pass it to SetupWithManager or Main.
type Registry struct {
	reg registry.Registry
	// resources finds an already registered resource by its Go type or
	// GVK, and says how it was registered, for error messages.
	resources map[any]*registration
	// order is the resources in registration order.
	order []*registration
	// webhooks are the validating and mutating handlers, per resource.
	webhooks admission.Registry
	// conversions are the converters, per kind (conversion.go).
	conversions []*conversionKind
	// placer places new objects in the replica's shard ring at admission
	// (PlaceShardsAtAdmission), once the ring's engine is set up.
	placer share.Placer
}

// registration is one resource of a registry: how the operator named it
// (for error messages), the engine's kind with its handlers, and its
// webhook handlers if it has any.
type registration struct {
	name     string
	kind     *registry.Kind
	webhooks *admission.Kind
	// children are the kinds of its children, by Go type or GVK.
	children map[any]*registry.ChildKind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{resources: map[any]*registration{}} }

// Resource is what handlers are registered for (Kopf's resource): the
// objects of one Kubernetes kind, with T the Go type they arrive as, a
// typed object such as *corev1.ConfigMap, or *unstructured.Unstructured.
type Resource[T client.Object] struct {
	reg *Registry
	res *registration
}

// For returns the resource of the typed objects T (e.g. *corev1.ConfigMap),
// whose group, version and kind come from the manager's scheme at setup.
// For unstructured objects, use ForKind.
func For[T client.Object](r *Registry) *Resource[T] {
	t := reflect.TypeFor[T]()
	if t == reflect.TypeFor[*unstructured.Unstructured]() {
		r.reg.Fail(fmt.Errorf("handlers.For[*unstructured.Unstructured] does not tell which kind to watch; use handlers.ForKind"))
	}
	if t.Kind() != reflect.Pointer {
		r.reg.Fail(fmt.Errorf("handlers.For[%s]: objects must be pointers to structs, such as *corev1.ConfigMap", t))
		kind := &registry.Kind{NewObject: func() registry.Object { var zero T; return zero }}
		return &Resource[T]{reg: r, res: &registration{kind: kind}}
	}
	kind := &registry.Kind{NewObject: func() registry.Object { return reflect.New(t.Elem()).Interface().(T) }}
	return &Resource[T]{reg: r, res: r.register(t, fmt.Sprintf("handlers.For[%s]", t), kind)}
}

// ForKind returns the resource with the given group, version and kind
// (e.g. "kopf.dev", "v1", "KopfExample"; the core group is ""), whose
// objects arrive as *unstructured.Unstructured.
func ForKind(r *Registry, group, version, kind string) *Resource[*unstructured.Unstructured] {
	gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	if version == "" || kind == "" {
		r.reg.Fail(fmt.Errorf("handlers.ForKind(%q, %q, %q): the version and the kind are required", group, version, kind))
	}
	k := &registry.Kind{GVK: gvk, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	name := fmt.Sprintf("handlers.ForKind(%q, %q, %q)", group, version, kind)
	return &Resource[*unstructured.Unstructured]{reg: r, res: r.register(gvk, name, k)}
}

// ForResource returns the resource that Kopf's resource selector names,
// kubectl-style, whose objects arrive as *unstructured.Unstructured:
//
//	ForResource(reg, "kopfexamples")            any name (plural, singular, kind, short name)
//	ForResource(reg, "kopfexamples.kopf.dev")   name.group
//	ForResource(reg, "deployments.v1.apps")     name.version.group ("pods.v1" for the core group)
//	ForResource(reg, "kopf.dev", "kopfexamples")
//	ForResource(reg, "kopf.dev/v1", "kopfexamples")
//	ForResource(reg, "v1", "pods")              the core group
//	ForResource(reg, "apps", "v1", "deployments")
//
// Without a version, the group's preferred one is served. The engine
// resolves the selector through discovery while it runs: a resource that
// does not exist yet (its CRD is not installed) is served once it does,
// and one that goes away stops being served (docs/scopes.md). A name that
// two groups serve is refused, naming both, unless the core group is one
// of them (as in kubectl, "pods" is the core group's).
func ForResource(r *Registry, names ...string) *Resource[*unstructured.Unstructured] {
	sel, err := scopes.ParseSelector(names...)
	name := fmt.Sprintf("handlers.ForResource(%q)", names)
	if err != nil {
		r.reg.Fail(fmt.Errorf("%s: %w", name, err))
	}
	return r.selecting(sel, name)
}

// ForCategory returns every resource in the category (e.g. "all", or a
// category that CRDs declare), at each group's preferred version.
func ForCategory(r *Registry, category string) *Resource[*unstructured.Unstructured] {
	name := fmt.Sprintf("handlers.ForCategory(%q)", category)
	if category == "" {
		r.reg.Fail(fmt.Errorf("%s: the category must not be empty", name))
	}
	return r.selecting(scopes.Selector{Category: category}, name)
}

// ForEverything returns every resource the cluster serves that can be
// listed and watched, at each group's preferred version, but the Events
// (Kopf's kopf.EVERYTHING): for on-event handlers, daemons and timers,
// usually with filters (Labels, When) that pick the objects of interest.
func ForEverything(r *Registry) *Resource[*unstructured.Unstructured] {
	return r.selecting(scopes.Selector{Everything: true}, "handlers.ForEverything()")
}

// selecting registers the kind of a selector.
func (r *Registry) selecting(sel scopes.Selector, name string) *Resource[*unstructured.Unstructured] {
	k := &registry.Kind{Selector: &sel, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	return &Resource[*unstructured.Unstructured]{reg: r, res: r.register("selector "+sel.String(), name, k)}
}

// register returns the resource registered under key, or registers kind
// under it.
func (r *Registry) register(key any, name string, kind *registry.Kind) *registration {
	if res, ok := r.resources[key]; ok {
		return res
	}
	res := &registration{name: name, kind: kind}
	r.resources[key] = res
	r.order = append(r.order, res)
	r.reg.Kinds = append(r.reg.Kinds, kind)
	return res
}

// checkResources refuses two registrations of one kind (a typed one with
// For and another with ForKind, say, or one kind by name at two versions):
// each would get a controller of its own, and both would handle every
// object, which the API server serves at all of the kind's versions.
// Typed resources get their kinds from the scheme.
func (r *Registry) checkResources(scheme *runtime.Scheme) error {
	first := map[schema.GroupKind]*registration{}
	var errs []error
	for _, res := range r.order {
		if res.kind.Selector != nil {
			continue // resolved while running; the engine refuses overlaps then
		}
		gvk := res.kind.GVK
		if gvk.Empty() {
			var err error
			if gvk, err = apiutil.GVKForObject(res.kind.NewObject(), scheme); err != nil {
				continue // reported by the setup that needs the kind
			}
		}
		if prev, ok := first[gvk.GroupKind()]; ok {
			errs = append(errs, fmt.Errorf("kind %s is registered twice, as %s and as %s: register it once, at one version, so that one controller handles it",
				gvk.GroupKind(), prev.name, res.name))
			continue
		}
		first[gvk.GroupKind()] = res
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid handler registration: %w", err)
	}
	return nil
}

// kindHolder is what every Resource[T] is, whatever its T.
type kindHolder interface{ registeredKind() *registry.Kind }

func (r *Resource[T]) registeredKind() *registry.Kind {
	if r == nil || r.res == nil {
		return nil // a Resource made by hand, not by For or ForKind
	}
	return r.res.kind
}

// The toolkits reach a resource's handlers through the registry package.
func init() {
	registry.KindOf = func(resource any) *registry.Kind {
		if h, ok := resource.(kindHolder); ok {
			return h.registeredKind()
		}
		return nil
	}
}
