package share

import (
	"runtime"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// collectAhead runs the garbage collector while a silent member's lease
// runs out (ring.AssignerSettings.OnSilent), so that the collection that
// the takeover's burst of allocations would otherwise bring comes before
// it, while the replica waits, and not while it starts the dead member's
// objects: about 18 KB allocated per object started, most of it garbage
// at once, on a heap that holds two shares, made one collection of the
// whole heap likely within the start, and when it came it could take as
// much CPU as the start itself (docs/sharding.md, "Standing by"). A
// member renews every renew period, so a silence is rare and the
// collection it costs is one that would have come soon anyway; silences
// close together share one.
type collectAhead struct {
	clock clock.PassiveClock
	// every is the least time between two collections.
	every   time.Duration
	log     logr.Logger
	collect func()

	mu   sync.Mutex
	last time.Time
}

func newCollectAhead(clk clock.PassiveClock, every time.Duration, log logr.Logger) *collectAhead {
	return &collectAhead{clock: clk, every: every, log: log, collect: runtime.GC}
}

// silent hears of a member that may be dead: it collects now, unless it
// did within every.
func (c *collectAhead) silent(member string) {
	now := c.clock.Now()
	c.mu.Lock()
	if !c.last.IsZero() && now.Sub(c.last) < c.every {
		c.mu.Unlock()
		return
	}
	c.last = now
	c.mu.Unlock()
	c.log.Info("A member's Lease has gone unrenewed; collecting garbage now, before a takeover would start its objects.", "member", member)
	c.collect()
}
