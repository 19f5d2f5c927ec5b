package reactor

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/registry"
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
		before   func(m *memories)
	}{
		{"forgotten by the reconcile before the event", []*registry.ChangeHandler{{}}, func(m *memories) {
			m.notice(obj.GetUID(), key, true)
			m.forget(key)
		}},
		{"on-event handlers only: the event forgets", nil, func(m *memories) {
			m.notice(obj.GetUID(), key, true)
		}},
	}
	for _, tt := range tests {
		seen = nil
		kind := &registry.Kind{GVK: gvk, Watching: []*registry.EventHandler{watching}, Changing: tt.changing}
		r := &reconciler{kindState: &kindState{kindObjects: kindObjects{kind: kind, gvk: gvk}, memories: newMemories(&memo.Memo{}, nil, nil), own: unshared{}, settings: resolved(t, Settings{})}}
		tt.before(r.memories)
		l := &lowLevel{r: r, ctx: context.Background(), log: logr.Discard()}
		l.OnDelete(obj)
		if len(seen) != 1 || seen[0] != causes.EventDeleted {
			t.Errorf("%s: the on-event handler saw %v, want one %s", tt.name, seen, causes.EventDeleted)
		}
		if n := r.memories.size(); n != 0 {
			t.Errorf("%s: %d objects remembered after the DELETED event, want 0", tt.name, n)
		}
	}
}
