package daemons

import (
	"time"

	"github.com/kopf-go/kopf/internal/execution"
)

// Observer learns what the supervisor's daemons and timers do, for
// metrics. The supervisor calls it from its runners and sometimes while
// holding its lock, so it must be quick, safe for concurrent use, and must
// not call the supervisor back. The host tells the observer which kind the
// object is of (the engine has one host per kind).
type Observer interface {
	// Spawned: a runner of the handler starts for an object.
	Spawned(host Host, h *Handler)
	// Stopping: the runner is asked to stop, the first time.
	Stopping(host Host, h *Handler)
	// Attempted: one call of the function ended with the outcome, after
	// the duration. Failures to read the object are not calls.
	Attempted(host Host, h *Handler, o execution.Outcome, took time.Duration)
	// Exited: the runner's goroutine returned; reason is why it was asked
	// to stop, zero if it ended on its own (and was not asked).
	Exited(host Host, h *Handler, reason StopReason)
	// DelayPanicked: the handler's initial delay function panicked (the
	// panic is logged with its stack already); the runner then exits on
	// its own. A panic of the function itself comes in Attempted's
	// outcome (Outcome.Panic).
	DelayPanicked(host Host, h *Handler)
}

// noObserver is the observer when the settings give none.
type noObserver struct{}

func (noObserver) Spawned(Host, *Handler)                                     {}
func (noObserver) Stopping(Host, *Handler)                                    {}
func (noObserver) Attempted(Host, *Handler, execution.Outcome, time.Duration) {}
func (noObserver) Exited(Host, *Handler, StopReason)                          {}
func (noObserver) DelayPanicked(Host, *Handler)                               {}
