package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

func TestMergeKeepsEveryHandlerInOrder(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	change := func(id string) *ChangeHandler {
		return &ChangeHandler{Handler: execution.Handler{ID: id}, Reason: causes.Create}
	}
	byName := &Kind{Changing: []*ChangeHandler{change("a")}, Spawning: []*SpawnHandler{{Handler: execution.Handler{ID: "d"}}}}
	byCategory := &Kind{Changing: []*ChangeHandler{change("b")}, Watching: []*EventHandler{{Handler: execution.Handler{ID: "e"}}}}
	got, err := Merge(gvk, []*Kind{byName, byCategory})
	if err != nil {
		t.Fatal(err)
	}
	if got.GVK != gvk || len(got.Changing) != 2 || got.Changing[0].ID != "a" || got.Changing[1].ID != "b" ||
		len(got.Spawning) != 1 || len(got.Watching) != 1 {
		t.Errorf("Merge() = %+v, want a, b, one daemon and one on-event handler at %s", got, gvk)
	}

	if _, err := Merge(gvk, []*Kind{byName, {Changing: []*ChangeHandler{change("a")}}}); err == nil {
		t.Error("Merge() of two handlers with one id for one cause = nil error, want one")
	}
}
