package posting

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Objects are several objects that one Event is posted about, each (Kopf
// accepts an iterable of bodies). It is a runtime.Object only so that it
// can be passed where a single object or a list is accepted.
type Objects []client.Object

// GetObjectKind is empty: Objects is no Kubernetes kind.
func (Objects) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies every object.
func (o Objects) DeepCopyObject() runtime.Object {
	out := make(Objects, len(o))
	for i, obj := range o {
		if obj != nil {
			out[i] = obj.DeepCopyObject().(client.Object)
		}
	}
	return out
}

// RefOf is the reference to one object. Its kind comes from its TypeMeta,
// or from the scheme when that is empty (typed objects as clients return
// them); a nil scheme means client-go's.
func RefOf(obj client.Object, scheme *runtime.Scheme) (Ref, error) {
	if isNil(obj) {
		return Ref{}, errors.New("no object to post an event about")
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		if scheme == nil {
			scheme = clientgoscheme.Scheme
		}
		var err error
		if gvk, err = apiutil.GVKForObject(obj, scheme); err != nil {
			return Ref{}, fmt.Errorf("find the kind of %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return Ref{GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}, nil
}

// Refs are the references to what objs holds: one object, the items of a
// list (typed or unstructured), or Objects. Objects that cannot be
// referred to are left out and reported in the error.
func (p *Poster) Refs(objs runtime.Object) ([]Ref, error) {
	var items []runtime.Object
	switch o := objs.(type) {
	case Objects:
		for _, obj := range o {
			items = append(items, obj)
		}
	case client.Object:
		items = []runtime.Object{o}
	default:
		if isNil(objs) || !meta.IsListType(objs) {
			return nil, fmt.Errorf("post an event about %T: neither an object nor a list", objs)
		}
		var err error
		if items, err = meta.ExtractList(objs); err != nil {
			return nil, fmt.Errorf("post an event about the items of %T: %w", objs, err)
		}
	}
	var refs []Ref
	var errs []error
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok && !isNil(item) {
			errs = append(errs, fmt.Errorf("post an event about %T: not an object with metadata", item))
			continue
		}
		ref, err := RefOf(obj, p.scheme())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		refs = append(refs, ref)
	}
	return refs, errors.Join(errs...)
}

// scheme is the scheme that names typed objects' kinds.
func (p *Poster) scheme() *runtime.Scheme {
	switch {
	case p.Scheme != nil:
		return p.Scheme
	case p.Client != nil && p.Client.Scheme() != nil:
		return p.Client.Scheme()
	default:
		return clientgoscheme.Scheme
	}
}

// isNil tells nil interfaces and typed nil pointers, whose methods would
// panic.
func isNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
