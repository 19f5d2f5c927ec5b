package execution

import (
	"slices"
	"time"

	"github.com/kopf-go/kopf/pkg/progress"
)

// HandlerState is one handler's progress for the current cause: loaded from
// the object, advanced by an outcome, stored back.
type HandlerState struct {
	// Active: the handler is selected for the current cause (inactive ones
	// are carried only for counting and purging).
	Active  bool
	Started time.Time
	Stopped *time.Time
	Delayed *time.Time
	Purpose string
	Retries int
	Success bool
	Failure bool
	Message *string
	Subrefs []string

	origin *progress.Record
}

// Finished reports a final outcome, success or failure.
func (s *HandlerState) Finished() bool { return s.Success || s.Failure }

// Sleeping reports an unfinished handler that must not run before Delayed.
func (s *HandlerState) Sleeping(now time.Time) bool {
	return !s.Finished() && s.Delayed != nil && s.Delayed.After(now)
}

// Awake reports an unfinished handler that may run now.
func (s *HandlerState) Awake(now time.Time) bool { return !s.Finished() && !s.Sleeping(now) }

// Runtime is the time since the first attempt.
func (s *HandlerState) Runtime(now time.Time) time.Duration { return now.Sub(s.Started) }

// Record is the state in its persisted form.
func (s *HandlerState) Record() progress.Record {
	started := s.Started
	return progress.Record{
		Started: &started,
		Stopped: s.Stopped,
		Delayed: s.Delayed,
		Purpose: s.Purpose,
		Retries: s.Retries,
		Success: s.Success,
		Failure: s.Failure,
		Message: s.Message,
		Subrefs: s.Subrefs,
	}
}

// Changed reports whether the record differs from what was loaded.
func (s *HandlerState) Changed() bool { return s.origin == nil || !s.origin.Equal(s.Record()) }

// FromRecord rebuilds a state from its persisted form; a record without a
// start time is taken as started now.
func FromRecord(r progress.Record, now time.Time) *HandlerState {
	s := &HandlerState{
		Started: now,
		Stopped: r.Stopped,
		Delayed: r.Delayed,
		Purpose: r.Purpose,
		Retries: r.Retries,
		Success: r.Success,
		Failure: r.Failure,
		Message: r.Message,
		Subrefs: r.Subrefs,
		origin:  &r,
	}
	if r.Started != nil {
		s.Started = *r.Started
	}
	return s
}

// WithOutcome advances the state by one attempt's outcome.
func (s *HandlerState) WithOutcome(o Outcome, now time.Time) *HandlerState {
	next := *s
	next.Retries = s.Retries + 1
	next.Success = o.Final && o.Err == nil
	next.Failure = o.Final && o.Err != nil
	next.Delayed = nil
	if o.Delay != nil {
		at := now.Add(*o.Delay)
		next.Delayed = &at
	}
	if next.Stopped == nil && o.Final {
		at := now
		next.Stopped = &at
	}
	next.Message = nil
	if o.Err != nil {
		msg := o.Err.Error()
		next.Message = &msg
	}
	if len(o.Subrefs) > 0 {
		subrefs := append(slices.Clone(s.Subrefs), o.Subrefs...)
		slices.Sort(subrefs)
		next.Subrefs = slices.Compact(subrefs)
	}
	return &next
}

// Counts are the numbers a cause's summary log line reports.
type Counts struct {
	Success, Failure, Running int
}

// State is the progress of all of a kind's handlers on one object, for the
// current cause (purpose).
type State struct {
	Purpose string
	// Order is the registration order of the handlers in the state.
	Order    []string
	Handlers map[string]*HandlerState
}

// Load reads the records of the given handler ids from the storage. Records
// that cannot be read are reported through onError and treated as absent,
// so that the handler runs afresh rather than never.
func Load(body map[string]any, storage progress.Storage, ids []string, now time.Time, onError func(id string, err error)) *State {
	st := &State{Handlers: map[string]*HandlerState{}}
	for _, id := range ids {
		r, err := storage.Fetch(body, id)
		if err != nil {
			onError(id, err)
			continue
		}
		if r == nil {
			continue
		}
		st.Order = append(st.Order, id)
		st.Handlers[id] = FromRecord(*r, now)
	}
	return st
}

