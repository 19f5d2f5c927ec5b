package daemons

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Detached is a daemon's or timer's call outside any supervisor, for unit
// tests of daemon functions: the test holds the stop signal and the
// object that Latest returns.
type Detached struct {
	// Cause is what the function gets.
	Cause *DaemonCause

	mu      sync.Mutex
	reason  StopReason
	stopped chan struct{}
	body    map[string]any
	latestF func(context.Context) (causes.Object, error)
}

// Detach makes the call of handler id on obj, whose map is body (the
// object as the function would see it through Body).
func Detach(id string, obj causes.Object, body map[string]any, retry int, started time.Time) *Detached {
	d := &Detached{stopped: make(chan struct{}), body: body}
	d.latestF = func(context.Context) (causes.Object, error) { return obj, nil }
	d.Cause = cause.NewDaemon(d, obj)
	d.Cause.HandlerID, d.Cause.Retry, d.Cause.Started, d.Cause.Runtime = id, retry, started, time.Since(started)
	d.Cause.Patch, d.Cause.Memo = patch.New(), &memo.Memo{}
	return d
}

// Stop asks the daemon to stop, as the supervisor would: Stopped closes,
// StopReason says why, Sleep returns false. Its context is the test's.
func (d *Detached) Stop(reason StopReason) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.reason != 0 {
		return
	}
	d.reason = reason
	close(d.stopped)
}

// SetLatest makes Latest return the function's answer.
func (d *Detached) SetLatest(f func(context.Context) (causes.Object, error)) { d.latestF = f }

// Body, Stopped, StopReason, Sleep and Latest run the cause
// (cause.DaemonRun).
func (d *Detached) Body(causes.Object) map[string]any { return d.body }
func (d *Detached) Stopped() <-chan struct{}          { return d.stopped }

func (d *Detached) StopReason() StopReason {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reason
}

// Sleep sleeps in real time: unit tests of daemons pass short durations,
// or stop the daemon.
func (d *Detached) Sleep(ctx context.Context, duration time.Duration) bool {
	select {
	case <-d.stopped:
		return false
	default:
	}
	if duration <= 0 {
		return true
	}
	t := time.NewTimer(duration)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.stopped:
		return false
	case <-ctx.Done():
		return false
	}
}

func (d *Detached) Latest(ctx context.Context) (causes.Object, error) {
	if d.latestF == nil {
		return nil, errors.New("no latest object")
	}
	return d.latestF(ctx)
}
