package handlers

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/fields"
	"github.com/kopf-go/kopf/internal/registry"
)

// Options are checked at compile time per handler kind: each registration
// function accepts only the options that make sense for it. The common
// options (retries, filters, ...) satisfy all of these interfaces.

// CreateOption configures an OnCreate handler.
type CreateOption interface {
	applyChange(*registry.ChangeHandler)
	create()
}

// EventOption configures an OnEvent handler: filters only.
type EventOption interface {
	applyEvent(*registry.EventHandler)
	event()
}

// IndexOption configures an Index handler.
type IndexOption interface {
	applyIndex(*registry.IndexHandler)
	index()
}

// DaemonOption configures a Daemon.
type DaemonOption interface {
	applySpawn(*registry.SpawnHandler)
	daemon()
}

// TimerOption configures a Timer.
type TimerOption interface {
	applySpawn(*registry.SpawnHandler)
	timer()
}

// UpdateOption configures an OnUpdate handler.
type UpdateOption interface {
	applyChange(*registry.ChangeHandler)
	update()
}

// DeleteOption configures an OnDelete handler.
type DeleteOption interface {
	applyChange(*registry.ChangeHandler)
	delete()
}

// ResumeOption configures an OnResume handler.
type ResumeOption interface {
	applyChange(*registry.ChangeHandler)
	resume()
}

// FieldOption configures an OnField handler.
type FieldOption interface {
	applyChange(*registry.ChangeHandler)
	field()
}

// Option is a filter, an option of every handler: change handlers,
// daemons, timers, on-event and index handlers.
type Option func(*execution.Handler, *registry.Filters)

func (o Option) applyChange(h *registry.ChangeHandler) { o(&h.Handler, &h.Filters) }
func (o Option) applySpawn(h *registry.SpawnHandler)   { o(&h.Handler, &h.Filters) }
func (o Option) applyEvent(h *registry.EventHandler)   { o(&h.Handler, &h.Filters) }
func (o Option) applyIndex(h *registry.IndexHandler)   { o(&h.Handler, &h.Filters) }
func (Option) create()                                 {}
func (Option) update()                                 {}
func (Option) delete()                                 {}
func (Option) resume()                                 {}
func (Option) field()                                  {}
func (Option) daemon()                                 {}
func (Option) timer()                                  {}
func (Option) event()                                  {}
func (Option) index()                                  {}

// LimitOption is an option of the handlers that are retried: all but
// on-event handlers (their errors are only logged, as in Kopf).
type LimitOption func(*execution.Handler)

func (o LimitOption) applyChange(h *registry.ChangeHandler) { o(&h.Handler) }
func (o LimitOption) applySpawn(h *registry.SpawnHandler)   { o(&h.Handler) }
func (o LimitOption) applyIndex(h *registry.IndexHandler)   { o(&h.Handler) }
func (LimitOption) create()                                 {}
func (LimitOption) update()                                 {}
func (LimitOption) delete()                                 {}
func (LimitOption) resume()                                 {}
func (LimitOption) field()                                  {}
func (LimitOption) daemon()                                 {}
func (LimitOption) timer()                                  {}
func (LimitOption) index()                                  {}

// Retries limits the attempts of a handler (in total, as in Kopf: 3 means
// the handler is called at most three times). Zero: no limit.
func Retries(n int) LimitOption { return func(h *execution.Handler) { h.Retries = n } }

// Backoff is the delay before retrying after an arbitrary error (default:
// Options.DefaultBackoff, 60 s).
func Backoff(d time.Duration) LimitOption { return func(h *execution.Handler) { h.Backoff = &d } }

// Timeout limits the time since the first attempt; after it the handler
// fails. It is also the deadline of the handler's context.
func Timeout(d time.Duration) LimitOption { return func(h *execution.Handler) { h.Timeout = d } }

// Errors sets what arbitrary errors mean for the handler.
func Errors(mode ErrorsMode) LimitOption { return func(h *execution.Handler) { h.Errors = mode } }

// Field makes the handler care about one field (dotted, e.g. "spec.field"):
// it runs only when the field is present in the old or new state (or
// matches Value), sees the field's old/new values and diff, and its id gets
// the suffix "/<field>". The field joins the essence even under status.
func Field(path string) Option {
	return func(_ *execution.Handler, f *registry.Filters) { f.Field = fields.Parse(path) }
}

