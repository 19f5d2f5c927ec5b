package runner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// flushTimeout bounds the export of the spans still buffered when the
// operator stops: a collector that is gone must not hold the exit.
const flushTimeout = 5 * time.Second

// Tracing is the runner's TracerProvider that exports spans over OTLP, as
// OpenTelemetry's standard environment says: OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns it on,
// OTEL_EXPORTER_OTLP_PROTOCOL (or its _TRACES_ variant) is grpc or
// http/protobuf (the default), OTEL_SERVICE_NAME names the service (else
// service), and the exporters and the SDK read the rest (headers,
// certificates, timeouts, OTEL_TRACES_SAMPLER, OTEL_BSP_*). Without an
// endpoint, with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, it
// is nil: nothing is traced. Stop flushes the buffered spans (within
// flushTimeout) and ends the exporter's goroutines.
func Tracing(ctx context.Context, log logr.Logger, service string) (tp trace.TracerProvider, stop func(), err error) {
	if !tracingWanted() {
		return nil, func() {}, nil
	}
	exporter, err := otlpExporter(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Later options win: the environment's name over the operator's.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, fmt.Errorf("describe the service for tracing: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if err := provider.Shutdown(ctx); err != nil {
			log.Error(err, "The last spans could not be exported.")
		}
	}
	return provider, stop, nil
}

// tracingWanted reports whether the environment asks for spans over OTLP.
func tracingWanted() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// otlpExporter is the exporter of the protocol that the environment names;
// it reads its endpoint and the rest from the environment itself.
func otlpExporter(ctx context.Context) (*otlptrace.Exporter, error) {
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exporter *otlptrace.Exporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("unsupported OTLP protocol %q for traces: grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("create the OTLP exporter of traces: %w", err)
	}
	return exporter, nil
}
