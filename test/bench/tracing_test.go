package bench

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// variantForKindTraced is the quick start with tracing on: the runner
// exports its spans over OTLP/HTTP to the driver's sink.
const variantForKindTraced = "forkind-traced"

var (
	tracingObjects = flag.Int("tracing-objects", 1000, "BenchmarkTracing: objects in each lifecycle")
	tracingRounds  = flag.Int("tracing-rounds", 4, "BenchmarkTracing: lifecycles of each variant, alternating")
)

// otlpSink is an OTLP/HTTP receiver that takes every export and keeps
// only its size: what a collector costs the operator is not measured.
var otlpSink struct {
	once    sync.Once
	url     string
	exports atomic.Int64
	bytes   atomic.Int64
}

func sinkURL() string {
	otlpSink.once.Do(func() {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			otlpSink.exports.Add(1)
			otlpSink.bytes.Add(n)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		// It lives as long as the benchmark binary; nothing waits on it.
		otlpSink.url = srv.URL
	})
	return otlpSink.url
}

// tracedEnvironment is the environment of a variant's process: the OTLP
// settings for the traced quick start, none for the others.
func tracedEnvironment(variant string) []string {
	if variant != variantForKindTraced {
		return nil
	}
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sinkURL(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_SERVICE_NAME=bench"}
}

// BenchmarkTracing runs the lifecycle (workloads 1-3) of the quick start
// with tracing off and on, alternating (docs/benchmarks.md, "Tracing").
func BenchmarkTracing(b *testing.B) {
	for b.Loop() {
		setup(b)
		figures := map[string][]lifecycleFigures{}
		variants := []string{variantForKind, variantForKindTraced}
		for round := range *tracingRounds {
			for _, v := range roundOrder(variants, round) {
				figures[v] = append(figures[v], lifecycle(b, v, *tracingObjects))
			}
		}
		writeTracingTable(os.Stdout, figures, *tracingObjects)
		if otlpSink.exports.Load() == 0 {
			b.Error("the traced quick start exported nothing")
		}
	}
}

func writeTracingTable(w io.Writer, r map[string][]lifecycleFigures, n int) {
	med := func(v string, f func(lifecycleFigures) float64) float64 {
		xs := make([]float64, 0, len(r[v]))
		for _, x := range r[v] {
			xs = append(xs, f(x))
		}
		return median(xs)
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	rows := []struct {
		name string
		f    func(lifecycleFigures) float64
		unit string
	}{
		{"create → handled", func(x lifecycleFigures) float64 { return secs(x.handled) }, "s"},
		{"update → handled", func(x lifecycleFigures) float64 { return secs(x.updated) }, "s"},
		{"delete → gone", func(x lifecycleFigures) float64 { return secs(x.gone) }, "s"},
		{"operator CPU", func(x lifecycleFigures) float64 { return x.cpu }, "s"},
		{"allocated", func(x lifecycleFigures) float64 { return float64(x.allocated) / (1 << 20) }, "MiB"},
		{"allocations", func(x lifecycleFigures) float64 { return float64(x.mallocs) / 1000 }, "k"},
	}
	_, _ = fmt.Fprintf(w, "The quick start's lifecycle of %d objects, %d runs of each (medians); %d exports, %d KiB to the sink\n\n",
		n, len(r[variantForKind]), otlpSink.exports.Load(), otlpSink.bytes.Load()>>10)
	_, _ = fmt.Fprintln(w, "| | tracing off | tracing on (OTLP/HTTP) | on / off |")
	_, _ = fmt.Fprintln(w, "|---|---|---|---|")
	for _, row := range rows {
		off, on := med(variantForKind, row.f), med(variantForKindTraced, row.f)
		ratio := "-"
		if off > 0 {
			ratio = fmt.Sprintf("%.2f", on/off)
		}
		_, _ = fmt.Fprintf(w, "| %s | %.2f %s | %.2f %s | %s |\n", row.name, off, row.unit, on, row.unit, ratio)
	}
}
