package integration

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

// stopCauses records the cause of each daemon's cancelled context.
type stopCauses struct {
	mu     sync.Mutex
	causes []error
}

func (s *stopCauses) add(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.causes = append(s.causes, err)
}

func (s *stopCauses) last() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.causes) == 0 {
		return nil
	}
	return s.causes[len(s.causes)-1]
}

// Kopf's acceptance item 15: a daemon starts once, puts the finalizer on
// its object, and the object's deletion waits until the daemon has exited;
// the daemon learns why it stops. The delete handler runs once, however
// many cycles the daemon keeps the object.
func TestDaemonBlocksDeletionUntilItExits(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	var stops stopCauses
	stopping, release := make(chan struct{}), make(chan struct{})
	handlers.Daemon(kind, "polite", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		seen.add(&cause.Change{HandlerID: d.HandlerID, Retry: d.Retry})
		<-ctx.Done()
		stops.add(context.Cause(ctx))
		close(stopping)
		<-release // a slow cleanup
		return map[string]any{"done": true}, nil
	}, handlers.CancellationPolling(200*time.Millisecond))
	handlers.OnDelete(kind, "delete_fn", seen.record)
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "the daemon runs and the finalizer is on", func() bool {
		return len(seen.of("polite")) == 1 && slices.Contains(get(t, ns, "kopf-example-1").GetFinalizers(), finalizer)
	})
	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	<-stopping
	if err := stops.last(); !errors.Is(err, cause.StopResourceDeleted) || !errors.Is(err, cause.StopCancelled) {
		t.Errorf("the daemon's stop cause = %v, want RESOURCE_DELETED and DAEMON_CANCELLED", err)
	}
	eventually(t, "the deletion waits for the daemon", func() bool {
		return len(op.Logs.Messages("Daemon 'polite' is still exiting. The next check is in 0.2 seconds.")) >= 2
	})
	if gone(t, ns, "kopf-example-1") {
		t.Fatal("the object went away while its daemon was still running")
	}
	close(release)
	eventually(t, "the object goes once the daemon has exited", func() bool { return gone(t, ns, "kopf-example-1") })
	if n := len(seen.of("polite")); n != 1 {
		t.Errorf("the daemon started %d times, want 1", n)
	}
	if len(op.Logs.Messages("Daemon 'polite' has exited on request and will not be retried or restarted.")) != 1 {
		t.Error("the daemon's exit on request was not logged")
	}
	if n := len(seen.of("delete_fn")); n != 1 {
		t.Errorf("the delete handler ran %d times while the daemon kept the object, want 1", n)
	}
	if n := op.Logs.Count("Deletion is processed: 1 succeeded; 0 failed."); n != 1 {
		t.Errorf("the deletion was reported processed %d times, want 1", n)
	}
}

