package handlertest

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Index fills indices with what the index handlers registered on res
// (handlers.Index) make of objs, as the engine's informers would on
// listing them: each handler whose filters match an object adds the
// object's entries to its index (an index per handler id). Pass the
// result to a cause with the Indices option:
//
//	indices := &indexing.Indices{}
//	err := handlertest.Index(indices, pods, pod1, pod2)
//	c := handlertest.Create(obj, handlertest.Indices(indices))
//
// Unlike the engine, nothing is retried: a handler's error (or panic) is
// returned, naming the handler and the object, and the object stays out
// of that index, as it does in the engine until a retry succeeds. Call it
// once per resource when indices come from several kinds.
func Index[T client.Object](indices *indexing.Indices, res *handlers.Resource[T], objs ...T) error {
	kind := registry.KindOf(res)
	if kind == nil {
		return errors.New("handlertest.Index: the resource was not made by handlers.For, ForKind or their kin")
	}
	var errs []error
	for _, obj := range objs {
		body, err := Body(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objectKey := obj.GetNamespace() + "/" + obj.GetName() + "/" + string(obj.GetUID())
		for _, h := range kind.Indexing {
			ix := indices.Ensure(h.ID)
			if err := index(ix, h, obj, body, objectKey, indices); err != nil {
				errs = append(errs, fmt.Errorf("index handler %q on %s/%s: %w", h.ID, obj.GetNamespace(), obj.GetName(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// index runs one index handler on one object.
func index(ix *indexing.Index, h *registry.IndexHandler, obj client.Object, body map[string]any, objectKey string, indices *indexing.Indices) error {
	var filterPanic error
	c := &cause.Change{Body: body, Patch: patch.New(), Memo: &memo.Memo{}, Indices: indices}
	s := &registry.Subject{Obj: obj, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Cause: c,
		FilterPanicked: func(_ *execution.Handler, p *contain.Panic) { filterPanic = fmt.Errorf("its filter panicked: %w", p) }}
	if !h.Matches(s) {
		ix.Remove(objectKey)
		return filterPanic
	}
	call := *c
	call.HandlerID, call.Param = h.ID, h.Param
	var result any
	var err error
	if p := contain.Call(func() { result, err = h.Fn(context.Background(), obj, &call) }); p != nil {
		err = fmt.Errorf("it panicked: %w", p)
	}
	if err != nil {
		ix.Remove(objectKey)
		return err
	}
	if entries, ok := indexing.Entries(result); ok {
		ix.Replace(objectKey, entries)
	}
	return nil
}
