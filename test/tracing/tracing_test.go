package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

const managed = "tracing.kopf.dev"

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tracing-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

func kex(namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "spec": map[string]any{}}}
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// registry is the traced operator: a handler that makes its own API
// request, one that fails once, a daemon, a timer and a validator.
func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	res := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(res, "fetch", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName() + "-made"}}
		return nil, handlers.Client(ctx).Create(ctx, cm)
	})
	var flaked atomic.Bool
	handlers.OnCreate(res, "flaky", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		if flaked.CompareAndSwap(false, true) {
			return nil, handlers.Temporary(errors.New("not yet"), 100*time.Millisecond)
		}
		return nil, nil
	})
	handlers.Daemon(res, "watcher", func(context.Context, *unstructured.Unstructured, *cause.Daemon) (any, error) {
		return nil, nil
	})
	handlers.Timer(res, "ticker", func(context.Context, *unstructured.Unstructured, *cause.Daemon) (any, error) {
		return nil, nil
	}, handlers.Interval(100*time.Millisecond))
	handlers.OnValidate(res, "check", func(context.Context, *unstructured.Unstructured, *admission.Request) error { return nil })
	return reg
}

// startOperator runs the registry with a TracerProvider that records,
// serving its webhooks on envtest's local port.
func startOperator(t *testing.T, ns string, reg *handlers.Registry) (*tracetest.SpanRecorder, func()) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mgr, clientConfig := testenv.WebhookManager(t, cfg, env.WebhookInstallOptions, manager.Options{})
	err := handlers.SetupWithManager(mgr, reg, handlers.Options{
		Namespaces: []string{ns}, TracerProvider: tp,
		Webhooks: handlers.WebhookOptions{Path: "/kopf", Managed: managed, ClientConfig: clientConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopManager := testenv.RunManager(t, mgr)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopManager()
			_ = tp.Shutdown(context.Background())
		})
	}
	t.Cleanup(stop)
	return rec, stop
}

// spans is a snapshot of the ended spans, by id, to follow parents.
type spans struct {
	all  []sdktrace.ReadOnlySpan
	byID map[string]sdktrace.ReadOnlySpan
}

func snapshot(rec *tracetest.SpanRecorder) spans {
	s := spans{all: rec.Ended(), byID: map[string]sdktrace.ReadOnlySpan{}}
	for _, sp := range s.all {
		s.byID[sp.SpanContext().SpanID().String()] = sp
	}
	return s
}

func (s spans) parent(sp sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	return s.byID[sp.Parent().SpanID().String()]
}

