package handlers

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
)

// DaemonFunc is a daemon or a timer: it gets its object and its cause
// (cause.Daemon: its retries, patch and memo, and Stopped, Sleep and
// Latest to follow the object while it runs; see pkg/cause). A non-nil
// result lands in status.<id> after each call, with the patch. The ctx is
// cancelled when the daemon must stop; context.Cause(ctx) is a
// cause.StopReason saying why (errors.Is(context.Cause(ctx),
// cause.StopResourceDeleted) tells one reason). pkg/handlertest makes
// causes for unit tests (NewDaemon), with a stop the test controls.
type DaemonFunc[T client.Object] func(ctx context.Context, obj T, d *cause.Daemon) (any, error)

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

func newSpawnHandler[T client.Object](id, title string, kind daemons.Kind, fn DaemonFunc[T]) *registry.SpawnHandler {
	h := &registry.SpawnHandler{}
	h.ID, h.Title, h.Kind = id, title, kind
	h.Fn = func(ctx context.Context, obj causes.Object, d *cause.Daemon) (any, error) {
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
// (cause.Daemon.Stopped is closed) before its context is cancelled. Without
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
