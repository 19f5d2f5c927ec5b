// Package rounds runs one cycle's round of change handlers, as Kopf does:
// it loads their progress records, purges those of a cause that the
// current one supersedes, activates the handlers the cause selects, runs
// the next due one (one per cycle), records its outcome and its result,
// and once all are finished purges the records. Sub-handlers that a
// handler registers run as a round of their own, inside the handler's.
//
// A round works on the object's body and the cycle's patch; it writes
// nothing to the API server and knows nothing of controller-runtime. The
// cycle (internal/cycle) gives it what it needs in an Env, calls Run
// once per cycle, and takes its Result.
package rounds

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// Env is what a round needs of the engine for one object's cycle.
type Env struct {
	// Object is the handled object (each handler gets a copy of it), and
	// Body its fields.
	Object registry.Object
	Body   map[string]any
	// Patch takes the records and the results.
	Patch    *patch.Patch
	Progress progress.Storage
	Clock    clock.PassiveClock
	// Log is the object's logger, whose lines may be posted as Events.
	Log logr.Logger
	// Defaults are the execution defaults of change handlers.
	Defaults execution.Defaults
	// Ref names the object in Track's names.
	Ref fmt.Stringer
	// Track names a running handler for the operator's stop, which waits
	// for it, until done is called; nil: not tracked.
	Track func(name string) (done func())
	// Observe hears of each attempt of a handler: its outcome's class
	// (execution.Classify), how long it took, and whether its function
	// was called at all (metrics.InvokedOf); nil: nobody.
	Observe func(id, cause, class string, took time.Duration, called bool)
	// Panicked hears of each attempt in which a handler panicked (the
	// panic is logged with its stack already), for the metrics; nil:
	// nobody.
	Panicked func(id string)
	// Invalid hears of a handler's record that cannot be read: the
	// handler then runs as if for the first time.
	Invalid func(id string, err error)
}

// Result is what a round leaves.
type Result struct {
	// Done: every selected handler is finished (or none was selected).
	Done bool
	// Delay is when the next pending handler is due, if not Done.
	Delay time.Duration
	// Standing is where the object stands with its handlers (retrying,
	// failed for good) for the object gauges.
	Standing execution.Standing
	// State is the handlers' progress after the round, for the conditions
	// derived from it.
	State *execution.State
}

// Run runs the round of the kind's change handlers for the subject's
// cause at now. ctx is the handlers' context.
func Run(ctx context.Context, env Env, kind *registry.Kind, subject *registry.Subject, now time.Time) Result {
	reason := subject.Cause.Reason
	title := reason.Title()
	invalid := env.Invalid
	if invalid == nil {
		invalid = func(string, error) {}
	}
	rd := load(env, kind, subject, now, invalid)
	rd.supersede(env, reason)
	rd.state.Activate(string(reason), rd.selectedIDs, now)

	env.Log.V(1).Info(fmt.Sprintf("%s is in progress: %s", title, env.Object.GetName()))
	if len(subject.Cause.Diff) > 0 && subject.Cause.Old != nil {
		env.Log.V(1).Info(fmt.Sprintf("%s diff: %s", title, subject.Cause.Diff))
	}

	res := Result{Done: len(rd.selected) == 0}
	if !res.Done {
		ran := rd.advance(ctx, env, subject, now)
		if ran {
			now = env.Clock.Now()
		}
		res.Done = rd.state.Done()
		switch {
		case !res.Done:
			res.Delay, _ = rd.state.Delay(now)
		case ran:
			n := rd.state.Counts()
			env.Log.Info(fmt.Sprintf("%s is processed: %d succeeded; %d failed.", title, n.Success, n.Failure))
		}
		// A deleted object's records stay until it goes (they go with it):
		// the cycle that removes the finalizer may not be the last one
		// (daemons still keep the object, or the finalizer's removal
		// conflicts with another write), and the next cycle must find the
		// deletion handlers done, not run them again on a purged state.
		if res.Done && !subject.Deleting {
			for _, id := range rd.ids {
				rd.purge(env, id)
			}
		}
	}
	// A failure for good stands until a later cause is handled; a retry
	// until the handler runs again.
	res.Standing = rd.state.Standing(now)
	res.State = rd.state
	return res
}

// round is one cycle's turn of a set of change handlers (the kind's, or a
// parent's sub-handlers): their progress as loaded, and those the cause
// selects.
type round struct {
	ids         []string
	state       *execution.State
	selected    []*registry.ChangeHandler
	selectedIDs []string
}

// load loads the progress of the handlers and selects those the cause
// calls for; invalid hears of records that cannot be read.
func load(env Env, kind *registry.Kind, subject *registry.Subject, now time.Time, invalid func(id string, err error)) *round {
	rd := &round{ids: kind.IDs()}
	rd.state = execution.Load(env.Body, env.Progress, rd.ids, now, invalid)
	rd.selected = kind.Select(subject)
	rd.selectedIDs = make([]string, len(rd.selected))
	for i, h := range rd.selected {
		rd.selectedIDs[i] = h.ID
	}
	return rd
}

// advance runs the next due handler, if one is due, and stores the
// records that changed; it reports whether one ran.
func (rd *round) advance(ctx context.Context, env Env, subject *registry.Subject, now time.Time) bool {
	id, ok := rd.state.Next(rd.selectedIDs, now)
	if ok {
		rd.run(ctx, env, subject, id, now)
	}
	for _, id := range rd.state.Order {
		if h := rd.state.Handlers[id]; h.Active && h.Changed() {
			env.Progress.Store(env.Body, env.Patch, id, h.Record())
		}
	}
	return ok
}

// supersede purges the records of an unfinished earlier cause that this
// one supersedes, and says so.
func (rd *round) supersede(env Env, reason causes.Reason) {
	for purpose, n := range rd.state.Extras(string(reason)) {
		env.Log.Info(fmt.Sprintf("%s is superseded by %s: %d succeeded; %d failed; %d left to the moment.",
			causes.Reason(purpose).Title(), strings.ToLower(reason.Title()), n.Success, n.Failure, n.Running))
	}
	for _, id := range rd.superseded(string(reason)) {
		rd.purge(env, id)
		rd.state.Drop(id)
	}
}

// superseded are the loaded records of another purpose that the current
// cause does not select: they are purged. (Kopf purges every record in that
// case and rewrites only the changed ones, which can lose the record of a
// re-selected, unchanged handler; purging only the superseded keeps it.)
func (rd *round) superseded(purpose string) []string {
	var out []string
	for _, id := range rd.state.Order {
		h := rd.state.Handlers[id]
		if h.Purpose == "" || h.Purpose == purpose {
			continue
		}
		if !slices.Contains(rd.selectedIDs, id) {
			out = append(out, id)
		}
	}
	return out
}

// purge removes a handler's record and its sub-handlers' records.
func (rd *round) purge(env Env, id string) {
	env.Progress.Purge(env.Body, env.Patch, id)
	if h := rd.state.Handlers[id]; h != nil {
		for _, sub := range h.Subrefs {
			env.Progress.Purge(env.Body, env.Patch, sub)
		}
	}
}
