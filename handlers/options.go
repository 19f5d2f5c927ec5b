package handlers

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/filter"
)

// option is what every option is: apply sets the option's part of the
// handler being registered. The compiler decides which options a
// registration function takes: the function's option interface adds one
// empty method of its own (CreateOption adds create, ...), and an option
// type has the methods of the functions it applies to. The classes of
// options that apply to several functions (FilterOption, LimitOption,
// InitialDelayOption) embed those functions' interfaces. A new
// registration function declares its interface, adds it to the classes
// that apply to it, and its method to their types (filterOption, Labels and
// Annotations; limit); every other option type stays as it is, and the
// compiler rejects it for the new function.
type option interface{ apply(*target) }

// target is the handler an option configures: the parts that this
// handler has (the others are nil, and the compiler keeps the options that
// would need them away).
type target struct {
	handler *execution.Handler      // the limits; nil for webhooks
	filters *registry.Filters       // nil for operator-wide handlers
	change  *registry.ChangeHandler // change handlers only
	spawn   *registry.SpawnHandler  // daemons and timers only
	webhook *admission.Handler      // webhook handlers only
}

// applyAll applies the options in order: a later one wins.
func applyAll[O option](t target, opts []O) {
	for _, o := range opts {
		o.apply(&t)
	}
}

// The options of each registration function, which the option types
// implement: each lists the option classes it takes.
type (
	// CreateOption configures OnCreate: filters and limits.
	CreateOption interface {
		option
		create()
	}
	// UpdateOption configures OnUpdate, OnField and Subhandler: filters,
	// limits, ValueBefore and ValueAfter.
	UpdateOption interface {
		option
		update()
	}
	// DeleteOption configures OnDelete: filters, limits and Optional.
	DeleteOption interface {
		option
		delete()
	}
	// ResumeOption configures OnResume: filters, limits and Deleted.
	ResumeOption interface {
		option
		resume()
	}
	// IndexOption configures Index: filters and limits.
	IndexOption interface {
		option
		index()
	}
	// DaemonOption configures Daemon: filters, limits, InitialDelay and
	// the Cancellation options.
	DaemonOption interface {
		option
		daemon()
	}
	// TimerOption configures Timer: filters, limits, InitialDelay,
	// Interval, Idle and Sharp.
	TimerOption interface {
		option
		timer()
	}
	// WebhookOption configures OnValidate and OnMutate: filters (which
	// test the request's object) and the webhook's own options.
	WebhookOption interface {
		option
		webhook()
	}
	// ChildOption configures OnChild: Labels, Annotations, Field and
	// Value, which test the child, and limits.
	ChildOption interface {
		option
		child()
	}
)

// The option classes: the options of several registration functions.
type (
	// FilterOption narrows the objects a handler runs for: Labels,
	// Annotations, Field, Value, When. Every handler of a resource takes
	// them; OnEvent takes only them.
	FilterOption interface {
		CreateOption
		UpdateOption
		DeleteOption
		ResumeOption
		IndexOption
		DaemonOption
		TimerOption
		WebhookOption
		event()
	}
	// LimitOption limits the attempts of a handler that is retried:
	// Retries, Backoff, Timeout, Errors. On-event and webhook handlers
	// are not retried; operator-wide handlers (OnStartup, ...) take only
	// these.
	LimitOption interface {
		CreateOption
		UpdateOption
		DeleteOption
		ResumeOption
		IndexOption
		DaemonOption
		TimerOption
		ChildOption
		activity()
	}
	// FieldOption is Field and Value: filters of every handler of a
	// resource, and of child handlers (which test the child's field).
	FieldOption interface {
		FilterOption
		ChildOption
	}
)

// filterOption is Field, Value and When: an option of every handler of a
// resource, webhooks included.
type filterOption func(*registry.Filters)

func (o filterOption) apply(t *target) { o(t.filters) }
func (filterOption) event()            {}
func (filterOption) create()           {}
func (filterOption) update()           {}
func (filterOption) delete()           {}
func (filterOption) resume()           {}
func (filterOption) index()            {}
func (filterOption) daemon()           {}
func (filterOption) timer()            {}
func (filterOption) webhook()          {}
func (filterOption) child()            {}

// Labels filters objects by labels: each key must match its filter.
type Labels map[string]filter.Filter

func (l Labels) apply(t *target) { t.filters.Labels = l }
func (Labels) event()            {}
func (Labels) create()           {}
func (Labels) update()           {}
func (Labels) delete()           {}
func (Labels) resume()           {}
func (Labels) index()            {}
func (Labels) daemon()           {}
func (Labels) timer()            {}
func (Labels) webhook()          {}
func (Labels) child()            {}

// Annotations filters objects by annotations: each key must match its
// filter.
type Annotations map[string]filter.Filter

func (a Annotations) apply(t *target) { t.filters.Annotations = a }
func (Annotations) event()            {}
func (Annotations) create()           {}
func (Annotations) update()           {}
func (Annotations) delete()           {}
func (Annotations) resume()           {}
func (Annotations) index()            {}
func (Annotations) daemon()           {}
func (Annotations) timer()            {}
func (Annotations) webhook()          {}
func (Annotations) child()            {}

