package tracing

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of API requests' and reviews' spans (OpenTelemetry's
// HTTP conventions, and the review's own).
const (
	AttrMethod      = attribute.Key("http.request.method")
	AttrURL         = attribute.Key("url.full")
	AttrServer      = attribute.Key("server.address")
	AttrStatusCode  = attribute.Key("http.response.status_code")
	AttrOperation   = attribute.Key("kopf.webhook.operation")
	AttrAllowed     = attribute.Key("kopf.webhook.allowed")
	AttrWebhookPath = attribute.Key("url.path")
)

// traceContext is W3C trace-context: the traceparent and tracestate
// headers, which the API server reads and sends when its own tracing is
// on.
var traceContext = propagation.TraceContext{}

// transport starts a client span for each request whose context carries
// a recording span, and passes the others on untouched: the informers'
// lists and watches and the Leases' renewals, made outside any cycle,
// would otherwise be root spans of their own, many and of no interest.
type transport struct{ next http.RoundTripper }

// Transport is rt (nil: http.DefaultTransport) with client spans for the
// requests made within a span.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if _, done := rt.(*transport); done {
		return rt
	}
	return &transport{next: rt}
}

// HTTPClient is a copy of c whose requests made within a span have client
// spans; c itself is left alone (others share it). Off, it is c.
func (t Tracer) HTTPClient(c *http.Client) *http.Client {
	if t.tracer == nil {
		return c
	}
	traced := *c
	traced.Transport = Transport(c.Transport)
	return &traced
}

// RoundTrip sends the request, within a client span if its context
// carries a recording span; the span's context goes along in traceparent.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := trace.SpanFromContext(req.Context())
	if !parent.IsRecording() {
		return t.next.RoundTrip(req)
	}
	ctx, span := parent.TracerProvider().Tracer(Scope).Start(req.Context(), req.Method+" "+resourceOf(req.URL.Path),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrMethod.String(req.Method), AttrURL.String(req.URL.String()), AttrServer.String(req.URL.Host)))
	defer span.End()
	req = req.Clone(ctx) // a RoundTripper must not change the caller's request
	traceContext.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		fail(span, err)
		return resp, err
	}
	span.SetAttributes(AttrStatusCode.Int(resp.StatusCode))
	if resp.StatusCode >= http.StatusBadRequest {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}

// resourceOf is the resource (and subresource) of a Kubernetes API path,
// for the span's name: /apis/g/v/namespaces/ns/things/name/status is
// "things/status"; a path of another shape is itself.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// Review starts the span of one admission review, under the API server's
// span if the request carries its traceparent.
func (t Tracer) Review(ctx context.Context, header http.Header, path string) (context.Context, Span) {
	if t.tracer == nil {
		return ctx, Span{}
	}
	ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(header))
	ctx, span := t.tracer.Start(ctx, "webhook review", trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(AttrWebhookPath.String(path))
	}
	return ctx, Span{span}
}

// Reviewed tells the review's span what was reviewed, and the answer.
func (s Span) Reviewed(operation, kind, namespace, name, uid string, allowed bool) {
	if !s.Recording() {
		return
	}
	s.span.SetAttributes(AttrOperation.String(operation), AttrKind.String(kind), AttrNamespace.String(namespace),
		AttrName.String(name), AttrUID.String(uid), AttrAllowed.Bool(allowed))
}
