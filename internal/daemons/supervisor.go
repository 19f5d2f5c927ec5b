package daemons

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/pkg/indexing"
)

// Settings of the supervisor; zero values mean the defaults.
type Settings struct {
	// ShutdownGrace is how long the operator's stop waits for daemons,
	// timers and handlers before it gives up on them and says so.
	ShutdownGrace time.Duration
	// ReportInterval is how often, while waiting, the supervisor logs what
	// it is waiting for.
	ReportInterval time.Duration
	// DefaultBackoff is the retry delay after arbitrary errors.
	DefaultBackoff time.Duration
	// Clock is the source of time, replaceable in tests.
	Clock clock.WithTicker
	// Logger receives the supervisor's own lines (shutdown reports).
	Logger logr.Logger
	// Indices are given to every daemon and timer.
	Indices *indexing.Indices
	// BaseContext is the parent of every daemon's context (e.g. carrying
	// the Event poster); default: context.Background().
	BaseContext context.Context
	// Local makes a logger whose lines are never posted as Events, for the
	// supervisor's bookkeeping lines (stop messages); nil: no change.
	Local func(logr.Logger) logr.Logger
	// Observer learns what daemons and timers do (for metrics); nil: none.
	Observer Observer
}

// Defaults of Settings.
const (
	DefaultShutdownGrace  = 20 * time.Second
	DefaultReportInterval = 5 * time.Second
	DefaultBackoff        = 60 * time.Second
)

// Supervisor owns the daemons and timers of all objects, and tracks the
// change handlers in flight, so that the operator's stop can wait for all
// of them and name those that hold it up. It is a manager Runnable: its
// Start returns when the operator stops and everything has exited (or the
// grace is over).
type Supervisor struct {
	settings Settings
	clock    clock.WithTicker
	log      logr.Logger
	// base is the parent of every daemon's context; it ends only after the
	// shutdown, for whatever has been abandoned.
	base       context.Context
	cancelBase context.CancelFunc
	wg         sync.WaitGroup
	// changed wakes the shutdown wait when a task ends.
	changed chan struct{}

	mu       sync.Mutex
	objects  map[types.UID]*object
	inflight map[int]task
	nextTask int
	closing  bool
	// paused: the operator is frozen; nothing is spawned, and exits ask
	// for no reconciles (the listing after the pause reconciles all).
	paused bool
}

// Resolved fills the zero fields with the defaults: the one place they
// are filled. It is idempotent: an engine resolves its settings once, and
// New takes them as they are then.
func (s Settings) Resolved() Settings {
	if s.ShutdownGrace == 0 {
		s.ShutdownGrace = DefaultShutdownGrace
	}
	if s.ReportInterval == 0 {
		s.ReportInterval = DefaultReportInterval
	}
	if s.DefaultBackoff == 0 {
		s.DefaultBackoff = DefaultBackoff
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.BaseContext == nil {
		s.BaseContext = context.Background()
	}
	if s.Local == nil {
		s.Local = func(l logr.Logger) logr.Logger { return l }
	}
	if s.Observer == nil {
		s.Observer = noObserver{}
	}
	return s
}

// New returns a supervisor of the settings, resolved (Resolved).
func New(s Settings) *Supervisor {
	s = s.Resolved()
	base, cancel := context.WithCancel(s.BaseContext)
	return &Supervisor{
		settings:   s,
		clock:      s.Clock,
		log:        s.Logger,
		base:       base,
		cancelBase: cancel,
		changed:    make(chan struct{}, 1),
		objects:    map[types.UID]*object{},
		inflight:   map[int]task{},
	}
}

// Done is closed when the supervisor has finished its shutdown; a caller
// that would block on the operator's machinery gives up then.
func (s *Supervisor) Done() <-chan struct{} { return s.base.Done() }

// NeedLeaderElection keeps the supervisor with the controllers whose
// reconciles feed it.
func (s *Supervisor) NeedLeaderElection() bool { return true }
