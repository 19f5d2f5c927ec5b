package handlertest

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
)

// Child is the cause of a child handler (handlers.OnChild), as the engine
// builds it: for cause.ChildChanged, from old to child; for
// cause.ChildDeleted, child is the last state; for cause.ChildExisting
// and cause.ChildCreated, old is ignored. field, if not empty, narrows
// Old, New and Diff to that field, as for a handler registered with
// handlers.Field.
func Child(reason cause.ChildReason, old, child client.Object, field string) *cause.Child {
	c := &cause.Child{Reason: reason, Body: mustBody(child), Memo: &memo.Memo{}, Indices: &indexing.Indices{}, Started: time.Now()}
	switch reason {
	case cause.ChildDeleted:
		c.Old = withoutVersion(child)
	case cause.ChildChanged:
		if old != nil {
			c.Old = withoutVersion(old)
		}
		c.New = withoutVersion(child)
	default:
		c.New = withoutVersion(child)
	}
	c.Diff = diff.Compute(c.Old, c.New)
	if field != "" {
		path := fields.Parse(field)
		c.Old, _ = fields.Resolve(c.Old, path)
		c.New, _ = fields.Resolve(c.New, path)
		c.Diff = c.Diff.Reduce(path)
	}
	return c
}

// withoutVersion is the object as a map, without its resourceVersion and
// managedFields, as child handlers see Old and New.
func withoutVersion(obj client.Object) map[string]any {
	body := fields.DeepCopy(mustBody(obj)).(map[string]any)
	if meta, ok := body["metadata"].(map[string]any); ok {
		delete(meta, "resourceVersion")
		delete(meta, "managedFields")
	}
	return body
}
