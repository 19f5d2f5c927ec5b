package reactor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// errorLine is an error line of a cycle: its message, and whether it
// carries a goroutine's stack.
type errorLine struct {
	Msg     string
	Stacked bool
}

// reconcileLogging runs one cycle with a logger that keeps its error
// lines.
func reconcileLogging(t *testing.T, r *reconciler) (reconcile.Result, error, []errorLine) {
	t.Helper()
	var lines []errorLine
	log := funcr.NewJSON(func(obj string) {
		var line map[string]any
		if err := json.Unmarshal([]byte(obj), &line); err != nil {
			t.Errorf("a log line is not JSON: %s", obj)
			return
		}
		if _, isError := line["error"]; !isError {
			return
		}
		stack, _ := line["stack"].(string)
		lines = append(lines, errorLine{Msg: line["msg"].(string), Stacked: len(stack) > len("goroutine ") && stack[:len("goroutine ")] == "goroutine "})
	}, funcr.Options{})
	result, err := r.Reconcile(logr.NewContext(context.Background(), log),
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "kex"}})
	return result, err, lines
}

// brokenProgress and brokenDiffBase panic in one method of theirs.
type brokenProgress struct {
	progress.Storage
	method string
}

func (b brokenProgress) Fetch(body map[string]any, id string) (*progress.Record, error) {
	b.panicIn("Fetch")
	return b.Storage.Fetch(body, id)
}

func (b brokenProgress) Store(body map[string]any, p *patch.Patch, id string, r progress.Record) {
	b.panicIn("Store")
	b.Storage.Store(body, p, id, r)
}

func (b brokenProgress) panicIn(method string) {
	if b.method == method {
		panic("the storage is broken")
	}
}

type brokenDiffBase struct {
	diffbase.Storage
	method string
}

func (b brokenDiffBase) Build(body map[string]any, extra []fields.Path) map[string]any {
	if b.method == "Build" {
		panic("the storage is broken")
	}
	return b.Storage.Build(body, extra)
}

func (b brokenDiffBase) Store(body map[string]any, p *patch.Patch, essence map[string]any) string {
	if b.method == "Store" {
		panic("the storage is broken")
	}
	return b.Storage.Store(body, p, essence)
}

// TestStoragePanicEndsTheCycle: a storage's panic, wherever in the cycle,
// ends it as Kopf's exception there does: nothing is written (the handler
// that ran runs again), the object is throttled after the first of the
// error delays, and the log says which method panicked, with the stack.
func TestStoragePanicEndsTheCycle(t *testing.T) {
	tests := []struct {
		name      string
		settings  Settings
		wantCalls []string
		wantLine  string
	}{
		{name: "the progress storage's Fetch, before the handler",
			settings: Settings{Progress: brokenProgress{Storage: progress.NewSmart(), method: "Fetch"}},
			wantLine: "The cycle has ended: ProgressStorage.Fetch panicked: the storage is broken"},
		{name: "the progress storage's Store, after the handler",
			settings:  Settings{Progress: brokenProgress{Storage: progress.NewSmart(), method: "Store"}},
			wantCalls: []string{"create_fn"},
			wantLine:  "The cycle has ended: ProgressStorage.Store panicked: the storage is broken"},
		{name: "the diff-base storage's Build, first of all",
			settings: Settings{DiffBase: brokenDiffBase{Storage: diffbase.NewAnnotations(), method: "Build"}},
			wantLine: "The cycle has ended: DiffBaseStorage.Build panicked: the storage is broken"},
		{name: "the diff-base storage's Store, when all is handled",
			settings:  Settings{DiffBase: brokenDiffBase{Storage: diffbase.NewAnnotations(), method: "Store"}},
			wantCalls: []string{"create_fn"},
			wantLine:  "The cycle has ended: DiffBaseStorage.Store panicked: the storage is broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newCycleRig(t, cycleObject("a", nil), func(string) (any, error) { return nil, nil }, false, false)
			rig.r = newReconciler(rig.r.kindObjects, resolved(t, tt.settings), rig.r.clients, fixedProbe(true), rig.sup, unshared{},
				newMemories(&memo.Memo{}, nil, nil))
			rig.r.throttler.jitter = jitter.Jitter{} // the delay exactly, as Kopf's
			result, err, lines := reconcileLogging(t, rig.r)
			if err != nil || result.RequeueAfter != time.Second {
				t.Errorf("Reconcile() = %+v, %v; want the object throttled for 1 s", result, err)
			}
			if diff := cmp.Diff(tt.wantCalls, rig.calls); diff != "" {
				t.Errorf("calls -want +got:\n%s", diff)
			}
			if rig.writes != 0 {
				t.Errorf("the cycle wrote %q", rig.written)
			}
			want := []errorLine{{Msg: tt.wantLine, Stacked: true},
				{Msg: "Throttling for 1 seconds due to an unexpected error: " + tt.wantLine[len("The cycle has ended: "):]}}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Errorf("error lines -want +got:\n%s", diff)
			}
		})
	}
}

