package handlers

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kopf-go/kopf/internal/conversion"
)

// ConversionPath is where the operator's webhook server serves the
// ConversionReviews of every kind with converters, under
// WebhookOptions.Path; the managed CRDs' spec.conversion calls it
// (docs/conversion.md).
const ConversionPath = "/convert"

// ConvertFunc converts an object in place from one version of its kind to
// another: it reads the fields of the version it is registered from and
// writes those of the version it is registered to. The engine sets the
// apiVersion afterwards. Its error (or panic) fails the conversion, and
// the API server fails the request that needed it.
type ConvertFunc func(ctx context.Context, obj *unstructured.Unstructured) error

// TypedConvertFunc converts a typed object of one version into a typed
// object of another; to arrives with from's metadata already (the API
// server refuses a conversion that changes anything of the metadata but
// labels and annotations).
type TypedConvertFunc[A, B client.Object] func(ctx context.Context, from A, to B) error

// Conversion is a kind whose objects the operator converts between
// versions, for the API server (a CRD's conversion webhook, which the
// operator serves and, with WebhookOptions.Managed, configures) and for
// its own diff-bases recorded in another version.
type Conversion struct {
	reg  *Registry
	kind *conversionKind
}

// conversionKind is one kind's registration: its converters in the order
// registered, typed ones resolved with the scheme at setup.
type conversionKind struct {
	gk                schema.GroupKind
	unrecordedVersion string
	steps             []conversionStep
	errs              []error
}

// conversionStep is one converter: from and to are set for unstructured
// converters; typed ones are resolved at setup.
type conversionStep struct {
	from, to string
	fn       conversion.Func
	typed    func(*runtime.Scheme) (*conversion.Converter, error)
}

// ConversionOption configures a Conversion.
type ConversionOption func(*conversionKind)

// UnrecordedDiffBaseVersion tells the version of the diff-bases that were
// recorded without one: by Python Kopf, or by kopf-go before the kind had
// converters (the annotation kopf.zalando.org/last-handled-configuration
// holds no apiVersion). Without it, such a diff-base counts as recorded in
// whichever version makes it equal to the object as it is, if one does,
// else in the version the object is read in (docs/conversion.md,
// "Diff-bases across versions").
func UnrecordedDiffBaseVersion(version string) ConversionOption {
	return func(k *conversionKind) { k.unrecordedVersion = version }
}

// ForConversion returns the conversion of a kind ("kopf.dev",
// "ConversionExample"), for its converters. Calling it again for the same
// kind returns the same conversion.
func ForConversion(r *Registry, group, kind string, opts ...ConversionOption) *Conversion {
	gk := schema.GroupKind{Group: group, Kind: kind}
	var k *conversionKind
	for _, existing := range r.conversions {
		if existing.gk == gk {
			k = existing
		}
	}
	if k == nil {
		k = &conversionKind{gk: gk}
		if kind == "" {
			k.errs = append(k.errs, fmt.Errorf("handlers.ForConversion(%q, %q): the kind is required", group, kind))
		}
		r.conversions = append(r.conversions, k)
	}
	for _, o := range opts {
		o(k)
	}
	return &Conversion{reg: r, kind: k}
}

// Converter registers the conversion of the kind's objects from one
// version to another ("v1", "v2"), one direction per converter. A review
// between two versions with no direct converter goes through a chain of
// them, the shortest (hub and spoke: v1->hub, hub->v3).
func Converter(c *Conversion, from, to string, fn ConvertFunc) {
	c.kind.steps = append(c.kind.steps, conversionStep{from: from, to: to, fn: conversion.Func(fn)})
}

// TypedConverter registers the conversion from the typed objects A to the
// typed objects B of another version of the kind, whose versions come
// from the manager's scheme at setup.
func TypedConverter[A, B client.Object](c *Conversion, fn TypedConvertFunc[A, B]) {
	gk := c.kind.gk
	c.kind.steps = append(c.kind.steps, conversionStep{typed: func(scheme *runtime.Scheme) (*conversion.Converter, error) {
		newA, newB := newTyped[A](), newTyped[B]()
		gvkA, errA := apiutil.GVKForObject(newA(), scheme)
		gvkB, errB := apiutil.GVKForObject(newB(), scheme)
		if err := errors.Join(errA, errB); err != nil {
			return nil, fmt.Errorf("converter of %s from %T to %T: %w", gk, newA(), newB(), err)
		}
		if gvkA.GroupKind() != gk || gvkB.GroupKind() != gk {
			return nil, fmt.Errorf("converter of %s from %T to %T: the types are of %s and %s", gk, newA(), newB(), gvkA.GroupKind(), gvkB.GroupKind())
		}
		if fn == nil {
			return &conversion.Converter{From: gvkA.Version, To: gvkB.Version}, nil
		}
		return &conversion.Converter{From: gvkA.Version, To: gvkB.Version, Fn: func(ctx context.Context, obj *unstructured.Unstructured) error {
			a, b := newA(), newB()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, a); err != nil {
				return fmt.Errorf("decode %T: %w", a, err)
			}
			meta := map[string]any{"metadata": obj.Object["metadata"]}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(meta, b); err != nil {
				return fmt.Errorf("copy the metadata into %T: %w", b, err)
			}
			if err := fn(ctx, a, b); err != nil {
				return err
			}
			out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
			if err != nil {
				return fmt.Errorf("encode %T: %w", b, err)
			}
			obj.Object = out
			return nil
		}}, nil
	}})
}

// newTyped makes new objects of a pointer type.
func newTyped[T client.Object]() func() T {
	t := reflect.TypeFor[T]()
	return func() T {
		if t.Kind() != reflect.Pointer {
			var zero T
			return zero
		}
		return reflect.New(t.Elem()).Interface().(T)
	}
}

// conversionRegistry resolves the converters with the scheme and checks
// them, reporting every problem at once; nil without converters.
func (r *Registry) conversionRegistry(scheme *runtime.Scheme) (*conversion.Registry, error) {
	if len(r.conversions) == 0 {
		return nil, nil
	}
	out := &conversion.Registry{}
	var errs []error
	for _, k := range r.conversions {
		errs = append(errs, k.errs...)
		kind := &conversion.Kind{GroupKind: k.gk, UnrecordedVersion: k.unrecordedVersion}
		for _, s := range k.steps {
			c := &conversion.Converter{From: s.from, To: s.to, Fn: s.fn}
			if s.typed != nil {
				var err error
				if c, err = s.typed(scheme); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			kind.Converters = append(kind.Converters, c)
		}
		out.Kinds = append(out.Kinds, kind)
	}
	errs = append(errs, out.Validate())
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid conversion registration: %w", err)
	}
	return out, nil
}

// Convert converts an object in place to a version of its kind with the
// registered converters, in this process, as the API server would through
// the operator's conversion webhook; typed converters take their kinds
// from the scheme. pkg/handlertest.Convert calls it for unit tests.
func (r *Registry) Convert(ctx context.Context, scheme *runtime.Scheme, obj *unstructured.Unstructured, version string) error {
	convs, err := r.conversionRegistry(scheme)
	if err != nil {
		return err
	}
	gk := obj.GroupVersionKind().GroupKind()
	k := convs.Kind(gk)
	if k == nil {
		return fmt.Errorf("convert %s %s to %s: the kind has no converters", gk, obj.GetName(), version)
	}
	return k.Convert(ctx, obj, version)
}
