package lowlevel

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
)

// TestDeletedEventRemembersNothing: the DELETED raw event of an object
// comes to the on-event handlers after (or while) its reconcile forgets
// it; handling the event must not bring its memory back, or it stays for
// good (nothing forgets it again). A kind with on-event handlers only has
// no reconciles at all: its DELETED event is what forgets the object.
func TestDeletedEventRemembersNothing(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	obj.SetUID("uid-a")
	var seen []string
	watching := &registry.EventHandler{Fn: func(_ context.Context, _ registry.Object, e *causes.Event) (any, error) {
		seen = append(seen, e.Type)
		return nil, nil
	}}
	watching.ID = "watch"
	tests := []struct {
		name     string
		changing []*registry.ChangeHandler
		before   func(m *memory.Store)
	}{
		{"forgotten by the reconcile before the event", []*registry.ChangeHandler{{}}, func(m *memory.Store) {
			m.Notice(obj.GetUID(), key, true)
			m.Forget(key)
		}},
		{"on-event handlers only: the event forgets", nil, func(m *memory.Store) {
			m.Notice(obj.GetUID(), key, true)
		}},
	}
	for _, tt := range tests {
		seen = nil
		kind := &registry.Kind{GVK: gvk, Watching: []*registry.EventHandler{watching}, Changing: tt.changing}
		mems := memory.NewStore(&memo.Memo{}, nil, nil, nil)
		tt.before(mems)
		l := New(context.Background(), Kind{Registered: kind, Objects: objects.Kind{Registered: kind, GVK: gvk}, Memories: mems,
			Own: ownership.Unshared{}, Indices: &indexing.Indices{}, Clock: clock.RealClock{}, HandedOver: func(types.UID) bool { return false },
			Reconciles: len(tt.changing) > 0, Context: func(ctx context.Context, _ logr.Logger) context.Context { return ctx }}, logr.Discard())
		l.OnDelete(obj)
		if len(seen) != 1 || seen[0] != causes.EventDeleted {
			t.Errorf("%s: the on-event handler saw %v, want one %s", tt.name, seen, causes.EventDeleted)
		}
		if n := mems.Size(); n != 0 {
			t.Errorf("%s: %d objects remembered after the DELETED event, want 0", tt.name, n)
		}
	}
}
