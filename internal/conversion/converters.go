// Package conversion converts the objects of a kind between its versions
// with the operator's converters (docs/conversion.md): it finds the chain
// of converters from one version to another, runs each contained, and
// serves the API server's ConversionReviews with them. The diff-base that
// the engine keeps on each object goes through the same converters when
// it was recorded in another version than the object is read in.
package conversion

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Func converts one object in place, from its converter's From version to
// its To version; the caller sets apiVersion afterwards.
type Func func(ctx context.Context, obj *unstructured.Unstructured) error

// Converter converts the objects of one kind from one version to another
// (one direction).
type Converter struct {
	From, To string
	Fn       Func
}

// Name is how logs and errors name the converter: "v1->v2".
func (c *Converter) Name() string { return c.From + "->" + c.To }

// Kind is one kind's converters.
type Kind struct {
	GroupKind  schema.GroupKind
	Converters []*Converter
	// UnrecordedVersion, if set, is the version of a diff-base recorded
	// without one (by Python Kopf, or before the kind had converters).
	UnrecordedVersion string
}

// Registry is the operator's converters, per kind.
type Registry struct {
	Kinds []*Kind
}

// GroupKinds are the kinds that have converters, in registration order.
func (r *Registry) GroupKinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(r.Kinds))
	for _, k := range r.Kinds {
		out = append(out, k.GroupKind)
	}
	return out
}

// Kind returns the converters of a group and kind, nil if it has none.
func (r *Registry) Kind(gk schema.GroupKind) *Kind {
	if r == nil {
		return nil
	}
	for _, k := range r.Kinds {
		if k.GroupKind == gk {
			return k
		}
	}
	return nil
}

// Versions are the kind's versions that some converter converts from or
// to, in the order they were registered.
func (k *Kind) Versions() []string {
	var out []string
	for _, c := range k.Converters {
		for _, v := range []string{c.From, c.To} {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// Validate reports what is wrong with the registration, all at once: a
// converter without a function or versions, from a version to itself, or
// registered twice for one direction.
func (r *Registry) Validate() error {
	var errs []error
	for _, k := range r.Kinds {
		seen := map[string]bool{}
		for _, c := range k.Converters {
			switch {
			case c.From == "" || c.To == "":
				errs = append(errs, fmt.Errorf("converter %q of %s: both versions are required", c.Name(), k.GroupKind))
			case c.From == c.To:
				errs = append(errs, fmt.Errorf("converter %q of %s converts a version to itself", c.Name(), k.GroupKind))
			case c.Fn == nil:
				errs = append(errs, fmt.Errorf("converter %q of %s has no function", c.Name(), k.GroupKind))
			case seen[c.Name()]:
				errs = append(errs, fmt.Errorf("converter %q of %s is registered twice", c.Name(), k.GroupKind))
			}
			seen[c.Name()] = true
		}
	}
	return errors.Join(errs...)
}

// NoPathError is a conversion between two versions that no chain of
// registered converters makes.
type NoPathError struct {
	GroupKind schema.GroupKind
	From, To  string
}

func (e *NoPathError) Error() string {
	return fmt.Sprintf("no converter or chain of converters of %s converts %s to %s", e.GroupKind, e.From, e.To)
}

// Path returns the shortest chain of converters from one version to
// another (empty for a version to itself): a direct converter if there is
// one, else through other versions, as a hub (v1->hub->v3). Among chains
// of one length, the one of the earliest registered converters wins, so
// that the path is the same in every process.
func (k *Kind) Path(from, to string) ([]*Converter, error) {
	if from == to {
		return nil, nil
	}
	via := map[string]*Converter{from: nil}
	queue := []string{from}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, c := range k.Converters {
			if c.From != v {
				continue
			}
			if _, seen := via[c.To]; seen {
				continue
			}
			via[c.To] = c
			if c.To == to {
				return chain(via, to), nil
			}
			queue = append(queue, c.To)
		}
	}
	return nil, &NoPathError{GroupKind: k.GroupKind, From: from, To: to}
}

// chain walks the breadth-first search's edges back from the target.
func chain(via map[string]*Converter, to string) []*Converter {
	var out []*Converter
	for c := via[to]; c != nil; c = via[c.From] {
		out = append(out, c)
	}
	slices.Reverse(out)
	return out
}
