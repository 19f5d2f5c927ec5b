package cycle

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/write/writetest"
)

// handingOverRig is the cycle of a kind with on-event handlers whose every
// object is to be handed over to "m-b"; settled records the handover's
// outcomes.
func handingOverRig(t *testing.T) (*cycleRig, *[]bool) {
	var settled []bool
	rig := newCycleRig(t, writetest.Object("a", writetest.Handled("a")), func(string) (any, error) { return nil, nil },
		WithOwnership(handingTo{next: "m-b", settled: &settled}))
	rig.r.kind.Registered.Watching = []*registry.EventHandler{{}}
	return rig, &settled
}

// The owner that lets go writes the acknowledgement, and remembers, for
// its on-event handlers, that the object's coming DELETED event (the
// object leaving its cache) is no deletion: once.
func TestHandOverRemembersTheObjectForItsDeletedEvent(t *testing.T) {
	rig, settled := handingOverRig(t)
	if result, err := rig.reconcile(t); err != nil || result.RequeueAfter != 0 {
		t.Fatalf("Reconcile() = %v, %v; want the handover done", result, err)
	}
	if got := rig.read(t).GetLabels()["owner"]; got != "m-b" {
		t.Errorf("owner label %q after the handover, want m-b", got)
	}
	if len(*settled) != 1 || !(*settled)[0] {
		t.Errorf("settled %v, want one written handover", *settled)
	}
	if !rig.r.WasHandedOver("uid-kex") || rig.r.WasHandedOver("uid-kex") {
		t.Errorf("the handed-over object is not remembered exactly once for its DELETED event")
	}
}

// An owner that lets go of an object in an old version writes nothing:
// the object changed since, and the next cycle looks at it again; it is
// not taken as handed over.
func TestHandOverOfAStaleObjectIsRetried(t *testing.T) {
	rig, settled := handingOverRig(t)
	// The cache shows the object as it was before someone else's write.
	stale := rig.read(t)
	if err := rig.C.Patch(context.Background(), stale.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"field":"b"}}`))); err != nil {
		t.Fatal(err)
	}
	cached := &staleReader{obj: stale}
	rig.r.reader = cached
	result, err := rig.reconcile(t)
	if err != nil || result.RequeueAfter <= 0 {
		t.Fatalf("Reconcile() of a stale object = %v, %v; want a retry", result, err)
	}
	if owner := rig.read(t).GetLabels()["owner"]; owner != "" {
		t.Errorf("the stale handover moved the owner label to %q", owner)
	}
	if len(*settled) != 1 || (*settled)[0] {
		t.Errorf("settled %v, want one handover that was not written", *settled)
	}
	if rig.r.WasHandedOver("uid-kex") {
		t.Errorf("an object whose handover failed is taken as handed over")
	}
}
