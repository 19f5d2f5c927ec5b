package write

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/write/writetest"
)

// grantedTo is the fence of a ring member "me": the annotation "grant"
// must name it.
func grantedTo(me string) Fence {
	return func(obj metav1.Object) error {
		if g := obj.GetAnnotations()["grant"]; g != me {
			return errors.New("granted to " + g)
		}
		return nil
	}
}

// grant writes the grant annotation as a handover would.
func grant(t *testing.T, rig *guardRig, to string) {
	t.Helper()
	p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"grant":"`+to+`"}}}`))
	if err := rig.Raw.Patch(context.Background(), writetest.Object("a", nil), p); err != nil {
		t.Fatal(err)
	}
}

// A fenced writer lands a write only while the object is still its
// replica's, as the API server has it when the write arrives: every patch
// carries the version the decision saw; a conflict reads the object live
// and goes again only if the fence holds there; a move meanwhile writes
// nothing and says so.
func TestFencedWrites(t *testing.T) {
	tests := []struct {
		name       string
		withStatus bool
		meanwhile  func(t *testing.T, rig *guardRig)
		requests   []string
		stored     *writetest.Stored
		fenced     bool
	}{
		{name: "unchanged", withStatus: true,
			requests: []string{"patch status", "patch"},
			stored:   &writetest.Stored{UID: "uid-kex", Label: "yes", Result: true}},
		{name: "changed by someone else: both go again with the fresh version", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.SomeoneWrites(t) },
			requests:  []string{"patch status 409", "patch", "patch status", "patch"},
			stored:    &writetest.Stored{UID: "uid-kex", Label: "yes", Result: true}},
		{name: "moved meanwhile: nothing lands", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) { grant(t, rig, "other") },
			requests:  []string{"patch status 409", "patch"},
			stored:    &writetest.Stored{UID: "uid-kex"}, fenced: true},
		{name: "without /status, moved meanwhile: the main patch's version refuses it",
			meanwhile: func(t *testing.T, rig *guardRig) { grant(t, rig, "other") },
			requests:  []string{"patch 409", "patch"},
			stored:    &writetest.Stored{UID: "uid-kex"}, fenced: true},
		{name: "without /status, changed by someone else: the main patch goes again",
			meanwhile: func(t *testing.T, rig *guardRig) { rig.SomeoneWrites(t) },
			// (The rig's client keeps no status written to the object.)
			requests: []string{"patch 409", "patch", "patch"},
			stored:   &writetest.Stored{UID: "uid-kex", Label: "yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newGuardRig(t, tt.withStatus)
			rig.w.WithFence(grantedTo("me"))
			grant(t, rig, "me")
			obj := rig.Read(t)
			if tt.meanwhile != nil {
				tt.meanwhile(t, rig)
			}
			rig.Requests, rig.Bodies = nil, nil
			_, err := rig.w.Commit(context.Background(), logr.Discard(), obj, cyclePatch(), KeepFinalizer)
			if diff := cmp.Diff(tt.requests, rig.Requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.Bodies)
			}
			if _, fenced := AsFenced(err); fenced != tt.fenced || !fenced && err != nil {
				t.Errorf("commit() = %v, want fenced: %v", err, tt.fenced)
			}
			if diff := cmp.Diff(tt.stored, rig.Stored(t)); diff != "" {
				t.Errorf("the object -want +got:\n%s", diff)
			}
			for _, body := range rig.Bodies {
				if body != `{"metadata":{"uid":"uid-kex"}}` && !strings.Contains(body, `"resourceVersion":"`) {
					t.Errorf("a fenced write without the resourceVersion: %s", body)
				}
			}
		})
	}
}

// An object that the write's own view shows moved gets nothing sent; an
// unfenced writer sends its main patch without a version, as before.
func TestFenceBeforeSending(t *testing.T) {
	rig := newGuardRig(t, true)
	rig.w.WithFence(grantedTo("me"))
	grant(t, rig, "other")
	obj := rig.Read(t)
	rig.Requests = nil
	if _, err := rig.w.Commit(context.Background(), logr.Discard(), obj, cyclePatch(), KeepFinalizer); err == nil {
		t.Error("a write to an object granted to another member was not refused")
	} else if _, ok := AsFenced(err); !ok {
		t.Errorf("commit() = %v, want a *FencedError", err)
	}
	if len(rig.Requests) != 0 {
		t.Errorf("requests %v, want none", rig.Requests)
	}

	unfenced := newGuardRig(t, false)
	obj = unfenced.Read(t)
	unfenced.Bodies = nil
	if _, err := unfenced.w.Commit(context.Background(), logr.Discard(), obj, cyclePatch(), KeepFinalizer); err != nil {
		t.Fatal(err)
	}
	for _, body := range unfenced.Bodies {
		if strings.Contains(body, "resourceVersion") {
			t.Errorf("an unfenced main patch with a version: %s", body)
		}
	}
}