// Extras counts the loaded records of other purposes than the given one
// (a cause superseded by a newer one), by purpose.
func (st *State) Extras(purpose string) map[string]Counts {
	out := map[string]Counts{}
	for _, id := range st.Order {
		h := st.Handlers[id]
		if h.Purpose == "" || h.Purpose == purpose {
			continue
		}
		c := out[h.Purpose]
		switch {
		case h.Success:
			c.Success++
		case h.Failure:
			c.Failure++
		default:
			c.Running++
		}
		out[h.Purpose] = c
	}
	return out
}

// Activate sets the purpose and marks the selected handlers active,
// starting fresh states for those without one. Selected handlers of another
// purpose are re-purposed (a resume mixed into an update keeps its record).
func (st *State) Activate(purpose string, selected []string, now time.Time) {
	st.Purpose = purpose
	for _, id := range selected {
		h, ok := st.Handlers[id]
		if !ok {
			st.Order = append(st.Order, id)
			st.Handlers[id] = &HandlerState{Active: true, Started: now, Purpose: purpose}
			continue
		}
		h.Active = true
		h.Purpose = purpose
	}
}

// Drop forgets a handler's state.
func (st *State) Drop(id string) {
	delete(st.Handlers, id)
	st.Order = slices.DeleteFunc(st.Order, func(o string) bool { return o == id })
}

// Done reports whether every active handler is finished.
func (st *State) Done() bool {
	for _, h := range st.Handlers {
		if h.Active && !h.Finished() {
			return false
		}
	}
	return true
}

// Counts summarises the handlers of the current purpose.
func (st *State) Counts() Counts {
	var c Counts
	for _, h := range st.Handlers {
		if st.Purpose != "" && h.Purpose != "" && h.Purpose != st.Purpose {
			continue
		}
		switch {
		case h.Success:
			c.Success++
		case h.Failure:
			c.Failure++
		default:
			c.Running++
		}
	}
	return c
}

// Delay is the shortest wait until an active unfinished handler is due:
// zero for one that is due now, false when none is waiting.
func (st *State) Delay(now time.Time) (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, h := range st.Handlers {
		if !h.Active || h.Finished() {
			continue
		}
		d := time.Duration(0)
		if h.Delayed != nil {
			d = max(0, h.Delayed.Sub(now))
		}
		if !found || d < best {
			best, found = d, true
		}
	}
	return best, found
}

// Next picks the handler to run in this cycle, Kopf's "asap" lifecycle: of
// the awake ones, the one with the fewest attempts, ties going to the
// earlier registered. Candidates are given in registration order.
func (st *State) Next(candidates []string, now time.Time) (string, bool) {
	best, found := "", false
	for _, id := range candidates {
		h := st.Handlers[id]
		if h == nil || !h.Awake(now) {
			continue
		}
		if !found || h.Retries < st.Handlers[best].Retries {
			best, found = id, true
		}
	}
	return best, found
}

// Standing is where an object stands with the handlers of its current
// cause: what the metrics of objects count.
type Standing struct {
	// Retrying: an active handler failed and sleeps until its retry (or a
	// parent sleeps until a sub-handler's retry).
	Retrying bool
	// Failed: an active handler failed for good.
	Failed bool
}

// Standing tells whether any active handler waits for a retry or has
// failed for good, at the given time. Handlers that are due now, or have
// not run yet, are not retrying: nothing holds them back.
func (st *State) Standing(now time.Time) Standing {
	var s Standing
	for _, h := range st.Handlers {
		if !h.Active {
			continue
		}
		s.Retrying = s.Retrying || h.Sleeping(now)
		s.Failed = s.Failed || h.Failure
	}
	return s
}
