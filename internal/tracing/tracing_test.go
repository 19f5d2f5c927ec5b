package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func recorder(t *testing.T) (*tracetest.SpanRecorder, Tracer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return rec, New(tp)
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

var gvk = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

func TestCycleAndAttemptsAreParentedWithAttributesAndOutcomes(t *testing.T) {
	rec, tr := recorder(t)
	ctx, cycle := tr.Cycle(context.Background(), gvk, "ns", "obj", "u-1")
	Cause(ctx, "create")
	for i, c := range []struct {
		outcome string
		err     error
	}{{OutcomeTemporary, errors.New("again")}, {OutcomePermanent, errors.New("never")}, {OutcomePanic, errors.New("boom")}, {OutcomeSuccess, nil}} {
		_, a := Attempt(ctx, "Handler", "h1", i)
		a.EndAttempt(c.outcome, "class", c.err)
	}
	cycle.End(nil)

	spans := rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("want 4 attempts and 1 cycle, got %d spans", len(spans))
	}
	root := spans[4]
	if root.Name() != "cycle KopfExample" || root.Parent().IsValid() {
		t.Errorf("cycle span: name %q, parent %v", root.Name(), root.Parent())
	}
	ra := attrs(root)
	for k, want := range map[attribute.Key]string{AttrGroup: "kopf.dev", AttrVersion: "v1", AttrKind: "KopfExample",
		AttrNamespace: "ns", AttrName: "obj", AttrUID: "u-1", AttrCause: "create"} {
		if got := ra[k].AsString(); got != want {
			t.Errorf("cycle %s = %q, want %q", k, got, want)
		}
	}
	for i, want := range []string{OutcomeTemporary, OutcomePermanent, OutcomePanic, OutcomeSuccess} {
		s := spans[i]
		a := attrs(s)
		if s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("attempt %d is not the cycle's child", i)
		}
		if s.Name() != "handler h1" || a[AttrHandler].AsString() != "h1" || a[AttrRetry].AsInt64() != int64(i) || a[AttrOutcome].AsString() != want {
			t.Errorf("attempt %d: name %q, attributes %v", i, s.Name(), a)
		}
		failed := want != OutcomeSuccess
		if failed != (s.Status().Code == codes.Error) || failed != (len(s.Events()) == 1) {
			t.Errorf("attempt %d (%s): status %v, events %d", i, want, s.Status(), len(s.Events()))
		}
	}
}

func TestAttemptsWithoutParentOrTracerHaveNoSpan(t *testing.T) {
	rec, tr := recorder(t)
	if _, s := Attempt(context.Background(), "Handler", "h", 0); s.span != nil {
		t.Error("an attempt without a parent or a tracer has a span")
	}
	// Indexers have no spans even under a cycle.
	ctx, cycle := tr.Cycle(context.Background(), gvk, "ns", "obj", "u")
	if _, s := Attempt(ctx, "Indexer", "i", 0); s.span != nil {
		t.Error("an indexer has a span")
	}
	cycle.End(nil)
	// A daemon's run is a root span where the context carries the tracer,
	// naming the object.
	dctx := WithObject(WithTracer(context.Background(), tr), "ns", "obj", "u")
	_, d := Attempt(dctx, "Daemon", "d", 0)
	d.EndAttempt(OutcomeCancelled, "", context.Canceled)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("want the cycle and the daemon, got %d spans", len(spans))
	}
	if a := attrs(spans[1]); spans[1].Name() != "daemon d" || spans[1].Parent().IsValid() || a[AttrName].AsString() != "obj" || spans[1].Status().Code == codes.Error {
		t.Errorf("daemon span: %q parent %v attributes %v status %v", spans[1].Name(), spans[1].Parent(), a, spans[1].Status())
	}
}

func TestTransportSpansOnlyWithinASpan(t *testing.T) {
	var traceparents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparents = append(traceparents, r.Header.Get("traceparent"))
		if r.URL.Path == "/api/v1/namespaces/ns/pods/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	rec, tr := recorder(t)
	c := tr.HTTPClient(srv.Client())
	get := func(ctx context.Context, path string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	get(context.Background(), "/apis/coordination.k8s.io/v1/namespaces/ns/leases/x")
	if len(rec.Ended()) != 0 || traceparents[0] != "" {
		t.Fatalf("a request outside any span made %d spans, traceparent %q", len(rec.Ended()), traceparents[0])
	}
	ctx, cycle := tr.Cycle(context.Background(), gvk, "ns", "obj", "u")
	get(ctx, "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/obj/status")
	get(ctx, "/api/v1/namespaces/ns/pods/missing")
	cycle.End(nil)
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("want 2 client spans and the cycle, got %d", len(spans))
	}
	if spans[0].Name() != "GET kopfexamples/status" || spans[0].SpanKind() != trace.SpanKindClient || spans[0].Parent().SpanID() != spans[2].SpanContext().SpanID() {
		t.Errorf("client span: %q kind %v parent %v", spans[0].Name(), spans[0].SpanKind(), spans[0].Parent())
	}
	if attrs(spans[1])[AttrStatusCode].AsInt64() != 404 || spans[1].Status().Code != codes.Error {
		t.Errorf("a 404 is not an error: %v %v", attrs(spans[1]), spans[1].Status())
	}
	if traceparents[1] == "" || traceparents[1][3:35] != spans[0].SpanContext().TraceID().String() {
		t.Errorf("traceparent %q does not carry the trace", traceparents[1])
	}
}

func TestOffIsNothing(t *testing.T) {
	for name, tr := range map[string]Tracer{"nil": New(nil), "noop": New(noop.NewTracerProvider())} {
		if tr.On() {
			t.Errorf("%s: on", name)
		}
		c := &http.Client{}
		if tr.HTTPClient(c) != c {
			t.Errorf("%s: the HTTP client is wrapped", name)
		}
		ctx := context.Background()
		if WithTracer(ctx, tr) != ctx {
			t.Errorf("%s: the context is extended", name)
		}
	}
	off := Tracer{}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, cycle := off.Cycle(ctx, gvk, "ns", "obj", "u")
		Cause(c, "create")
		a, s := Attempt(WithObject(c, "ns", "obj", "u"), "Handler", "h", 0)
		_ = a
		s.EndAttempt(OutcomeSuccess, "", nil)
		cycle.End(nil)
	})
	if allocs != 0 {
		t.Errorf("off, a cycle with an attempt allocates %v times", allocs)
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods/p":                   "pods",
		"/api/v1/namespaces":                             "namespaces",
		"/apis/kopf.dev/v1/namespaces/ns/kopfexamples":   "kopfexamples",
		"/apis/kopf.dev/v1/kopfexamples/x/status":        "kopfexamples/status",
		"/apis/kopf.dev/v1/namespaces/ns/things/x/scale": "things/scale",
		"/healthz": "/healthz",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
