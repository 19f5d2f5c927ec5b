package cycle

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ownership"
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

// strayUntilHandedOver is a ring member's ownership as a fake: an object
// labelled stage=stray is handed over to m-b, one whose owner label names
// m-b is another member's, and any other is this member's to work on (as
// an object of its own being deleted is: its owner completes the
// deletion).
type strayUntilHandedOver struct{ handingTo }

func (s strayUntilHandedOver) Claim(obj client.Object, _ time.Time) ownership.Claim {
	switch {
	case obj.GetLabels()["owner"] == "m-b":
		return ownership.Claim{Kind: ownership.StandBy, Why: "the owner label names another member"}
	case obj.GetLabels()["stage"] == "stray":
		return ownership.Claim{Kind: ownership.HandOver, Next: "m-b"}
	}
	return ownership.Claim{}
}

// A member whose cache lags hands an object over with its live version;
// its cache may then show a version from between the one it read and the
// handover, with its own labels still on it. No cycle works on such a
// version (the handlers would run beside the next owner's, as they did
// on an object deleted meanwhile in a chaos run): it stands by until the
// cache shows the handover, and then forgets it.
func TestNoCycleWorksOnAVersionFromBeforeItsHandover(t *testing.T) {
	var settled []bool
	rig := newCycleRig(t, writetest.Object("a", writetest.Handled("a")), counted(),
		WithOwnership(strayUntilHandedOver{handingTo{next: "m-b", settled: &settled}}))
	ctx := context.Background()
	if err := rig.C.Patch(ctx, rig.read(t), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"stage":"stray"}}}`))); err != nil {
		t.Fatal(err)
	}
	read := rig.read(t) // what the lagging cache shows: to be handed over
	if err := rig.C.Patch(ctx, read.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"field":"b"}}`))); err != nil {
		t.Fatal(err)
	}
	between := rig.read(t) // changed since: the handover's first write conflicts
	rig.r.reader = &staleReader{obj: read}
	if result, err := rig.reconcile(t); err != nil || result.RequeueAfter != 0 {
		t.Fatalf("Reconcile() of a stale object = %v, %v; want the handover done", result, err)
	}
	handedOver := rig.read(t)
	if handedOver.GetLabels()["owner"] != "m-b" || len(settled) != 1 || !settled[0] {
		t.Fatalf("owner label %q, settled %v; want the object handed over to m-b", handedOver.GetLabels()["owner"], settled)
	}
	if at := rig.memory().HandedOverAt; at != handedOver.GetResourceVersion() {
		t.Errorf("the handover is remembered at version %q, want %q", at, handedOver.GetResourceVersion())
	}

	// The cache shows the version from between, with this member's labels
	// and without the request to hand it over: taken alone, it is this
	// member's, and its change would be handled.
	stale := between.DeepCopy()
	labels := stale.GetLabels()
	delete(labels, "stage")
	stale.SetLabels(labels)
	rig.r.reader = &staleReader{obj: stale}
	if result, err := rig.reconcile(t); err != nil || result.RequeueAfter != 0 {
		t.Fatalf("Reconcile() of a version from before the handover = %v, %v; want it stood by", result, err)
	}
	if len(rig.handlers.Calls) != 0 {
		t.Errorf("handlers ran on a version from before the handover: %v", rig.handlers.Calls)
	}
	if rig.memory().HandedOverAt == "" {
		t.Error("the handover was forgotten before the cache showed it")
	}

	rig.r.reader = &staleReader{obj: handedOver}
	if _, err := rig.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if at := rig.memory().HandedOverAt; at != "" || len(rig.handlers.Calls) != 0 {
		t.Errorf("with the handover in the cache: remembered at %q, handlers %v; want it forgotten and nothing run", at, rig.handlers.Calls)
	}
}
