package ring

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
)

// source is where the assigner reads one kind's objects: the whole
// cluster, or one served namespace.
type source struct {
	kind int
	res  metadata.ResourceInterface
	// id tells sources apart: the kind and the namespace.
	id string
}

// kindClient is one kind's metadata client, and whether its objects are
// namespaced.
type kindClient struct {
	res    metadata.Getter
	scoped bool
}

// kindClients are the metadata clients of the kinds, by kind.
func (a *Assigner) kindClients() ([]kindClient, error) {
	var out []kindClient
	for _, gvk := range a.s.Kinds {
		mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("find the resource of %s: %w", gvk, err)
		}
		out = append(out, kindClient{res: a.objects.Resource(mapping.Resource),
			scoped: mapping.Scope.Name() == meta.RESTScopeNameNamespace})
	}
	return out, nil
}

// sourcesIn are the sources of every kind in the namespaces (the whole
// cluster if all): a cluster-scoped kind has one source anyway.
func sourcesIn(kinds []kindClient, namespaces []string, all bool) []source {
	var out []source
	for i, k := range kinds {
		if !k.scoped || all {
			out = append(out, source{kind: i, res: k.res, id: fmt.Sprint(i)})
			continue
		}
		for _, ns := range namespaces {
			out = append(out, source{kind: i, res: k.res.Namespace(ns), id: fmt.Sprint(i, "/", ns)})
		}
	}
	return out
}

// served are the namespaces the assigner serves now, and a channel closed
// when they change (nil if they never do).
func (a *Assigner) served() (names []string, all bool, changed <-chan struct{}) {
	if a.s.Served == nil {
		return a.s.Namespaces, len(a.s.Namespaces) == 0, nil
	}
	names, changed = a.s.Served.Now()
	return names, a.s.Served.All(), changed
}

// keyOf is the key of one of the source's objects.
func (s source) keyOf(o metav1.Object) key {
	return key{kind: s.kind, NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
}

// reflector watches the objects of a source that the selector selects,
// and hands every object it lists or hears of to seen, keeping none: the
// assigner holds no copy of the ring's objects (sharding.md, "The
// assigner"). listed is told the keys of each complete listing.
func (s source) reflector(selector string, seen func(key, *metav1.PartialObjectMetadata), listed func([]key)) *toolscache.Reflector {
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			// A consistent read, not the watch cache's "any version" that
			// a reflector asks for at first: a dead or departed member's
			// last writes are then in the listing, and its objects are not
			// placed from versions that conflict.
			opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
			return s.res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return s.res.Watch(ctx, opts)
		},
	}
	return toolscache.NewReflectorWithOptions(lw, &metav1.PartialObjectMetadata{}, passOn{s, seen, listed}, toolscache.ReflectorOptions{})
}

// passOn is a reflector's store that stores nothing: it passes every
// object that is added, updated or listed on, and ignores deletions (a
// deleted object needs no owner, and one that got its owner leaves the
// selection with a deletion).
type passOn struct {
	s      source
	seen   func(key, *metav1.PartialObjectMetadata)
	listed func([]key)
}

func (p passOn) Add(obj any) error    { p.pass(obj); return nil }
func (p passOn) Update(obj any) error { p.pass(obj); return nil }
func (p passOn) Delete(any) error     { return nil }
func (p passOn) Resync() error        { return nil }

func (p passOn) Replace(list []any, _ string) error {
	keys := make([]key, 0, len(list))
	for _, obj := range list {
		if k, ok := p.pass(obj); ok {
			keys = append(keys, k)
		}
	}
	if p.listed != nil {
		p.listed(keys)
	}
	return nil
}

func (p passOn) pass(obj any) (key, bool) {
	o, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return key{}, false
	}
	k := p.s.keyOf(o)
	p.seen(k, o)
	return k, true
}
