package cycle

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/rounds"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/progress"
)

// RoundInput is what one round of change handlers gets.
type RoundInput struct {
	Object Object
	// Subject is what the handlers' filters look at, and the cause they
	// get.
	Subject *registry.Subject
	Now     time.Time
	// Report reports a problem with the object's stored state (a record
	// that cannot be read) to the log and, once, as a Warning Event.
	Report func(ctx context.Context, o Object, what, value, reason, message string)
}

// RoundResult is what a round of change handlers leaves.
type RoundResult = rounds.Result

// Round runs the kind's change handlers of one cycle: it gives
// internal/rounds the cycle's body, patch, storage, clock and logger, and
// the engine's hooks.
type Round struct {
	Kind     *registry.Kind
	Progress progress.Storage
	Clock    clock.PassiveClock
	Defaults execution.Defaults
	// Context is the context a handler runs in, made from the cycle's and
	// the object's logger (nil: the cycle's, with the logger).
	Context func(ctx context.Context, log logr.Logger) context.Context
	// Track, Observe and Panicked are rounds.Env's (nil: nobody).
	Track    func(name string) (done func())
	Observe  func(id, cause, class string, took time.Duration, called bool)
	Panicked func(id string)
}

// Run runs one round of the change handlers: the due handler with the
// fewest attempts, and its outcome recorded in the cycle's patch.
func (h *Round) Run(ctx context.Context, in RoundInput) RoundResult {
	o := in.Object
	env := rounds.Env{
		Object: o.Obj, Body: o.Body, Patch: o.Patch, Progress: h.Progress, Clock: h.Clock,
		Log: o.Log, Defaults: h.Defaults, Ref: daemons.Ref{UID: o.Obj.GetUID(), Namespace: o.Obj.GetNamespace(), Name: o.Obj.GetName()}, Track: h.Track, Observe: h.Observe, Panicked: h.Panicked,
		Invalid: func(id string, err error) {
			raw := ""
			if v, ok := fields.Resolve(o.Body, fields.Path{"metadata", "annotations"}); ok {
				raw = fmt.Sprint(v)
			}
			in.Report(ctx, o, "progress/"+id, raw, ReasonInvalidProgress,
				fmt.Sprintf("The progress of handler '%s' cannot be read and is ignored; the handler runs as if for the first time: %v", id, err))
		},
	}
	hctx := logr.NewContext(ctx, o.Log)
	if h.Context != nil {
		hctx = h.Context(ctx, o.Log)
	}
	return rounds.Run(hctx, env, h.Kind, in.Subject, in.Now)
}