// adoptedBy is the claim of a ring member "me" that adopts objects whose
// grant names "retired": its owner label and grant moved to "me", guarded
// by the version seen. The fence lets "me" write to both.
func adoptedBy(me string) (Fence, Claim) {
	fence := func(obj metav1.Object) error {
		if g := obj.GetAnnotations()["grant"]; g != me && g != "retired" {
			return errors.New("granted to " + g)
		}
		return nil
	}
	claim := func(obj metav1.Object) map[string]any {
		if obj.GetAnnotations()["grant"] != "retired" {
			return nil
		}
		return map[string]any{"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(),
			"annotations": map[string]any{"grant": me}}}
	}
	return fence, claim
}

// An adopted object is claimed before the first write to it, in a patch
// of its own guarded by the version the decision saw, and the write goes
// with the version the claim left; a claimed object is claimed no more.
// A claim that meets a change by someone else goes again with the live
// version; one that finds the object granted to another member writes
// nothing at all.
func TestAnAdoptedObjectIsClaimedFirst(t *testing.T) {
	tests := []struct {
		name      string
		meanwhile func(t *testing.T, rig *guardRig)
		requests  []string
		grant     string
		fenced    bool
	}{
		{name: "claimed, then written", requests: []string{"patch", "patch status", "patch"}, grant: "me"},
		{name: "changed by someone else: claimed with the live version",
			meanwhile: func(t *testing.T, rig *guardRig) { rig.SomeoneWrites(t) },
			requests:  []string{"patch 409", "patch", "patch", "patch status", "patch"}, grant: "me"},
		{name: "granted to another member meanwhile: nothing lands",
			meanwhile: func(t *testing.T, rig *guardRig) { grant(t, rig, "other") },
			requests:  []string{"patch 409", "patch"}, grant: "other", fenced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newGuardRig(t, true)
			fence, claim := adoptedBy("me")
			rig.w.WithFence(fence).WithClaim(claim, nil)
			grant(t, rig, "retired")
			obj := rig.Read(t)
			if tt.meanwhile != nil {
				tt.meanwhile(t, rig)
			}
			rig.Requests, rig.Bodies = nil, nil
			_, err := rig.w.Commit(context.Background(), logr.Discard(), obj, cyclePatch(), KeepFinalizer)
			if diff := cmp.Diff(tt.requests, rig.Requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.Bodies)
			}
			if _, fenced := AsFenced(err); fenced != tt.fenced || !fenced && err != nil {
				t.Errorf("commit() = %v, want fenced: %v", err, tt.fenced)
			}
			if got := rig.Read(t).GetAnnotations()["grant"]; got != tt.grant {
				t.Errorf("the object is granted to %q, want %q", got, tt.grant)
			}
			if !tt.fenced && !strings.Contains(rig.Bodies[len(rig.Bodies)-3], `"grant":"me"`) {
				t.Errorf("the first patch that landed is not the claim: %q", rig.Bodies)
			}
			again := rig.Read(t)
			rig.Requests = nil
			if _, err := rig.w.Commit(context.Background(), logr.Discard(), again, cyclePatch(), KeepFinalizer); !tt.fenced && err != nil {
				t.Fatal(err)
			}
			if !tt.fenced && slices.Contains(rig.Requests, "patch 409") || !tt.fenced && len(rig.Requests) != 2 {
				t.Errorf("a second write of a claimed object: requests %v, want the status patch and the patch", rig.Requests)
			}
		})
	}
}

// A write decided while the object was this replica's own, which meets
// the object moved meanwhile to a member retired since, whose objects
// this replica adopts, claims the object before it goes again: its first
// write to an adopted object, as every other (the fault suite found the
// result written on the retired member's grant).
func TestAnObjectAdoptedMeanwhileIsClaimedBeforeTheWriteGoesAgain(t *testing.T) {
	tests := []struct {
		name       string
		withStatus bool
		requests   []string
	}{
		{name: "the status patch", withStatus: true,
			requests: []string{"patch status 409", "patch", "patch", "patch status", "patch"}},
		{name: "without /status, the main patch", withStatus: false,
			requests: []string{"patch 409", "patch", "patch", "patch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newGuardRig(t, tt.withStatus)
			fence, claim := adoptedBy("me")
			rig.w.WithFence(fence).WithClaim(claim, nil)
			grant(t, rig, "me")
			obj := rig.Read(t)
			grant(t, rig, "retired")
			rig.Requests, rig.Bodies = nil, nil
			if _, err := rig.w.Commit(context.Background(), logr.Discard(), obj, cyclePatch(), KeepFinalizer); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.requests, rig.Requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.Bodies)
			}
			claimAt := len(tt.requests) - 3
			if !tt.withStatus {
				claimAt = len(tt.requests) - 2
			}
			if !strings.Contains(rig.Bodies[claimAt], `"grant":"me"`) {
				t.Errorf("the patch after the refresh is not the claim: %q", rig.Bodies)
			}
			if got := rig.Read(t).GetAnnotations()["grant"]; got != "me" {
				t.Errorf("the object is granted to %q, want me: claimed", got)
			}
		})
	}
}
