package write

import (
	"context"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/write/writetest"
	"github.com/kopf-go/kopf/pkg/patch"
)

// guardRig is a writer of the example kind on the rig's client.
type guardRig struct {
	*writetest.Rig
	w *Writer
}

func newGuardRig(t *testing.T, withStatus bool) *guardRig {
	t.Helper()
	rig := writetest.NewRig(t)
	cs := clients.NewCurrent(rig.C)
	cs.Set(rig.C)
	return &guardRig{Rig: rig, w: New(writetest.GVK, writetest.Finalizer, cs, FixedProbe(withStatus), Timeout)}
}

func cyclePatch() *patch.Patch {
	p := patch.New()
	p.SetLabel("handled", "yes")
	if err := mergepatch.SetResult(p, "create_fn", map[string]any{"done": true}); err != nil {
		panic(err)
	}
	return p
}

// A write lands on the object it was decided for, or on nothing: the
// status patch carries the resourceVersion the cycle read (and goes again
// with a fresh one after a conflict, if the object is still the same), the
// main patch carries the uid. In between the read and the write, the row
// changes the object as others would.
func TestWriteGuards(t *testing.T) {
	tests := []struct {
		name       string
		withStatus bool
		fin        Finalizer
		meanwhile  func(t *testing.T, rig *guardRig)
		// during: someone else writes before each patch of the object.
		during bool

		requests []string
		stored   *writetest.Stored
		gone     string // "deleted", "replaced", or "" (not gone)
		conflict bool   // the write's error is a conflict
		noStatus bool   // /status answers 404, the object is there
		failed   bool   // the write fails, and the object is not gone
	}{
		{name: "unchanged", withStatus: true,
			requests: []string{"patch status", "patch"},
			stored:   &writetest.Stored{UID: "uid-kex", Label: "yes", Result: true}},
		{name: "changed since the read: the status goes again with the fresh version", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.SomeoneWrites(t) },
			requests:  []string{"patch status 409", "patch", "patch status", "patch"},
			stored:    &writetest.Stored{UID: "uid-kex", Label: "yes", Result: true}},
		{name: "replaced under its name: the successor gets nothing", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.Recreate(t) },
			requests:  []string{"patch status 409", "patch 422"},
			stored:    &writetest.Stored{UID: "uid-next"}, gone: "replaced"},
		{name: "deleted", withStatus: true,
			meanwhile: func(t *testing.T, rig *guardRig) {
				if err := rig.Raw.Delete(context.Background(), writetest.Object("a", nil)); err != nil {
					t.Fatal(err)
				}
			},
			requests: []string{"patch status 404", "patch 404"}, gone: "deleted"},
		{name: "the status subresource is not served: a failed write, the object not gone", withStatus: true, noStatus: true,
			requests: []string{"patch status 404", "patch"},
			stored:   &writetest.Stored{UID: "uid-kex"}, failed: true},
		{name: "changing at every attempt: the conflict is the write's error", withStatus: true, during: true,
			requests: []string{"patch status 409", "patch", "patch status 409", "patch", "patch status 409"},
			stored:   &writetest.Stored{UID: "uid-kex"}, conflict: true},
		{name: "without /status, replaced: the uid refuses the main patch",
			meanwhile: func(t *testing.T, rig *guardRig) { rig.Recreate(t) },
			requests:  []string{"patch 422"},
			stored:    &writetest.Stored{UID: "uid-next"}, gone: "replaced"},
		{name: "a finalizer change on a replaced object: its version conflicts, then the uid refuses the rest", fin: AddFinalizer,
			meanwhile: func(t *testing.T, rig *guardRig) { rig.Recreate(t) },
			requests:  []string{"patch 409", "patch 422"},
			stored:    &writetest.Stored{UID: "uid-next"}, gone: "replaced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newGuardRig(t, tt.withStatus)
			rig.NoStatus = tt.noStatus
			obj := rig.Read(t)
			if tt.meanwhile != nil {
				tt.meanwhile(t, rig)
			}
			if tt.during {
				rig.BeforePatch = func() { rig.SomeoneWrites(t) }
			}
			rig.Requests, rig.Bodies = nil, nil
			p := cyclePatch()
			_, err := rig.w.Commit(context.Background(), logr.Discard(), obj, p, tt.fin)
			rig.BeforePatch = nil
			if diff := cmp.Diff(tt.requests, rig.Requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.Bodies)
			}
			gone, isGone := AsGone(err)
			switch {
			case tt.gone == "" && isGone:
				t.Errorf("commit() = %v, want the object not gone", err)
			case tt.gone != "" && !isGone:
				t.Errorf("commit() = %v, want the object %s", err, tt.gone)
			case isGone && gone.Replaced != (tt.gone == "replaced"):
				t.Errorf("commit() = %v, want the object %s", err, tt.gone)
			case tt.conflict != apierrors.IsConflict(err):
				t.Errorf("commit() = %v, want a conflict: %v", err, tt.conflict)
			case tt.failed != (err != nil && !isGone && !tt.conflict):
				t.Errorf("commit() = %v, want a failed write: %v", err, tt.failed)
			}
			if diff := cmp.Diff(tt.stored, rig.Stored(t)); diff != "" {
				t.Errorf("the object under the name -want +got:\n%s", diff)
			}
			for _, body := range rig.Bodies {
				if !strings.HasPrefix(body, "status ") && !strings.Contains(body, `"uid":"uid-kex"`) {
					t.Errorf("a main patch without the uid: %s", body)
				}
				if strings.HasPrefix(body, "status ") && !strings.Contains(body, `"resourceVersion":"`) {
					t.Errorf("a status patch without the resourceVersion: %s", body)
				}
			}
			// The patch stays as the cycle made it: kept for the next
			// cycle, it must not carry this write's preconditions.
			if diff := cmp.Diff(mergepatch.Whole(cyclePatch()), mergepatch.Whole(p)); diff != "" {
				t.Errorf("the cycle's patch after the write -want +got:\n%s", diff)
			}
		})
	}
}