// A stubborn daemon (ignoring both the stop signal and its context) is
// signalled, cancelled after the cancellation backoff, and abandoned after
// the cancellation timeout: then the object's deletion goes on without it.
func TestStubbornDaemonIsAbandoned(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	release := make(chan struct{})
	var reasons []cause.StopReason
	var mu sync.Mutex
	handlers.Daemon(kind, "stubborn", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		<-d.Stopped()
		mu.Lock()
		reasons = append(reasons, d.StopReason())
		mu.Unlock()
		<-ctx.Done()
		mu.Lock()
		reasons = append(reasons, d.StopReason())
		mu.Unlock()
		<-release
		return nil, nil
	}, handlers.CancellationBackoff(300*time.Millisecond), handlers.CancellationTimeout(300*time.Millisecond))
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	t.Cleanup(func() { close(release) }) // after the checks, before the leak check

	create(t, exampleObject(t, ns))
	eventually(t, "the finalizer is on", func() bool {
		return slices.Contains(get(t, ns, "kopf-example-1").GetFinalizers(), finalizer)
	})
	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the abandoned daemon no longer blocks the deletion", func() bool { return gone(t, ns, "kopf-example-1") })
	for _, line := range []string{
		"Daemon 'stubborn' is signalled to exit gracefully.",
		"Daemon 'stubborn' is signalled to exit by force.",
		"Daemon 'stubborn' did not exit in time. Leaving it orphaned.",
	} {
		if op.Logs.Count(line) != 1 {
			t.Errorf("missing log line %q", line)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []cause.StopReason{
		cause.StopResourceDeleted | cause.StopSignalled,
		cause.StopResourceDeleted | cause.StopSignalled | cause.StopCancelled,
	}
	if !slices.Equal(reasons, want) {
		t.Errorf("reasons seen by the daemon = %v, want %v", reasons, want)
	}
}

// Kopf's acceptance item 16: a daemon's result lands in status; a
// temporary error restarts it with the next retry; one that returns on its
// own is not restarted, and then nothing needs the finalizer any more.
// After an operator restart, the daemon starts afresh.
func TestDaemonResultsRestartsAndExits(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	daemon := func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		seen.add(&cause.Change{HandlerID: d.HandlerID, Retry: d.Retry})
		if d.Retry < 2 {
			d.Patch.SetStatus("attempts", d.Retry+1)
			return nil, handlers.Temporary(errors.New("not yet"), 100*time.Millisecond)
		}
		return map[string]any{"done": true}, nil
	}
	handlers.Daemon(kind, "once", daemon)
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))

	eventually(t, "the daemon's result lands and the finalizer goes", func() bool {
		obj := get(t, ns, "kopf-example-1")
		done, _, _ := unstructured.NestedBool(obj.Object, "status", "once", "done")
		return done && len(obj.GetFinalizers()) == 0
	})
	var retries []int
	for _, c := range seen.of("once") {
		retries = append(retries, c.Retry)
	}
	if !slices.Equal(retries, []int{0, 1, 2}) {
		t.Errorf("the daemon ran with retries %v, want [0 1 2]", retries)
	}
	if attempts, _, _ := unstructured.NestedInt64(get(t, ns, "kopf-example-1").Object, "status", "attempts"); attempts != 2 {
		t.Errorf("status.attempts = %d, want 2 (the daemon's own patch)", attempts)
	}
	if op.Logs.Count("Daemon 'once' has exited on its own and will not be retried or restarted.") != 1 {
		t.Error("the exit on its own was not logged")
	}
	if op.Logs.Count("Removing the finalizer, as there are no handlers requiring it.") != 1 {
		t.Error("the finalizer was not removed for want of handlers")
	}
	op.Stop(t)

	var again calls
	reg2, kind2 := kex()
	handlers.Daemon(kind2, "once", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		again.add(&cause.Change{HandlerID: d.HandlerID, Retry: d.Retry})
		return nil, nil
	})
	env.StartOperator(t, ns, reg2, handlers.Options{})
	eventually(t, "the daemon starts again after the restart", func() bool { return len(again.of("once")) == 1 })
	if r := again.of("once")[0].Retry; r != 0 {
		t.Errorf("after the restart, the daemon started at retry %d, want 0", r)
	}
}

// Kopf's acceptance item 18: a daemon whose object stops matching its
// filters is stopped (FILTERS_MISMATCH) and the finalizer goes; when the
// object matches again, the daemon starts again.
func TestDaemonFollowsItsFilters(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	var stops stopCauses
	handlers.Daemon(kind, "labelled", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		seen.add(&cause.Change{HandlerID: d.HandlerID})
		<-ctx.Done()
		stops.add(context.Cause(ctx))
		return nil, ctx.Err()
	}, handlers.Labels{"run": filter.Equals("yes")})
	env.StartOperator(t, ns, reg, handlers.Options{})
	obj := exampleObject(t, ns)
	obj.SetLabels(map[string]string{"run": "yes"})
	create(t, obj)

	eventually(t, "the daemon runs with the finalizer on", func() bool {
		return len(seen.of("labelled")) == 1 && slices.Contains(get(t, ns, "kopf-example-1").GetFinalizers(), finalizer)
	})
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"labels":{"run":null}}}`, false)
	eventually(t, "the daemon stops and the finalizer goes", func() bool {
		return errors.Is(stops.last(), cause.StopFiltersMismatch) && len(get(t, ns, "kopf-example-1").GetFinalizers()) == 0
	})
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"labels":{"run":"yes"}}}`, false)
	eventually(t, "the daemon starts again with the finalizer", func() bool {
		return len(seen.of("labelled")) == 2 && slices.Contains(get(t, ns, "kopf-example-1").GetFinalizers(), finalizer)
	})
	if err := env.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object goes", func() bool { return gone(t, ns, "kopf-example-1") })
	if !errors.Is(stops.last(), cause.StopResourceDeleted) {
		t.Errorf("the last stop cause = %v, want RESOURCE_DELETED", stops.last())
	}
}
