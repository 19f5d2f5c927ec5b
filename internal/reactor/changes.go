package reactor

import (
	"context"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/rounds"
	"github.com/kopf-go/kopf/pkg/fields"
)

// processChange handles a create, update, delete or resume cause: one
// round of the kind's change handlers (internal/rounds) on the cycle's
// body and patch; when all the selected handlers are finished, the new
// essence is stored as the last handled one.
func (r handlerRound) processChange(ctx context.Context, c *cycle, subject *registry.Subject, newEssence, oldEssence map[string]any, now time.Time) {
	env := rounds.Env{
		Object: c.obj, Body: c.body, Patch: c.patch, Progress: r.settings.Progress, Clock: r.settings.Clock,
		Log: c.log, Defaults: r.settings.defaults(), Ref: c.ref(), Track: r.sup.Track, Observe: r.invocations,
		Panicked: func(id string) { metrics.CallbackPanicked(r.kindLabel, metrics.CallbackChange, id) },
		Invalid: func(id string, err error) {
			raw := ""
			if v, ok := fields.Resolve(c.body, fields.Path{"metadata", "annotations"}); ok {
				raw = fmt.Sprint(v)
			}
			r.report(ctx, c, "progress/"+id, raw, ReasonInvalidProgress,
				fmt.Sprintf("The progress of handler '%s' cannot be read and is ignored; the handler runs as if for the first time: %v", id, err))
		},
	}
	res := rounds.Run(r.handlerContext(ctx, c.log), env, r.kind, subject, now)
	c.left.Pending, c.left.Delay = !res.Done, res.Delay
	if res.Done {
		if oldEssence == nil || !fields.Equal(oldEssence, newEssence) {
			r.storeEssence(c, newEssence)
		}
		c.mem.fullyHandledOnce = true
	}
	r.memories.stand(c.mem, res.Standing)
}
