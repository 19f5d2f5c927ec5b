package tracing

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// receiver is an OTLP/HTTP receiver of traces: it keeps the spans of each
// ExportTraceServiceRequest, and the service names they came from.
type receiver struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
	services []string
}

// listenReceiver serves a receiver on the listener until the test ends.
func listenReceiver(t *testing.T, l net.Listener) *receiver {
	t.Helper()
	r := &receiver{url: "http://" + l.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.export), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.srv.Serve(l) }()
	t.Cleanup(func() { _ = r.srv.Close(); <-done })
	return r
}

func (r *receiver) export(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var in collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &in)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "not an export of traces", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests++
	for _, rs := range in.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.services = append(r.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *receiver) received() (requests int, spans []*tracepb.Span, services []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]*tracepb.Span(nil), r.spans...), append([]string(nil), r.services...)
}

// handleOne runs the operator's process with the environment, has it
// handle one object (its handler creates a ConfigMap), and stops it with
// SIGTERM, which flushes its spans.
func handleOne(t *testing.T, environment ...string) {
	t.Helper()
	ns := namespace(t)
	p, err := testenv.StartProcess(operator, []string{"--standalone", "--verbose", "--namespace=" + ns},
		append([]string{"KUBECONFIG=" + kubeconfig}, environment...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("the operator's output:\n%s", p.Output())
		}
	})
	ctx := context.Background()
	if err := k8s.Create(ctx, kex(ns, "obj")); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(t, "the handler's ConfigMap", 60*time.Second, func() bool {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "obj-made"}, &corev1.ConfigMap{}) == nil
	})
	stopCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := p.Stop(stopCtx); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}

func TestProcessExportsOverOTLP(t *testing.T) {
	kopftest.NoLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := listenReceiver(t, l)
	handleOne(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+r.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=traced-operator", "OTEL_BSP_SCHEDULE_DELAY=100")

	_, spans, services := r.received()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	var chained bool
	for _, s := range spans {
		if s.Name != "POST configmaps" {
			continue
		}
		if h := parent(s); h != nil && h.Name == "handler fetch" {
			if c := parent(h); c != nil && c.Name == "cycle KopfExample" && len(c.ParentSpanId) == 0 {
				chained = true
			}
		}
	}
	if !chained {
		names := make([]string, 0, len(spans))
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Errorf("no chain cycle -> handler fetch -> POST configmaps among %q", names)
	}
	for _, s := range services {
		if s != "traced-operator" {
			t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", s)
		}
	}
}

func TestProcessWithoutEndpointExportsNothing(t *testing.T) {
	// The receiver listens where an exporter without an endpoint would
	// send (OTLP/HTTP's default), if that port is free here.
	l, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Logf("the default OTLP port is taken (%v): a receiver elsewhere", err)
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	r := listenReceiver(t, l)
	handleOne(t, "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		"OTEL_SERVICE_NAME=traced-operator", "OTEL_BSP_SCHEDULE_DELAY=100")
	if requests, spans, _ := r.received(); requests != 0 {
		t.Errorf("without an endpoint, %d exports of %d spans", requests, len(spans))
	}
}