// panickyWrapper is an operator's WrapClient whose Patch panics.
type panickyWrapper struct{ client.Client }

func (panickyWrapper) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	panic("the wrapper is broken")
}

// TestClientWrapperPanicIsAFailedRequest: the engine's write through a
// wrapper that panics fails as a request fails: the cycle's changes are
// kept for the next cycle, and the object is throttled.
func TestClientWrapperPanicIsAFailedRequest(t *testing.T) {
	rig := newCycleRig(t, cycleObject("a", nil), func(string) (any, error) { return nil, nil }, false, false)
	guarded := guardClient(panickyWrapper{rig.c}, logr.Discard())
	cs := &clients{direct: guarded}
	cs.set(guarded)
	rig.r = newReconciler(rig.r.kindObjects, resolved(t, Settings{}), cs, fixedProbe(true), rig.sup, unshared{}, newMemories(&memo.Memo{}, nil, nil))
	rig.r.throttler.jitter = jitter.Jitter{} // the delay exactly, as Kopf's
	result, err, lines := reconcileLogging(t, rig.r)
	if err != nil || result.RequeueAfter != time.Second {
		t.Errorf("Reconcile() = %+v, %v; want the object throttled for 1 s", result, err)
	}
	if diff := cmp.Diff([]string{"create_fn"}, rig.calls); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	if rig.memory().unwritten == nil {
		t.Error("the cycle's changes are lost: nothing is kept to be written")
	}
	var msgs []string
	for _, l := range lines {
		msgs = append(msgs, l.Msg)
	}
	want := []string{
		"The changes of this cycle could not be written; they are kept and written first in the next cycle.",
		"Throttling for 1 seconds due to an unexpected error: patch KopfExample ns/kex: the client's wrapper panicked in Patch: panic: the wrapper is broken",
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("error lines -want +got:\n%s", diff)
	}
}

// TestChangeFilterPanic: a change handler whose filter panics does not
// run; the others do, and the log names the handler, with the stack.
func TestChangeFilterPanic(t *testing.T) {
	rig := newCycleRig(t, cycleObject("a", nil), func(string) (any, error) { return nil, nil }, false, false)
	broken := *rig.r.kind.Changing[0]
	broken.ID = "broken_create"
	broken.When = func(registry.Object, *causes.Cause) bool { panic("the filter is broken") }
	rig.r.kind.Changing = append([]*registry.ChangeHandler{&broken}, rig.r.kind.Changing...)
	_, err, lines := reconcileLogging(t, rig.r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create_fn"}, rig.calls); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	if len(lines) == 0 || lines[0] != (errorLine{Msg: "Handler 'broken_create' does not match: its filter panicked: panic: the filter is broken", Stacked: true}) {
		t.Errorf("error lines = %+v, want the filter's panic first, with the stack", lines)
	}
}

// TestClientWrapperThatPanicsItself: a WrapClient that panics instead of
// returning a client gives the engine a client whose requests fail, with
// the panic as their error.
func TestClientWrapperThatPanicsItself(t *testing.T) {
	rig := newCycleRig(t, cycleObject("a", nil), func(string) (any, error) { return nil, nil }, false, false)
	c := wrapContained(func(client.Client) client.Client { panic("no client today") }, rig.c, logr.Discard())
	obj := cycleObject("a", nil)
	for name, err := range map[string]error{
		"Get":          c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj),
		"Patch":        c.Patch(context.Background(), obj, client.Merge),
		"Status.Patch": c.Status().Patch(context.Background(), obj, client.Merge),
	} {
		var p *contain.Panic
		if !errors.As(err, &p) || p.Value != "no client today" {
			t.Errorf("%s() = %v, want the wrapper's panic", name, err)
		}
	}
	if c.Scheme() == nil {
		t.Error("the client has no scheme")
	}
}

// statusWrapper is a WrapClient with a status writer of its own, as
// fault injectors and instrumentation have.
type statusWrapper struct {
	client.Client
	patched *int
}

type countingStatus struct {
	client.SubResourceWriter
	patched *int
}

func (w statusWrapper) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: w.Client.Status(), patched: w.patched}
}

func (s countingStatus) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	*s.patched++
	return nil
}

// TestGuardKeepsTheWrappersStatus: the guard writes the status through
// the wrapper's own Status(), not around it.
func TestGuardKeepsTheWrappersStatus(t *testing.T) {
	rig := newCycleRig(t, cycleObject("a", nil), func(string) (any, error) { return nil, nil }, false, false)
	var patched int
	c := guardClient(statusWrapper{Client: rig.c, patched: &patched}, logr.Discard())
	if err := c.Status().Patch(context.Background(), cycleObject("a", nil), client.Merge); err != nil {
		t.Fatal(err)
	}
	if patched != 1 {
		t.Errorf("the wrapper's status writer patched %d times, want 1", patched)
	}
}
