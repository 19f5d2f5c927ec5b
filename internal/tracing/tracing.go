// Package tracing is the engine's OpenTelemetry spans: an object's cycle,
// each attempt of a handler (a daemon's or a timer's run included), each
// admission review, and the API requests made within them (docs/tracing.md).
//
// Off (no TracerProvider), it costs a nil check or a context lookup: no
// span is started and no attribute is built. Attributes are built only
// for spans that record, so a sampler that drops a trace costs little
// more.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Scope is the instrumentation scope of the engine's spans.
const Scope = "github.com/kopf-go/kopf"

// The attributes of the engine's spans.
const (
	AttrGroup     = attribute.Key("k8s.resource.group")
	AttrVersion   = attribute.Key("k8s.resource.version")
	AttrKind      = attribute.Key("k8s.resource.kind")
	AttrNamespace = attribute.Key("k8s.namespace.name")
	AttrName      = attribute.Key("k8s.object.name")
	AttrUID       = attribute.Key("k8s.object.uid")
	AttrCause     = attribute.Key("kopf.cause")
	AttrHandler   = attribute.Key("kopf.handler.id")
	// AttrHandlerKind is the handler's kind: handler, daemon, timer,
	// activity.
	AttrHandlerKind = attribute.Key("kopf.handler.kind")
	// AttrRetry is how many attempts came before this one (0: the first).
	AttrRetry = attribute.Key("kopf.handler.retry")
	// AttrOutcome is what became of an attempt (the Outcome... values).
	AttrOutcome = attribute.Key("kopf.handler.outcome")
	// AttrOutcomeClass is the finer class of the metrics' outcome label
	// (execution.Classify).
	AttrOutcomeClass = attribute.Key("kopf.handler.outcome_class")
)

// The outcomes of an attempt, as AttrOutcome says them.
const (
	OutcomeSuccess   = "success"
	OutcomeTemporary = "temporary"
	OutcomePermanent = "permanent"
	OutcomePanic     = "panic"
	OutcomeCancelled = "cancelled"
)

// Tracer starts the engine's root spans: an object's cycle, a daemon's or
// a timer's run (through the context: WithTracer), a webhook review. The
// zero Tracer is off: it starts nothing.
type Tracer struct{ tracer trace.Tracer }

// New is the tracer of the provider; nil or a noop provider: off.
func New(tp trace.TracerProvider) Tracer {
	if tp == nil {
		return Tracer{}
	}
	if _, noOp := tp.(noop.TracerProvider); noOp {
		return Tracer{}
	}
	return Tracer{tracer: tp.Tracer(Scope)}
}

// On reports whether the tracer starts spans.
func (t Tracer) On() bool { return t.tracer != nil }

// Span is one of the engine's spans, or none (the zero Span), whose
// methods then do nothing.
type Span struct{ span trace.Span }

// Recording reports whether the span records what it is told.
func (s Span) Recording() bool { return s.span != nil && s.span.IsRecording() }

// End ends the span; a non-nil err is recorded as its error.
func (s Span) End(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		fail(s.span, err)
	}
	s.span.End()
}

func fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Cycle starts the span of one object's cycle.
func (t Tracer) Cycle(ctx context.Context, gvk schema.GroupVersionKind, namespace, name, uid string) (context.Context, Span) {
	if t.tracer == nil {
		return ctx, Span{}
	}
	ctx, span := t.tracer.Start(ctx, "cycle")
	if span.IsRecording() {
		span.SetName("cycle " + gvk.Kind)
		span.SetAttributes(AttrGroup.String(gvk.Group), AttrVersion.String(gvk.Version), AttrKind.String(gvk.Kind),
			AttrNamespace.String(namespace), AttrName.String(name), AttrUID.String(uid))
	}
	return ctx, Span{span}
}

// Cause names the cause of the cycle whose span is in ctx.
func Cause(ctx context.Context, cause string) {
	if span := trace.SpanFromContext(ctx); cause != "" && span.IsRecording() {
		span.SetAttributes(AttrCause.String(cause))
	}
}

// handlerKinds are the span names of the handlers' titles
// (execution.Handler.Title) that have spans: indexers have none, as they
// are called for every watch event, compute only, and make no requests.
var handlerKinds = map[string]string{"": "handler", "Handler": "handler", "Daemon": "daemon", "Timer": "timer", "Activity": "activity"}

// Attempt starts the span of one attempt of a handler: under the span in
// ctx (a cycle's), else as a root where ctx carries a tracer (WithTracer:
// daemons, timers, on-event and activity handlers), else none. Retry is
// how many attempts came before.
func Attempt(ctx context.Context, title, id string, retry int) (context.Context, Span) {
	kind, traced := handlerKinds[title]
	if !traced {
		return ctx, Span{}
	}
	var tracer trace.Tracer
	if parent := trace.SpanFromContext(ctx); parent.IsRecording() {
		tracer = parent.TracerProvider().Tracer(Scope)
	} else if t := tracerFrom(ctx); t.tracer != nil {
		tracer = t.tracer
	} else {
		return ctx, Span{}
	}
	ctx, span := tracer.Start(ctx, kind)
	if span.IsRecording() {
		span.SetName(kind + " " + id)
		span.SetAttributes(AttrHandler.String(id), AttrHandlerKind.String(kind), AttrRetry.Int(retry))
		if o, ok := ctx.Value(objectKey{}).(*object); ok {
			span.SetAttributes(AttrNamespace.String(o.namespace), AttrName.String(o.name), AttrUID.String(o.uid))
		}
	}
	return ctx, Span{span}
}

// EndAttempt ends an attempt's span with its outcome (Outcome...) and
// class; err is the handler's failure, if any.
func (s Span) EndAttempt(outcome, class string, err error) {
	if s.span == nil {
		return
	}
	if s.span.IsRecording() {
		s.span.SetAttributes(AttrOutcome.String(outcome), AttrOutcomeClass.String(class))
		if err != nil && outcome != OutcomeSuccess && outcome != OutcomeCancelled {
			fail(s.span, err)
		}
	}
	s.span.End()
}

type tracerKey struct{}

// WithTracer returns a context whose handlers' attempts start root spans
// of t where no span is in the context (nothing if t is off).
func WithTracer(ctx context.Context, t Tracer) context.Context {
	if t.tracer == nil {
		return ctx
	}
	return context.WithValue(ctx, tracerKey{}, t)
}

func tracerFrom(ctx context.Context) Tracer {
	t, _ := ctx.Value(tracerKey{}).(Tracer)
	return t
}

type objectKey struct{}

type object struct{ namespace, name, uid string }

// WithObject returns a context whose root spans of attempts (a daemon's)
// name the object; nothing is added where ctx carries no tracer.
func WithObject(ctx context.Context, namespace, name, uid string) context.Context {
	if tracerFrom(ctx).tracer == nil {
		return ctx
	}
	return context.WithValue(ctx, objectKey{}, &object{namespace: namespace, name: name, uid: uid})
}
