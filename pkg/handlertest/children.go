package handlertest

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/children"
	"github.com/kopf-go/kopf/pkg/cause"
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
	before, after := old, child
	switch reason {
	case cause.ChildDeleted:
		before, after = child, nil
	case cause.ChildExisting, cause.ChildCreated:
		before = nil
	}
	var err error
	if c.Old, c.New, c.Diff, err = children.Change(before, after); err != nil {
		panic(err) // a test's object that cannot be a map is the test's bug
	}
	if field != "" {
		*c = children.Narrow(*c, fields.Parse(field))
	}
	return c
}
