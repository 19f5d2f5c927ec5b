package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// The metrics endpoint counts daemons and timers while they run, those
// asked to stop that have not exited yet, their exits by stop reason, and
// their calls as handler invocations with the cause "daemon" or "timer".
func TestMetricsDaemons(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseSlow := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseSlow) // before the leak check, if the test fails early
	handlers.Daemon(kind, "m-polite", func(ctx context.Context, _ *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	handlers.Daemon(kind, "m-slow", func(ctx context.Context, _ *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		<-ctx.Done()
		<-release // a slow cleanup
		return nil, ctx.Err()
	}, handlers.CancellationPolling(200*time.Millisecond))
	handlers.Daemon(kind, "m-done", func(context.Context, *unstructured.Unstructured, *cause.Daemon) (any, error) {
		return nil, nil
	})
	handlers.Timer(kind, "m-tick", func(context.Context, *unstructured.Unstructured, *cause.Daemon) (any, error) {
		return nil, nil
	}, handlers.Interval(100*time.Millisecond))
	serve, at := servingMetrics(t)
	env.StartOperator(t, ns, reg, handlers.Options{}, kopftest.WithManagerOptions(serve))

	running := func(id string) string { return series("kopf_daemons_running", "kind", kexKind, "handler", id) }
	stopping := func(id string) string { return series("kopf_daemons_stopping", "kind", kexKind, "handler", id) }
	stops := func(id, reason string) string {
		return series("kopf_daemon_stops_total", "kind", kexKind, "handler", id, "reason", reason)
	}
	const deleted = "RESOURCE_DELETED|DAEMON_CANCELLED"

	create(t, exampleObject(t, ns))
	waitForSamples(t, at, "the daemons and the timer run", map[string]float64{
		running("m-polite"):                        1,
		running("m-slow"):                          1,
		running("m-tick"):                          1,
		running("m-done"):                          0,
		stops("m-done", "DONE"):                    1,
		invocations("m-done", "daemon", "success"): 1,
	})
	waitForAtLeast(t, at, "the timer ticks", map[string]float64{invocations("m-tick", "timer", "success"): 3})

	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	waitForSamples(t, at, "the daemons stop, but one is slow", map[string]float64{
		running("m-polite"):                            0,
		stops("m-polite", deleted):                     1,
		invocations("m-polite", "daemon", "cancelled"): 1,
		running("m-tick"):                              0,
		stops("m-tick", deleted):                       1,
		running("m-slow"):                              1,
		stopping("m-slow"):                             1,
		stopping("m-polite"):                           0,
	})
	if gone(t, ns, "kopf-example-1") {
		t.Fatal("the object went away while its daemon was still running")
	}
	releaseSlow()
	waitForSamples(t, at, "the slow daemon exits", map[string]float64{
		running("m-slow"):        0,
		stopping("m-slow"):       0,
		stops("m-slow", deleted): 1,
	})
	eventually(t, "the object goes", func() bool { return gone(t, ns, "kopf-example-1") })
}
