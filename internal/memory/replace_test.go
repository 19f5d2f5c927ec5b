package memory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/pkg/memo"
)

// An object created anew under a known name replaces the memory of the
// one before, and the one before is told of as gone (its daemons and
// timers stop), whether the new one is first seen by its event or by a
// reconcile; the same object seen again replaces nothing.
func TestMemoriesReplaceByName(t *testing.T) {
	var replaced []types.UID
	m := NewStore(&memo.Memo{}, nil, nil, func(uid types.UID) { replaced = append(replaced, uid) })
	key := types.NamespacedName{Namespace: "ns", Name: "kex"}
	first := m.Recall("uid-1", key)
	first.FullyHandledOnce = true
	m.Recall("uid-1", key)
	m.Notice("uid-2", key, false)
	second := m.Recall("uid-2", key)
	m.Recall("uid-3", key)
	if diff := cmp.Diff([]types.UID{"uid-1", "uid-2"}, replaced); diff != "" {
		t.Errorf("replaced -want +got:\n%s", diff)
	}
	if second == first || second.FullyHandledOnce {
		t.Error("the new object got the memory of the one before")
	}
	if m.Size() != 1 {
		t.Errorf("%d memories, want the newest object's only", m.Size())
	}
}
