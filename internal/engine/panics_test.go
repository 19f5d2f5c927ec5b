package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/cycle"
	"github.com/kopf-go/kopf/internal/cycle/cycletest"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/internal/write/writetest"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// kindRig is one kind's state, as the engine wires it, on a fake API
// server, with the example's change handlers.
type kindRig struct {
	*cycletest.API
	handlers *cycletest.Handlers
	k        *kindState
}

// newKindRig wires the kind with the settings, through the client that
// wrap makes of the API server's (nil: as it is); its throttling has no
// jitter, so that its delays are Kopf's exactly.
func newKindRig(t *testing.T, s Settings, wrap func(client.Client) client.Client) *kindRig {
	t.Helper()
	api := cycletest.NewAPI(t, writetest.Object("a", nil))
	h := &cycletest.Handlers{Outcome: func(string) (any, error) { return nil, nil }}
	var c client.Client = api.C
	if wrap != nil {
		c = wrap(c)
	}
	cs := clients.NewCurrent(c)
	cs.Set(c)
	sup := daemons.New(daemons.Settings{})
	k := newKindState(objects.Kind{Registered: h.Kind(), GVK: writetest.GVK}, resolved(t, s), cs, write.FixedProbe(true), sup,
		ownership.Unshared{}, memory.NewStore(&memo.Memo{}, nil, nil, nil), cycle.WithJitter(jitter.Jitter{}))
	return &kindRig{API: api, handlers: h, k: k}
}

// errorLine is an error line of a cycle: its message, and whether it
// carries a goroutine's stack.
type errorLine struct {
	Msg     string
	Stacked bool
}

// reconcileLogging runs one cycle with a logger that keeps its error
// lines.
func reconcileLogging(t *testing.T, r reconcile.Reconciler) (reconcile.Result, error, []errorLine) {
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
			rig := newKindRig(t, tt.settings, nil)
			result, err, lines := reconcileLogging(t, rig.k.cycles)
			if err != nil || result.RequeueAfter != time.Second {
				t.Errorf("Reconcile() = %+v, %v; want the object throttled for 1 s", result, err)
			}
			if diff := cmp.Diff(tt.wantCalls, rig.handlers.Calls); diff != "" {
				t.Errorf("calls -want +got:\n%s", diff)
			}
			if rig.Writes != 0 {
				t.Errorf("the cycle wrote %q", rig.Written)
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
	rig := newKindRig(t, Settings{}, func(c client.Client) client.Client { return clients.Guard(panickyWrapper{c}, logr.Discard()) })
	result, err, lines := reconcileLogging(t, rig.k.cycles)
	if err != nil || result.RequeueAfter != time.Second {
		t.Errorf("Reconcile() = %+v, %v; want the object throttled for 1 s", result, err)
	}
	if diff := cmp.Diff([]string{"create_fn"}, rig.handlers.Calls); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	if rig.k.memories.Recall("uid-kex", types.NamespacedName{Namespace: "ns", Name: "kex"}).Unwritten == nil {
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
	rig := newKindRig(t, Settings{}, nil)
	broken := *rig.k.objects.Registered.Changing[0]
	broken.ID = "broken_create"
	broken.When = func(registry.Object, *causes.Cause) bool { panic("the filter is broken") }
	rig.k.objects.Registered.Changing = append([]*registry.ChangeHandler{&broken}, rig.k.objects.Registered.Changing...)
	_, err, lines := reconcileLogging(t, rig.k.cycles)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create_fn"}, rig.handlers.Calls); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	if len(lines) == 0 || lines[0] != (errorLine{Msg: "Handler 'broken_create' does not match: its filter panicked: panic: the filter is broken", Stacked: true}) {
		t.Errorf("error lines = %+v, want the filter's panic first, with the stack", lines)
	}
}
