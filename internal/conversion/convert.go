package conversion

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/contain"
)

// Error is a failed conversion of one object: no chain of converters, or
// a converter on the chain that failed or panicked (Err is then the
// converter's error, or a *contain.Panic).
type Error struct {
	GroupKind schema.GroupKind
	// Object is the object's namespace/name (or name), empty if it has
	// none, as a diff-base has not.
	Object   string
	From, To string
	// Converter is the failed step of the chain; nil when there is none.
	Converter *Converter
	Err       error
}

func (e *Error) Error() string {
	what := e.GroupKind.String()
	if e.Object != "" {
		what += " " + e.Object
	}
	if e.Converter == nil {
		return fmt.Sprintf("convert %s from %s to %s: %v", what, e.From, e.To, e.Err)
	}
	return fmt.Sprintf("convert %s from %s to %s: converter %s failed: %v", what, e.From, e.To, e.Converter.Name(), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Panic returns the converter's panic, nil if it did not panic.
func (e *Error) Panic() *contain.Panic {
	var p *contain.Panic
	if errors.As(e.Err, &p) {
		return p
	}
	return nil
}

// Convert converts the object in place to the version, through the chain
// of converters from its own version. Each converter runs contained: its
// panic is the conversion's *Error. After each step the object's
// apiVersion names the step's version, whatever the converter left there.
func (k *Kind) Convert(ctx context.Context, obj *unstructured.Unstructured, to string) error {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	from := gv.Version
	fail := func(c *Converter, err error) error {
		return &Error{GroupKind: k.GroupKind, Object: objectName(obj), From: from, To: to, Converter: c, Err: err}
	}
	switch {
	case err != nil:
		return fail(nil, fmt.Errorf("read the apiVersion: %w", err))
	case gv.Group != k.GroupKind.Group || obj.GetKind() != k.GroupKind.Kind:
		return fail(nil, fmt.Errorf("the object is a %s of %s, not of this kind", obj.GetKind(), obj.GetAPIVersion()))
	}
	path, err := k.Path(from, to)
	if err != nil {
		return fail(nil, err)
	}
	for _, c := range path {
		var err error
		if p := contain.Call(func() { err = c.Fn(ctx, obj) }); p != nil {
			err = p
		}
		if err != nil {
			return fail(c, err)
		}
		obj.SetAPIVersion(schema.GroupVersion{Group: k.GroupKind.Group, Version: c.To}.String())
		obj.SetKind(k.GroupKind.Kind)
	}
	return nil
}

// objectName is the object's namespace/name, or name.
func objectName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
