package cause

import (
	"context"
	"sync"
	"time"

	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Daemon is what a daemon or timer learns beside its object (Kopf's
// DaemonCause), and how it learns that it must stop. Its methods ask the
// run behind it: the engine makes one with NewDaemon, and a unit test gets
// one from pkg/handlertest's NewDaemon; a zero Daemon has no run.
type Daemon struct {
	// HandlerID is the daemon's or timer's id.
	HandlerID string
	// Param is the value the daemon or timer was registered with.
	Param any
	// Retry is the number of earlier failed attempts (for a timer, since
	// its last success).
	Retry int
	// Started is when the first of those attempts began.
	Started time.Time
	// Runtime is the time since then.
	Runtime time.Duration
	// Patch collects changes to the object; it is written when the call
	// returns, together with the result.
	Patch *patch.Patch
	// Memo is the object's memo, shared with its change handlers.
	Memo *memo.Memo
	// Indices are the operator's indices.
	Indices *indexing.Indices

	run DaemonRun
	// obj is the object when the call began; body its map, made on the
	// first call of Body (a running daemon holds it as long as it runs).
	obj      Object
	bodyOnce sync.Once
	body     map[string]any
}

// DaemonRun is what runs one call of a daemon or timer, and stops it: the
// engine's supervisor, or, in a unit test, pkg/handlertest's Daemon. A
// Daemon asks it for what its methods return.
type DaemonRun interface {
	// Body is obj as a JSON-like map; nil if it cannot be made.
	Body(obj Object) map[string]any
	// Stopped is closed when the call is asked to stop.
	Stopped() <-chan struct{}
	// StopReason is why, zero until then.
	StopReason() StopReason
	// Sleep waits for d and reports true, or reports false as soon as
	// the call is asked to stop or ctx is done.
	Sleep(ctx context.Context, d time.Duration) bool
	// Latest reads the object afresh.
	Latest(ctx context.Context) (Object, error)
}

// NewDaemon is the cause of a call on obj that run runs; the caller fills
// the other fields.
func NewDaemon(run DaemonRun, obj Object) *Daemon { return &Daemon{run: run, obj: obj} }

// Body is the object as a JSON-like map when the call began; read-only.
// For unstructured objects it is the object's own map; typed objects are
// converted on the first call (nil if that fails, which is logged).
func (d *Daemon) Body() map[string]any {
	d.bodyOnce.Do(func() {
		d.body = d.run.Body(d.obj)
	})
	return d.body
}

// Stopped is closed when the daemon is asked to stop (the object is
// deleted or stops matching, the operator pauses or exits). The context is
// cancelled at the same time, or after the cancellation backoff.
func (d *Daemon) Stopped() <-chan struct{} { return d.run.Stopped() }

// StopReason says why the daemon is stopping; zero while it is not.
func (d *Daemon) StopReason() StopReason { return d.run.StopReason() }

// Sleep waits for the duration and reports true, or reports false as soon
// as the daemon is asked to stop or ctx is done.
func (d *Daemon) Sleep(ctx context.Context, duration time.Duration) bool {
	return d.run.Sleep(ctx, duration)
}

// Latest returns a fresh copy of the object as the operator's cache has it
// now; a daemon that runs for long sees the object's changes through it.
// It is of the handler's object type (a *corev1.Pod, an
// *unstructured.Unstructured): assert it, obj.(*corev1.Pod).
func (d *Daemon) Latest(ctx context.Context) (Object, error) { return d.run.Latest(ctx) }
