package handlers

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/registry"
)

// DaemonCause is what a daemon or timer learns beside its object. Its
// fields:
//
//	HandlerID  string          the daemon's or timer's id
//	Param      any             the value it was registered with (Param)
//	Retry      int             earlier failed attempts (a timer's: since its last success)
//	Started    time.Time       when the first of them began
//	Runtime    time.Duration   since then
//	Patch      *Patch          changes to the object, written when the call returns
//	Memo       *Memo           the object's memo, shared with its change handlers
//	Indices    *Indices        the operator's indices
//
// and its methods:
//
//	Body() map[string]any                          the object when the call began
//	Stopped() <-chan struct{}                      closed when asked to stop
//	StopReason() StopReason                        why; zero while not stopping
//	Sleep(ctx, d) bool                             false as soon as asked to stop
//	Latest(ctx) (object, error)                    the object as the cache has it now (see Latest)
//
// pkg/handlertest makes one for unit tests (NewDaemon), with a stop the
// test controls.
type DaemonCause = daemons.DaemonCause

// DaemonFunc is a daemon or a timer. A non-nil result lands in status.<id>
// after each call, with the patch. The ctx is cancelled when the daemon
// must stop; context.Cause(ctx) is a StopReason saying why.
type DaemonFunc[T client.Object] func(ctx context.Context, obj T, d *DaemonCause) (any, error)

// StopReason says why a daemon or timer stops; errors.Is(context.Cause(ctx),
// handlers.StopResourceDeleted) tells one reason.
type StopReason = daemons.StopReason

// The stop reasons, with Kopf's names (DaemonStoppingReason).
const (
	StopDone            StopReason = daemons.StopDone
	StopFiltersMismatch StopReason = daemons.StopFiltersMismatch
	StopResourceDeleted StopReason = daemons.StopResourceDeleted
	StopOperatorPausing StopReason = daemons.StopOperatorPausing
	StopOperatorExiting StopReason = daemons.StopOperatorExiting
	StopSignalled       StopReason = daemons.StopSignalled
	StopCancelled       StopReason = daemons.StopCancelled
	StopAbandoned       StopReason = daemons.StopAbandoned
)

// Daemon registers a function that runs for as long as an object exists
// and matches the filters: one goroutine per object, started when the
// object appears (or starts to match, or the operator starts), stopped when
// it is deleted (deletion waits for it, through the finalizer), stops
// matching, or the operator pauses or exits. A daemon that returns is not
// started again for that object; one that fails with a temporary error is
// restarted after the delay.
func Daemon[T client.Object](res *Resource[T], id string, fn DaemonFunc[T], opts ...DaemonOption) {
	h := newSpawnHandler(id, "Daemon", daemons.KindDaemon, fn)
	applyAll(target{handler: &h.Handler, filters: &h.Filters, spawn: h}, opts)
	res.addSpawning(h)
}

// Timer registers a function that is called on a schedule for every object
// that matches the filters: every Interval (on a fixed grid with Sharp),
// and/or once the object has not changed for Idle; with neither, once. A
// timer never overlaps itself, and stops as a daemon does.
func Timer[T client.Object](res *Resource[T], id string, fn DaemonFunc[T], opts ...TimerOption) {
	h := newSpawnHandler(id, "Timer", daemons.KindTimer, fn)
	applyAll(target{handler: &h.Handler, filters: &h.Filters, spawn: h}, opts)
	res.addSpawning(h)
}

// Latest returns a fresh copy of the daemon's object as the cache has it
// now, typed.
func Latest[T client.Object](ctx context.Context, d *DaemonCause) (T, error) {
	var zero T
	obj, err := d.Latest(ctx)
	if err != nil {
		return zero, err
	}
	typed, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("the object is a %T, not a %T", obj, zero)
	}
	return typed, nil
}

func newSpawnHandler[T client.Object](id, title string, kind daemons.Kind, fn DaemonFunc[T]) *registry.SpawnHandler {
	h := &registry.SpawnHandler{}
	h.ID, h.Title, h.Kind = id, title, kind
	h.Fn = func(ctx context.Context, obj causes.Object, d *DaemonCause) (any, error) {
		return fn(ctx, obj.(T), d)
	}
	return h
}

// addSpawning finishes the handler's id (a field adds "/<field>") and
// registers it.
func (res *Resource[T]) addSpawning(h *registry.SpawnHandler) {
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	res.res.kind.Spawning = append(res.res.kind.Spawning, h)
}

// spawnOption is an option of daemons and timers, daemonOption of daemons
// only, timerOption of timers only.
type (
	spawnOption  func(*registry.SpawnHandler)
	daemonOption func(*registry.SpawnHandler)
	timerOption  func(*registry.SpawnHandler)
)

func (o spawnOption) apply(t *target)  { o(t.spawn) }
func (spawnOption) daemon()            {}
func (spawnOption) timer()             {}
func (o daemonOption) apply(t *target) { o(t.spawn) }
func (daemonOption) daemon()           {}
func (o timerOption) apply(t *target)  { o(t.spawn) }
func (timerOption) timer()             {}

// InitialDelayOption delays the first call of a daemon or a timer.
type InitialDelayOption interface {
	DaemonOption
	TimerOption
}

// InitialDelay delays a daemon's or timer's first call.
func InitialDelay(d time.Duration) InitialDelayOption {
	return spawnOption(func(h *registry.SpawnHandler) {
		h.InitialDelay = func(causes.Object) time.Duration { return d }
	})
}

// InitialDelayFunc computes the first call's delay from the object; T must
// be the resource's object type.
func InitialDelayFunc[T client.Object](fn func(obj T) time.Duration) InitialDelayOption {
	return spawnOption(func(h *registry.SpawnHandler) {
		h.InitialDelay = func(obj causes.Object) time.Duration {
			if typed, ok := obj.(T); ok {
				return fn(typed)
			}
			return 0
		}
	})
}

// CancellationBackoff gives a stopping daemon this long to exit on its own
// (DaemonCause.Stopped is closed) before its context is cancelled. Without
// it, the context is cancelled at once.
func CancellationBackoff(d time.Duration) DaemonOption {
	return daemonOption(func(h *registry.SpawnHandler) { h.CancellationBackoff = d })
}

// CancellationTimeout gives a cancelled daemon this long to exit before it
// is abandoned: it keeps running (a goroutine cannot be killed), but no
// longer holds up the deletion of its object. Without it, the deletion
// waits for the daemon however long it takes.
func CancellationTimeout(d time.Duration) DaemonOption {
	return daemonOption(func(h *registry.SpawnHandler) { h.CancellationTimeout = d })
}

// CancellationPolling is how often a deletion held up by this daemon is
// re-checked and logged (default 60 s); the daemon's exit ends the wait
// at once anyway.
func CancellationPolling(d time.Duration) DaemonOption {
	return daemonOption(func(h *registry.SpawnHandler) { h.CancellationPolling = d })
}

// Interval is the time between the end of one call and the next.
func Interval(d time.Duration) TimerOption {
	return timerOption(func(h *registry.SpawnHandler) { h.Interval = d })
}

// Sharp keeps the calls on a grid of Interval from the first call, however
// long each call takes.
func Sharp() TimerOption { return timerOption(func(h *registry.SpawnHandler) { h.Sharp = true }) }

// Idle waits, before each call, until the object's essence (spec, labels,
// annotations) has not changed for this long.
func Idle(d time.Duration) TimerOption {
	return timerOption(func(h *registry.SpawnHandler) { h.Idle = d })
}
