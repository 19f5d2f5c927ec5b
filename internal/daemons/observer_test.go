package daemons

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

// recorder is an Observer that writes down what it is told, one line per
// event, with the fake time of attempts' durations.
type recorder struct {
	mu     sync.Mutex
	events []string
	hosts  []Host
}

func (r *recorder) add(host Host, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.hosts = append(r.hosts, host)
}

func (r *recorder) Spawned(host Host, h *Handler)  { r.add(host, "spawned %s", h.ID) }
func (r *recorder) Stopping(host Host, h *Handler) { r.add(host, "stopping %s", h.ID) }
func (r *recorder) Attempted(host Host, h *Handler, o execution.Outcome, took time.Duration) {
	panicked := ""
	if o.Panic != nil {
		panicked = " (panicked)"
	}
	r.add(host, "attempted %s: %s in %s%s", h.ID, execution.Classify(o), took, panicked)
}
func (r *recorder) DelayPanicked(host Host, h *Handler) { r.add(host, "delay panicked %s", h.ID) }
func (r *recorder) Exited(host Host, h *Handler, reason StopReason) {
	r.add(host, "exited %s: %s", h.ID, reason.String())
}

func (r *recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// TestObserver follows daemons and timers through their lives and checks
// what the observer learns, in order, and that it learns it with the
// object's host.
func TestObserver(t *testing.T) {
	tests := []struct {
		name string
		run  func(h *harness)
		want []string
	}{
		{"a daemon that fails, retries and succeeds", func(h *harness) {
			h.sync(h.daemon("d", Spec{}))
			c := h.next()
			h.clock.Step(2 * time.Second)
			c.ret(nil, execution.NewTemporaryError("later", 5*time.Second))
			c = h.callAt(7 * time.Second)
			c.ret(nil, nil)
			h.exited(ref.UID)
		}, []string{
			"spawned d",
			"attempted d: temporary_error in 2s",
			"attempted d: success in 0s",
			"exited d: NONE",
		}},
		{"a daemon stopped for its object's deletion", func(h *harness) {
			h.sync(h.daemon("d", Spec{}))
			c := h.next()
			h.sup.Stop(ref.UID, StopResourceDeleted)
			c.do(untilCancelled)
			h.exited(ref.UID)
		}, []string{
			"spawned d",
			"stopping d",
			"attempted d: cancelled in 0s",
			"exited d: RESOURCE_DELETED|DAEMON_CANCELLED",
		}},
		{"a daemon that fails for good", func(h *harness) {
			h.sync(h.daemon("d", Spec{}))
			h.next().ret(nil, execution.NewPermanentError("no"))
			h.exited(ref.UID)
		}, []string{
			"spawned d",
			"attempted d: permanent_error in 0s",
			"exited d: NONE",
		}},
		{"a timer that stops matching between ticks", func(h *harness) {
			h.sync(h.timer("t", Spec{Interval: 10 * time.Second}))
			h.next().ret(nil, errors.New("boom"))
			h.callAt(7*time.Second).ret(nil, nil)
			h.waiters(1)
			h.sync()
			h.exited(ref.UID)
		}, []string{
			"spawned t",
			"attempted t: temporary_error in 0s",
			"attempted t: success in 0s",
			"stopping t",
			"exited t: FILTERS_MISMATCH|DAEMON_CANCELLED",
		}},
		{"a daemon that panics, and is retried", func(h *harness) {
			h.sync(h.daemon("d", Spec{}))
			h.next().do(func(context.Context, *DaemonCause) (any, error) { panic("boom") })
			h.callAt(7*time.Second).ret(nil, nil)
			h.exited(ref.UID)
		}, []string{
			"spawned d",
			"attempted d: temporary_error in 0s (panicked)",
			"attempted d: success in 0s",
			"exited d: NONE",
		}},
		{"a timer whose initial delay panics", func(h *harness) {
			h.sync(h.timer("t", Spec{Interval: time.Second, InitialDelay: func(causes.Object) time.Duration { panic("boom") }}))
			h.exited(ref.UID)
		}, []string{
			"spawned t",
			"delay panicked t",
			"exited t: NONE",
		}},
		{"the operator's exit", func(h *harness) {
			h.sync(h.daemon("d", Spec{}))
			h.next().do(untilCancelled)
			h.stop()
		}, []string{
			"spawned d",
			"stopping d",
			"attempted d: cancelled in 0s",
			"exited d: OPERATOR_EXITING|DAEMON_CANCELLED",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			h := newHarness(t, Settings{DefaultBackoff: 7 * time.Second, Observer: rec})
			tt.run(h)
			h.stop()
			if diff := cmp.Diff(tt.want, rec.Events()); diff != "" {
				t.Errorf("observed -want +got:\n%s", diff)
			}
			for i, host := range rec.hosts {
				if host != Host(h.host) {
					t.Errorf("event %d came with host %v, want the object's", i, host)
				}
			}
		})
	}
}

// TestObserverIsOptional: without one, nothing is observed, and nothing
// breaks.
func TestObserverIsOptional(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("d", Spec{}))
	h.next().do(func(ctx context.Context, _ *DaemonCause) (any, error) { return nil, nil })
	h.exited(ref.UID)
}
