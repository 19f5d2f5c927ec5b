package daemons

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// task is something in flight that the shutdown waits for.
type task struct {
	name  string
	since time.Time
}

// Track records a change handler in flight until the returned function
// is called, so that the operator's stop waits for it and names it.
func (s *Supervisor) Track(name string) func() {
	s.mu.Lock()
	id := s.nextTask
	s.nextTask++
	s.inflight[id] = task{name: name, since: s.clock.Now()}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
		s.notify()
	}
}

// notify wakes the shutdown wait without blocking: one wake-up pending is
// enough, since the wait looks at everything again when it wakes.
func (s *Supervisor) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Start waits until the operator stops; then it stops every daemon and
// timer (OPERATOR_EXITING) and waits for them and for the change handlers
// in flight, logging what it waits for every report interval. After the
// shutdown grace it gives up, logs what it leaves behind (goroutines
// cannot be killed), and returns.
func (s *Supervisor) Start(ctx context.Context) error {
	<-ctx.Done()
	s.mu.Lock()
	s.closing = true
	for _, o := range s.objects {
		for _, r := range o.runners {
			r.stop(StopOperatorExiting)
		}
	}
	s.mu.Unlock()
	defer s.cancelBase()

	grace := s.clock.NewTimer(s.settings.ShutdownGrace)
	defer grace.Stop()
	report := s.clock.NewTicker(s.settings.ReportInterval)
	defer report.Stop()
	allExited := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(allExited)
	}()
	exitedAll := false
	for {
		if exitedAll && s.pending() == nil {
			return nil
		}
		select {
		case <-allExited:
			exitedAll = true
			allExited = nil
		case <-s.changed:
		case <-report.C():
			if left := s.pending(); len(left) > 0 {
				s.log.Info(fmt.Sprintf("The operator is stopping; still waiting for %d: %s.", len(left), strings.Join(left, ", ")))
			}
		case <-grace.C():
			left := s.pending()
			s.log.Error(nil, fmt.Sprintf("The operator stops without waiting any longer (%s); left running, since goroutines cannot be killed: %s.",
				s.settings.ShutdownGrace, strings.Join(left, ", ")))
			return nil
		}
	}
}

// pending lists what the shutdown still waits for: running daemons and
// timers, and change handlers in flight.
func (s *Supervisor) pending() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var out []string
	for _, o := range s.objects {
		for _, r := range o.runners {
			state := "stopping for " + now.Sub(r.stopSince).Round(time.Millisecond).String() + ": " + r.reason.String()
			out = append(out, fmt.Sprintf("%s of %s (%s)", r.h.Handler, o.ref, state))
		}
	}
	for _, t := range s.inflight {
		out = append(out, fmt.Sprintf("%s (running for %s)", t.name, now.Sub(t.since).Round(time.Millisecond)))
	}
	sort.Strings(out)
	return out
}
