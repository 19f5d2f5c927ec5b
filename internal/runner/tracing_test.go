package runner

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
)

func TestTracingIsOffWithoutAnEndpoint(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no endpoint":  {},
		"sdk disabled": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		"exporter off": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			for k, v := range env {
				t.Setenv(k, v)
			}
			tp, stop, err := Tracing(context.Background(), logr.Discard(), "op")
			if err != nil || tp != nil {
				t.Errorf("Tracing() = %v, %v; want nil, nil", tp, err)
			}
			stop()
		})
	}
}

func TestTracingRefusesAnUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
	if _, _, err := Tracing(context.Background(), logr.Discard(), "op"); err == nil {
		t.Error("http/json is accepted")
	}
}

// collector counts the exports it receives over gRPC.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	exports *atomic.Int32
}

func (c collector) Export(context.Context, *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.exports.Add(1)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// The exporters' goroutines end with stop, which flushes the spans.
func TestTracingExportsAndStops(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			var exports atomic.Int32
			var endpoint string
			var closeServer func()
			if protocol == "grpc" {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv := grpc.NewServer()
				collectortrace.RegisterTraceServiceServer(srv, collector{exports: &exports})
				go func() { _ = srv.Serve(l) }()
				closeServer = srv.Stop
				endpoint = "http://" + l.Addr().String()
			} else {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					exports.Add(1)
					w.Header().Set("Content-Type", "application/x-protobuf")
				}))
				closeServer = srv.Close
				endpoint = srv.URL
			}
			ignore := goleak.IgnoreCurrent() // the servers' goroutines end with closeServer
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			tp, stop, err := Tracing(context.Background(), logr.Discard(), "op")
			if err != nil || tp == nil {
				t.Fatalf("Tracing() = %v, %v", tp, err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "s")
			span.End()
			stop()
			closeServer()
			if exports.Load() == 0 {
				t.Error("stop exported nothing")
			}
			if err := goleak.Find(ignore, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
				goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop")); err != nil {
				t.Error(err)
			}
		})
	}
}