// Field makes the handler care about one field (dotted, e.g. "spec.field"):
// it runs only when the field is present in the old or new state (or
// matches Value), sees the field's old/new values and diff, and its id gets
// the suffix "/<field>". The field joins the essence even under status.
func Field(path string) FieldOption {
	return filterOption(func(f *registry.Filters) { f.Field = fields.Parse(path) })
}

// Value filters the Field's value: Equals(v), Present, Absent or Check(fn)
// (Kopf's value=). Daemons and timers test the object's current value.
func Value(v filter.Filter) FieldOption {
	return filterOption(func(f *registry.Filters) { f.Value = v })
}

// When runs the handler only if fn returns true; it is evaluated after all
// other filters. T must be the resource's object type.
func When[T client.Object](fn func(obj T, c *cause.Change) bool) FilterOption {
	return filterOption(func(f *registry.Filters) {
		f.When = func(obj registry.Object, c *causes.Cause) bool {
			typed, ok := obj.(T)
			return ok && fn(typed, c)
		}
	})
}

// limit is Retries, Backoff, Timeout and Errors: an option of the handlers
// that are retried (on-event handlers are not: their errors are only
// logged, as in Kopf; nor are webhooks: they answer at once).
type limit func(*execution.Handler)

func (o limit) apply(t *target) { o(t.handler) }
func (limit) activity()         {}
func (limit) create()           {}
func (limit) update()           {}
func (limit) delete()           {}
func (limit) resume()           {}
func (limit) index()            {}
func (limit) daemon()           {}
func (limit) timer()            {}
func (limit) child()            {}

// Retries limits the attempts of a handler (in total, as in Kopf: 3 means
// the handler is called at most three times). Zero: no limit.
func Retries(n int) LimitOption { return limit(func(h *execution.Handler) { h.Retries = n }) }

// Backoff is the delay before retrying after an arbitrary error (default:
// Options.DefaultBackoff, 60 s).
func Backoff(d time.Duration) LimitOption {
	return limit(func(h *execution.Handler) { h.Backoff = &d })
}

// Timeout limits the time since the first attempt; after it the handler
// fails. It is also the deadline of the handler's context.
func Timeout(d time.Duration) LimitOption { return limit(func(h *execution.Handler) { h.Timeout = d }) }

// Errors sets what arbitrary errors mean for the handler.
func Errors(mode failure.ErrorsMode) LimitOption {
	return limit(func(h *execution.Handler) { h.Errors = mode })
}

// fieldChangeOption, resumeOption and deleteOption are options of one
// cause's change handlers each: update and field handlers, resume
// handlers, delete handlers.
type (
	fieldChangeOption func(*registry.ChangeHandler)
	resumeOption      func(*registry.ChangeHandler)
	deleteOption      func(*registry.ChangeHandler)
)

func (o fieldChangeOption) apply(t *target) { o(t.change) }
func (fieldChangeOption) update()           {}
func (o resumeOption) apply(t *target)      { o(t.change) }
func (resumeOption) resume()                {}
func (o deleteOption) apply(t *target)      { o(t.change) }
func (deleteOption) delete()                {}

// ValueBefore filters the Field's value before the change (Kopf's old=;
// needs Field on OnUpdate).
func ValueBefore(f filter.Filter) UpdateOption {
	return fieldChangeOption(func(h *registry.ChangeHandler) { h.Old = f })
}

// ValueAfter filters the Field's value after the change (Kopf's new=;
// needs Field on OnUpdate).
func ValueAfter(f filter.Filter) UpdateOption {
	return fieldChangeOption(func(h *registry.ChangeHandler) { h.New = f })
}

// Deleted lets a resume handler run also for objects that are already
// being deleted when the operator starts (by default it does not, so that
// resume handlers do not re-acquire what delete handlers release).
func Deleted() ResumeOption {
	return resumeOption(func(h *registry.ChangeHandler) { h.Deleted = true })
}

// Optional makes a delete handler not require the finalizer: it runs only
// if the finalizer is on the object for another reason, as in Kopf.
func Optional() DeleteOption {
	return deleteOption(func(h *registry.ChangeHandler) { h.RequiresFinalizer = false })
}

// ParamOption is Param: an option of every handler.
type ParamOption interface {
	FilterOption
	LimitOption
}

// param is the value handed to the handler in its cause.
type param struct{ v any }

func (p param) apply(t *target) {
	if t.handler != nil {
		t.handler.Param = p.v
	}
	if t.webhook != nil {
		t.webhook.Param = p.v
	}
}
func (param) activity() {}
func (param) event()    {}
func (param) create()   {}
func (param) update()   {}
func (param) delete()   {}
func (param) resume()   {}
func (param) index()    {}
func (param) daemon()   {}
func (param) timer()    {}
func (param) webhook()  {}
func (param) child()    {}

// Param hands v to the handler in its cause (cause.Change.Param,
// cause.Daemon.Param, cause.Event.Param, admission.Request.Param, ...), as
// Kopf's param=: one function registered several times, under several
// ids, each with a value of its own.
//
//	for _, tier := range []string{"gold", "silver"} {
//		handlers.OnCreate(kind, "create_"+tier, createFn, handlers.Param(tier))
//	}
func Param(v any) ParamOption { return param{v} }
