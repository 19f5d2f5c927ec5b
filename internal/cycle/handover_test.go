package cycle

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// An owner that lets go of an object in an old version (its cache lags,
// its watch may be stalled) meets a conflict, reads the object's live
// version, and hands it over with that: the handover completes in the
// cycle, whatever the cache.
func TestHandOverOfAStaleObjectReadsItLive(t *testing.T) {
	rig, settled := handingOverRig(t)
	stale := rig.read(t)
	if err := rig.C.Patch(context.Background(), stale.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"field":"b"}}`))); err != nil {
		t.Fatal(err)
	}
	rig.r.reader = &staleReader{obj: stale}
	if result, err := rig.reconcile(t); err != nil || result.RequeueAfter != 0 {
		t.Fatalf("Reconcile() of a stale object = %v, %v; want the handover done", result, err)
	}
	if owner := rig.read(t).GetLabels()["owner"]; owner != "m-b" {
		t.Errorf("owner label %q after the handover, want m-b", owner)
	}
	if len(*settled) != 1 || !(*settled)[0] {
		t.Errorf("settled %v, want one written handover", *settled)
	}
	if !rig.r.WasHandedOver("uid-kex") {
		t.Errorf("the handed-over object is not remembered for its DELETED event")
	}
}

// An owner whose stale object turns out, when read live, to be no longer
// its own (moved meanwhile) writes nothing, and is done with it.
func TestHandOverOfAnObjectMovedMeanwhileWritesNothing(t *testing.T) {
	var settled []bool
	rig := newCycleRig(t, writetest.Object("a", writetest.Handled("a")), func(string) (any, error) { return nil, nil },
		WithOwnership(fencedHandingTo{handingTo{next: "m-b", settled: &settled}}))
	rig.r.kind.Registered.Watching = []*registry.EventHandler{{}}
	stale := rig.read(t)
	if err := rig.C.Patch(context.Background(), stale.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"owner":"m-c"}}}`))); err != nil {
		t.Fatal(err)
	}
	rig.r.reader = &staleReader{obj: stale}
	if result, err := rig.reconcile(t); err != nil || result.RequeueAfter != 0 {
		t.Fatalf("Reconcile() = %v, %v; want nothing more to do", result, err)
	}
	if owner := rig.read(t).GetLabels()["owner"]; owner != "m-c" {
		t.Errorf("owner label %q, want m-c as it was moved", owner)
	}
	if len(settled) != 1 || settled[0] {
		t.Errorf("settled %v, want one handover that was not written", settled)
	}
	if rig.r.WasHandedOver("uid-kex") {
		t.Errorf("an object whose handover was not written is taken as handed over")
	}
}

// fencedHandingTo hands every object over, and may write to one only
// while no owner label is on it.
type fencedHandingTo struct{ handingTo }

func (fencedHandingTo) Fence() func(metav1.Object) error {
	return func(obj metav1.Object) error {
		if o := obj.GetLabels()["owner"]; o != "" {
			return errors.New("owned by " + o)
		}
		return nil
	}
}
