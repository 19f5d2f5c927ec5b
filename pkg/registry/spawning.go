package registry

import (
	"github.com/kopf-go/kopf/pkg/causes"
	"github.com/kopf-go/kopf/pkg/daemons"
	"github.com/kopf-go/kopf/pkg/execution"
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

// matches applies the filters to the object as it is now (daemons and
// timers have no old and new state to compare).
func (h *SpawnHandler) matches(s *Subject) bool {
	if !matchMeta(h.Labels, s.Labels) || !matchMeta(h.Annotations, s.Annotations) {
		return false
	}
	body := s.Cause.Body
	if len(h.Field) > 0 {
		v, present := fields.Resolve(body, h.Field)
		if h.Value.IsSet() && !h.Value.Match(v, present) || !h.Value.IsSet() && !present {
			return false
		}
	}
	if h.When == nil {
		return true
	}
	return h.When(s.Obj, &causes.Cause{HandlerID: h.ID, Body: body, Patch: s.Cause.Patch})
}

// MatchSpawning returns the daemons and timers that match the object now.
func (k *Kind) MatchSpawning(s *Subject) []*SpawnHandler {
	var out []*SpawnHandler
	for _, h := range k.Spawning {
		if h.matches(s) {
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