// Value filters the Field's value: Equals(v), Present, Absent or Check(fn).
// Daemons and timers test the object's current value.
func Value(v Filter) Option { return func(_ *execution.Handler, f *registry.Filters) { f.Value = v } }

// When runs the handler only if fn returns true; it is evaluated after all
// other filters. T must be the kind's object type.
func When[T client.Object](fn func(obj T, c *Cause) bool) Option {
	return func(_ *execution.Handler, f *registry.Filters) {
		f.When = func(obj registry.Object, c *causes.Cause) bool {
			typed, ok := obj.(T)
			return ok && fn(typed, c)
		}
	}
}

// Labels filters objects by labels: each key must match its filter.
type Labels map[string]Filter

func (l Labels) applyChange(h *registry.ChangeHandler) { h.Labels = l }
func (l Labels) applySpawn(h *registry.SpawnHandler)   { h.Labels = l }
func (l Labels) applyEvent(h *registry.EventHandler)   { h.Labels = l }
func (l Labels) applyIndex(h *registry.IndexHandler)   { h.Labels = l }
func (Labels) event()                                  {}
func (Labels) index()                                  {}
func (Labels) daemon()                                 {}
func (Labels) timer()                                  {}
func (Labels) create()                                 {}
func (Labels) update()                                 {}
func (Labels) delete()                                 {}
func (Labels) resume()                                 {}
func (Labels) field()                                  {}

// Annotations filters objects by annotations: each key must match its filter.
type Annotations map[string]Filter

func (a Annotations) applyChange(h *registry.ChangeHandler) { h.Annotations = a }
func (a Annotations) applySpawn(h *registry.SpawnHandler)   { h.Annotations = a }
func (a Annotations) applyEvent(h *registry.EventHandler)   { h.Annotations = a }
func (a Annotations) applyIndex(h *registry.IndexHandler)   { h.Annotations = a }
func (Annotations) event()                                  {}
func (Annotations) index()                                  {}
func (Annotations) daemon()                                 {}
func (Annotations) timer()                                  {}
func (Annotations) create()                                 {}
func (Annotations) update()                                 {}
func (Annotations) delete()                                 {}
func (Annotations) resume()                                 {}
func (Annotations) field()                                  {}

// changeOption is an option of update and field handlers only.
type changeOption func(*registry.ChangeHandler)

func (o changeOption) applyChange(h *registry.ChangeHandler) { o(h) }
func (changeOption) update()                                 {}
func (changeOption) field()                                  {}

// Old filters the field's value before the change (needs Field on OnUpdate).
func Old(f Filter) UpdateOption { return changeOption(func(h *registry.ChangeHandler) { h.Old = f }) }

// New filters the field's value after the change (needs Field on OnUpdate).
func New(f Filter) UpdateOption { return changeOption(func(h *registry.ChangeHandler) { h.New = f }) }

type resumeOption func(*registry.ChangeHandler)

func (o resumeOption) applyChange(h *registry.ChangeHandler) { o(h) }
func (resumeOption) resume()                                 {}

// Deleted lets a resume handler run also for objects that are already
// being deleted when the operator starts (by default it does not, so that
// resume handlers do not re-acquire what delete handlers release).
func Deleted() ResumeOption {
	return resumeOption(func(h *registry.ChangeHandler) { h.Deleted = true })
}

type deleteOption func(*registry.ChangeHandler)

func (o deleteOption) applyChange(h *registry.ChangeHandler) { o(h) }
func (deleteOption) delete()                                 {}

// Optional makes a delete handler not require the finalizer: it runs only
// if the finalizer is on the object for another reason, as in Kopf.
func Optional() DeleteOption {
	return deleteOption(func(h *registry.ChangeHandler) { h.RequiresFinalizer = false })
}

// Filter tests one value: of a label, an annotation or a field.
type Filter = registry.Filter

// Present matches a label, annotation or field that is there.
var Present = registry.Present

// Absent matches a label, annotation or field that is not there.
var Absent = registry.Absent

// Equals matches an exact value.
func Equals(value any) Filter { return registry.Equals(value) }

// Check matches when fn returns true; fn gets nil for an absent value.
func Check(fn func(value any) bool) Filter { return registry.Check(fn) }