func attr(sp sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, kv := range sp.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// named are the spans whose name is name and whose object (if they name
// one) is obj.
func (s spans) named(name, obj string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.all {
		if o := attr(sp, "k8s.object.name").AsString(); sp.Name() == name && (o == "" || o == obj) {
			out = append(out, sp)
		}
	}
	return out
}

func TestSpansOfAnOperator(t *testing.T) {
	kopftest.NoLeaks(t)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: managed}})
		_ = k8s.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: managed}})
	})
	ns := namespace(t)
	rec, stop := startOperator(t, ns, registry())
	ctx := context.Background()
	// The API server calls the webhooks a moment after their configuration
	// appears: until then, creations pass unreviewed.
	await.NoneMissing(t, "a review's span", 60*time.Second, func() string {
		if err := k8s.Create(ctx, kex(ns, "probe"), client.DryRunAll); err != nil {
			return err.Error()
		}
		if len(snapshot(rec).named("webhook review", "probe")) == 0 {
			return "a webhook review span of the probe"
		}
		return ""
	})
	if err := k8s.Create(ctx, kex(ns, "obj")); err != nil {
		t.Fatal(err)
	}

	var s spans
	await.NoneMissing(t, "the spans of the object's handling", 60*time.Second, func() string {
		s = snapshot(rec)
		var missing []string
		for _, name := range []string{"handler fetch", "POST configmaps", "daemon watcher", "timer ticker", "webhook review"} {
			if len(s.named(name, "obj")) == 0 {
				missing = append(missing, name)
			}
		}
		if n := len(s.named("handler flaky", "obj")); n < 2 {
			missing = append(missing, fmt.Sprintf("2 attempts of flaky (%d)", n))
		}
		return strings.Join(missing, ", ")
	})
	// Stopped, the operator has ended all its spans: every parent is there.
	stop()
	s = snapshot(rec)

	t.Run("cycle, handler attempt and the handler's request are one chain", func(t *testing.T) {
		post := s.named("POST configmaps", "")[0]
		handler := s.parent(post)
		if handler == nil || handler.Name() != "handler fetch" {
			t.Fatalf("the request's parent is %v, want the handler's attempt", handler)
		}
		cycle := s.parent(handler)
		if cycle == nil || cycle.Name() != "cycle KopfExample" {
			t.Fatalf("the attempt's parent is %v, want the cycle", cycle)
		}
		for key, want := range map[attribute.Key]string{"k8s.resource.group": "kopf.dev", "k8s.resource.version": "v1",
			"k8s.namespace.name": ns, "k8s.object.name": "obj", "kopf.cause": "create"} {
			if got := attr(cycle, key).AsString(); got != want {
				t.Errorf("cycle %s = %q, want %q", key, got, want)
			}
		}
		if attr(cycle, "k8s.object.uid").AsString() == "" || attr(handler, "kopf.handler.outcome").AsString() != "success" {
			t.Errorf("cycle uid %q, handler outcome %q", attr(cycle, "k8s.object.uid").AsString(), attr(handler, "kopf.handler.outcome").AsString())
		}
	})

	t.Run("the engine's patches are the cycles' children", func(t *testing.T) {
		var patches int
		for _, sp := range s.all {
			if strings.HasPrefix(sp.Name(), "PATCH kopfexamples") {
				if p := s.parent(sp); p == nil || p.Name() != "cycle KopfExample" {
					t.Errorf("%s's parent is %v, want a cycle", sp.Name(), p)
				}
				patches++
			}
		}
		if patches == 0 {
			t.Error("no PATCH of a kopfexample")
		}
	})

	t.Run("a retried handler's attempts have their outcomes", func(t *testing.T) {
		outcomes := map[int64]string{}
		for _, sp := range s.named("handler flaky", "obj") {
			outcomes[attr(sp, "kopf.handler.retry").AsInt64()] = attr(sp, "kopf.handler.outcome").AsString()
		}
		if outcomes[0] != "temporary" || outcomes[1] != "success" {
			t.Errorf("outcomes by retry = %v, want 0: temporary, 1: success", outcomes)
		}
	})

	t.Run("daemons, timers and reviews", func(t *testing.T) {
		for _, name := range []string{"daemon watcher", "timer ticker"} {
			sp := s.named(name, "obj")[0]
			if attr(sp, "k8s.object.uid").AsString() == "" || attr(sp, "kopf.handler.outcome").AsString() != "success" {
				t.Errorf("%s: attributes %v", name, sp.Attributes())
			}
		}
		review := s.named("webhook review", "obj")[0]
		if attr(review, "kopf.webhook.operation").AsString() != "CREATE" || !attr(review, "kopf.webhook.allowed").AsBool() {
			t.Errorf("review attributes %v", review.Attributes())
		}
	})

	t.Run("no root spans of API requests", func(t *testing.T) {
		for _, sp := range s.all {
			if !sp.Parent().IsValid() && !strings.HasPrefix(sp.Name(), "cycle ") && !strings.HasPrefix(sp.Name(), "daemon ") &&
				!strings.HasPrefix(sp.Name(), "timer ") && sp.Name() != "webhook review" {
				t.Errorf("a root span %q", sp.Name())
			}
		}
	})
}
