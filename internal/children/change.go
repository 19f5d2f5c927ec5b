package children

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/fields"
)

// Change is a child's change as its handlers see it: Old and New without
// their resourceVersion and managedFields, nil where a state is absent
// (a nil interface, not a nil map), and the diff between them. The
// engine builds causes with it, and so does pkg/handlertest.
func Change(old, new client.Object) (oldBody, newBody any, d diff.Diff, err error) {
	if old != nil {
		if oldBody, err = toMap(old); err != nil {
			return nil, nil, nil, err
		}
	}
	if new != nil {
		if newBody, err = toMap(new); err != nil {
			return nil, nil, nil, err
		}
	}
	return oldBody, newBody, diff.Compute(oldBody, newBody), nil
}

// Narrow is the cause as a handler of the field sees it: the field's old
// and new values, and the diff within it.
func Narrow(c cause.Child, field fields.Path) cause.Child {
	c.Old, _ = fields.Resolve(c.Old, field)
	c.New, _ = fields.Resolve(c.New, field)
	c.Diff = c.Diff.Reduce(field)
	return c
}

// toMap is the child without its resourceVersion, as a JSON-like map of
// its own (the informer's object is shared).
func toMap(obj client.Object) (map[string]any, error) {
	var body map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		body = u.DeepCopy().Object
	} else {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		body = m
	}
	if meta, ok := body["metadata"].(map[string]any); ok {
		delete(meta, "resourceVersion")
		delete(meta, "managedFields")
	}
	return body, nil
}
