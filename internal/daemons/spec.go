package daemons

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Kind tells daemons from timers.
type Kind int

const (
	// KindDaemon runs one long call per object, restarted only on
	// temporary errors.
	KindDaemon Kind = iota + 1
	// KindTimer calls the function on a schedule.
	KindTimer
)

// DefaultCancellationPolling is how often a blocked deletion re-checks a
// daemon that does not exit (Kopf's default).
const DefaultCancellationPolling = 60 * time.Second

// Func is a daemon or timer function, adapted to untyped objects.
type Func func(ctx context.Context, obj causes.Object, d *DaemonCause) (any, error)

// Spec is what makes a handler a daemon or a timer.
type Spec struct {
	Kind Kind
	// InitialDelay, when set, gives the delay before the first call.
	InitialDelay func(obj causes.Object) time.Duration
	// CancellationBackoff is how long a stopping daemon may exit on its own
	// (Stopped is closed) before its context is cancelled; zero cancels at
	// once. Daemons only.
	CancellationBackoff time.Duration
	// CancellationTimeout is how long a cancelled daemon may take to exit
	// before it is abandoned; zero waits for it forever. Daemons only.
	CancellationTimeout time.Duration
	// CancellationPolling is how often a blocked deletion re-checks a
	// daemon that has not exited; zero means DefaultCancellationPolling.
	CancellationPolling time.Duration
	// Interval is the time between a timer's calls; with Sharp, the calls
	// keep to a grid of this step whatever the calls' durations.
	Interval time.Duration
	Sharp    bool
	// Idle delays a timer's calls until the object's essence has not
	// changed for this long.
	Idle time.Duration
	Fn   Func
}

// Handler is a registered daemon or timer.
type Handler struct {
	execution.Handler
	Spec
}

// polling is the handler's re-check interval for a blocked deletion.
func (h Handler) polling() time.Duration {
	if h.CancellationPolling > 0 {
		return h.CancellationPolling
	}
	return DefaultCancellationPolling
}

// Ref identifies one object for the supervisor and in its log lines.
type Ref struct {
	UID       types.UID
	Namespace string
	Name      string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Host is what the supervisor needs from the engine for one kind: the
// object's latest state (and its JSON-like map, made only when a handler
// asks for it), a way to write a handler's changes, and a way to have the
// object reconciled again (e.g. to drop a finalizer once its daemons have
// exited).
type Host interface {
	Fetch(ctx context.Context, ref Ref) (causes.Object, error)
	Body(obj causes.Object) (map[string]any, error)
	Apply(ctx context.Context, ref Ref, p *patch.Patch) error
	Enqueue(ref Ref)
	// Label names the host's kind in the metrics.
	Label() string
}

// DaemonCause is what a daemon or timer learns (the public cause.Daemon);
// the supervisor's runner, or a test's Detached, runs it.
type DaemonCause = cause.Daemon
