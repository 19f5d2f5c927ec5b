package cycle

import (
	"context"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/conditions"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
)

// WithStatusProbe tells the cycle whether the kind has a status
// subresource (the writer's probe): the conditions carry generations only
// where it has one. Else the kind is taken to have one.
func WithStatusProbe(p *write.StatusProbe) Option { return func(r *Reconciler) { r.status = p } }

// keepConditions puts the kind's conditions into the cycle's patch, where
// the kind keeps them (handlers.Conditions) and the round's outcome
// changed them; they ride on the cycle's write. A deleted object's are
// left as they are: kstatus calls it Terminating by its deletion
// timestamp, and a write to an object on its way out is a write for
// nothing.
func (r *Reconciler) keepConditions(ctx context.Context, o Object, f facts, pl plan, res RoundResult, now time.Time) {
	if !r.kind.Registered.Conditions || f.Deleting || res.State == nil {
		return
	}
	in := conditions.Input{Progress: conditions.FromState(res.State, pl.Reason.Title()), Resume: pl.Reason == causes.Resume, Now: now}
	if r.hasStatus(ctx) {
		in.Generation = o.Obj.GetGeneration()
	}
	current := func(field string) any {
		if v, ok := o.Patch.Get("status", field); ok {
			return v
		}
		v, _ := fields.Resolve(o.Body, fields.Path{"status", field})
		return v
	}
	for field, value := range conditions.Update(current(conditions.FieldConditions), current(conditions.FieldObservedGeneration), in) {
		o.Patch.SetStatus(field, value)
	}
}

// hasStatus reports whether the kind has a status subresource; a failed
// lookup counts as one (the write finds out again, and fails the same).
func (r *Reconciler) hasStatus(ctx context.Context) bool {
	if r.status == nil {
		return true
	}
	has, err := r.status.Has(ctx)
	return has || err != nil
}

// rebaseConditions takes the engine's conditions of an unwritten patch
// (decided on an older read) into the conditions as the object has them
// now, so that writing it late does not undo what other writers wrote
// meanwhile.
func (r *Reconciler) rebaseConditions(o Object, p *patch.Patch) {
	if !r.kind.Registered.Conditions {
		return
	}
	ours, ok := p.Get("status", conditions.FieldConditions)
	if !ok {
		return
	}
	fresh, _ := fields.Resolve(o.Body, fields.Path{"status", conditions.FieldConditions})
	oursList, _ := ours.([]any)
	freshList, _ := fresh.([]any)
	p.SetStatus(conditions.FieldConditions, conditions.Rebase(oursList, freshList))
}
