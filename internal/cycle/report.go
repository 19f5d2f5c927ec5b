package cycle

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/posting"
)

// Reasons of the Warning Events about an object's stored state.
const (
	ReasonInvalidProgress  = "InvalidProgress"
	ReasonInvalidDiffBase  = "InvalidLastHandledConfiguration"
	ReasonDiffBaseTooLarge = "LastHandledConfigurationTooLarge"
)

// report logs a problem with the object's stored state and, the first
// time this value is seen, posts a Warning Event so that users see it too.
func (r *Reconciler) report(ctx context.Context, o Object, what, value, reason, message string) {
	o.Local.Error(nil, message) // the Event below says it to users once
	if !o.Mem.FirstReport(what, value) || r.poster == nil || !r.poster.Allows(posting.TypeWarning) {
		return
	}
	ref := posting.Ref{GVK: r.kind.GVK, Namespace: o.Obj.GetNamespace(), Name: o.Obj.GetName(), UID: o.Obj.GetUID()}
	if err := r.poster.Post(ctx, ref, posting.TypeWarning, reason, message); err != nil {
		o.Local.Error(err, "Failed to post an event.")
	}
}

// FilterPanicked is the hook of a kind's subjects (registry.Subject's
// FilterPanicked): the handler does not match, which the log says with
// the panic's stack, and the metrics count under the kind's label.
func FilterPanicked(kind string, log logr.Logger) func(h *execution.Handler, p *contain.Panic) {
	return func(h *execution.Handler, p *contain.Panic) {
		log.Error(p, fmt.Sprintf("%s does not match: its filter panicked: %s", h, p), "handler", h.ID, "stack", string(p.Stack))
		metrics.CallbackPanicked(kind, metrics.CallbackFilter, h.ID)
	}
}
