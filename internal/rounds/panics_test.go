package rounds

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

func panics(*causes.Cause) (any, error) { panic("the handler is broken") }

// panickyEnv is a round's environment that records what it hears: the
// panicked handlers, and the tracked handlers still running.
type panickyEnv struct {
	Env
	panicked []string
	running  int
}

func newPanickyEnv(storage progress.Storage) *panickyEnv {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": "a"}}}
	obj.SetName("kex")
	e := &panickyEnv{}
	e.Env = Env{Object: obj, Body: obj.Object, Patch: patch.New(), Progress: storage, Clock: clocktesting.NewFakeClock(t0),
		Log: logr.Discard(), Defaults: execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: time.Minute}, Ref: stringer("ns/kex"),
		Track:    func(string) func() { e.running++; return func() { e.running-- } },
		Panicked: func(id string) { e.panicked = append(e.panicked, id) }}
	return e
}

// TestRunTellsPanics: a handler's panic, and a sub-handler's, is the
// attempt's failure (retried as an arbitrary error) and is told once per
// attempt, under the handler's own id.
func TestRunTellsPanics(t *testing.T) {
	tests := []struct {
		name     string
		handlers func(calls *[]string) []*registry.ChangeHandler
		want     []string
	}{
		{name: "a handler", want: []string{"broken"},
			handlers: func(calls *[]string) []*registry.ChangeHandler {
				return []*registry.ChangeHandler{handler("broken", causes.Create, calls, panics)}
			}},
		{name: "a sub-handler", want: []string{"parent/broken"},
			handlers: func(calls *[]string) []*registry.ChangeHandler {
				return []*registry.ChangeHandler{parent("parent", calls, handler("broken", causes.Create, calls, panics))}
			}},
		{name: "no panic, nothing told",
			handlers: func(calls *[]string) []*registry.ChangeHandler {
				return []*registry.ChangeHandler{handler("fine", causes.Create, calls, succeed)}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			e := newPanickyEnv(progress.NewSmart())
			subject := &registry.Subject{Obj: e.Object, Cause: &causes.Cause{Reason: causes.Create, Body: e.Body, Patch: e.Patch}}
			got := Run(context.Background(), e.Env, &registry.Kind{Changing: tt.handlers(&calls)}, subject, t0)
			if diff := cmp.Diff(tt.want, e.panicked); diff != "" {
				t.Errorf("the panics told -want +got:\n%s", diff)
			}
			if len(tt.want) > 0 && (got.Done || got.Delay != time.Minute) {
				t.Errorf("Run() = %+v, want the handler retried after the backoff", got)
			}
		})
	}
}

// subBrokenStorage panics when it reads a sub-handler's record (an id
// with a "/"), and ends the cycle as the engine's guard of a storage does:
// contained, then unwound.
type subBrokenStorage struct{ progress.Storage }

// errUnwound is what the guard ends the cycle with.
var errUnwound = errors.New("the storage panicked")

func (s subBrokenStorage) Fetch(body map[string]any, id string) (*progress.Record, error) {
	if !strings.Contains(id, "/") {
		return s.Storage.Fetch(body, id)
	}
	if p := contain.Call(func() { panic("the storage is broken") }); p != nil {
		contain.Unwind(errUnwound)
	}
	return nil, nil
}

// TestRunUnwindsThroughHandlers: a storage's panic in a sub-handlers'
// round (inside the parent's call) is not the parent's: it passes through
// the parent's attempt to the cycle's owner, and the handler is no longer
// tracked as running, so that the operator's stop does not wait for it.
func TestRunUnwindsThroughHandlers(t *testing.T) {
	var calls []string
	e := newPanickyEnv(subBrokenStorage{progress.NewSmart()})
	parent := parent("parent", &calls, handler("sub", causes.Create, &calls, succeed))
	subject := &registry.Subject{Obj: e.Object, Cause: &causes.Cause{Reason: causes.Create, Body: e.Body, Patch: e.Patch}}
	err := func() (err error) {
		defer contain.Unwound(&err)
		Run(context.Background(), e.Env, &registry.Kind{Changing: []*registry.ChangeHandler{parent}}, subject, t0)
		return nil
	}()
	if err != errUnwound {
		t.Errorf("the cycle ended with %v, want the storage's unwinding", err)
	}
	if diff := cmp.Diff([]string{"parent"}, calls); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	if len(e.panicked) != 0 {
		t.Errorf("the storage's panic was told as the handlers' %q", e.panicked)
	}
	if e.running != 0 {
		t.Errorf("%d handlers are still tracked as running", e.running)
	}
}
