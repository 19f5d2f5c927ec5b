package registry

import (
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/fields"
)

// SpawnHandler is one registered daemon or timer.
type SpawnHandler struct {
	execution.Handler
	Filters
	daemons.Spec
}

// Daemon returns the handler as the supervisor runs it.
func (h *SpawnHandler) Daemon() daemons.Handler {
	return daemons.Handler{Handler: h.Handler, Spec: h.Spec}
}

// matchBody applies the handler's filters to the object as it is now
// (daemons, timers, on-event and index handlers have no old and new
// state); a panic in them is a mismatch.
func (f *Filters) matchBody(s *Subject, h *execution.Handler) bool {
	return s.contained(h, func() bool { return f.matchBodyNow(s, h.ID) })
}

func (f *Filters) matchBodyNow(s *Subject, id string) bool {
	if !s.matchMeta(f.Labels, f.Annotations) {
		return false
	}
	body := s.Cause.Body
	if len(f.Field) > 0 {
		v, present := fields.Resolve(body, f.Field)
		if f.Value.IsSet() && !f.Value.Match(v, present) || !f.Value.IsSet() && !present {
			return false
		}
	}
	if f.When == nil {
		return true
	}
	c := *s.Cause
	c.HandlerID = id
	return f.When(s.Obj, &c)
}

// MatchSpawning returns the daemons and timers that match the object now.
func (k *Kind) MatchSpawning(s *Subject) []*SpawnHandler {
	var out []*SpawnHandler
	for _, h := range k.Spawning {
		if h.matchBody(s, &h.Handler) {
			out = append(out, h)
		}
	}
	return out
}

// HasIdleTimers reports whether some timer waits for the object to be
// unchanged for a while, which needs the essence's fingerprint each cycle.
func (k *Kind) HasIdleTimers() bool {
	for _, h := range k.Spawning {
		if h.Kind == daemons.KindTimer && h.Idle > 0 {
			return true
		}
	}
	return false
}
