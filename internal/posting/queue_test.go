package posting

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// lines collects log lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) logger() logr.Logger { return l.loggerAt(1) }

func (l *lines) loggerAt(verbosity int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, args)
	}, funcr.Options{Verbosity: verbosity})
}

func (l *lines) containing(text string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.all {
		if strings.Contains(line, text) {
			n++
		}
	}
	return n
}

// started runs the poster's Start and returns a function that stops it and
// waits for it.
func started(t *testing.T, p *Poster) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// creations reports every Event the client creates, in order, as
// type/reason/message.
func creations(c client.WithWatch, created chan<- string) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			ev := obj.(*corev1.Event)
			created <- ev.Type + "/" + ev.Reason + "/" + ev.Message
			return err
		},
	})
}

func TestBackgroundPosting(t *testing.T) {
	created := make(chan string, 10)
	c := fake.NewClientBuilder().Build()
	p := &Poster{Client: creations(c, created)}
	// Events queued before the start wait for it.
	if !p.Enqueue(exampleRef, TypeNormal, "Early", "m0") {
		t.Fatal("Enqueue() before the start refused")
	}
	stop := started(t, p)
	if err := p.Event(example(), TypeWarning, "Later", "m1"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		select {
		case ev := <-created:
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatal("the events were not posted")
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(listEvents(t, c)); n != 2 {
		t.Errorf("%d events exist, want 2", n)
	}
	// The loop posts in order.
	if diff := cmp.Diff([]string{"Normal/Early/m0", "Warning/Later/m1"}, got); diff != "" {
		t.Errorf("posted -want +got:\n%s", diff)
	}
	// After the stop, nothing is queued any more.
	if p.Enqueue(exampleRef, TypeNormal, "Late", "m2") {
		t.Errorf("Enqueue() after the stop queued the event")
	}
	if err := p.Start(context.Background()); err == nil {
		t.Errorf("a second Start() succeeded")
	}
}

func TestEnqueueDrops(t *testing.T) {
	var logged lines
	p := &Poster{QueueSize: 2, Log: logged.logger()}
	eventRef := Ref{GVK: configMapRef.GVK, Name: "e"}
	eventRef.GVK.Kind = "Event"
	if p.Enqueue(eventRef, TypeNormal, "R", "about an event") {
		t.Errorf("an event about an event was queued")
	}
	results := []bool{p.Enqueue(exampleRef, TypeNormal, "R", "1"), p.Enqueue(exampleRef, TypeNormal, "R", "2"),
		p.Enqueue(exampleRef, TypeNormal, "R", "3")}
	if diff := cmp.Diff([]bool{true, true, false}, results); diff != "" {
		t.Errorf("Enqueue() into a queue of 2 -want +got:\n%s", diff)
	}
	if logged.containing("the queue of events is full") != 1 {
		t.Errorf("the drop was not logged: %v", logged.all)
	}
}

// TestDrain: queued Events are posted after the stop; those that do not
// make it in the drain time are dropped and counted; failures are logged
// and ignored.
func TestDrain(t *testing.T) {
	var logged lines
	created := make(chan string, 10)
	p := &Poster{Client: creations(fake.NewClientBuilder().Build(), created), Log: logged.logger()}
	for range 3 {
		p.Enqueue(exampleRef, TypeNormal, "R", "m")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if len(created) != 3 {
		t.Errorf("%d events were posted after the stop, want 3", len(created))
	}

	hung := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			<-ctx.Done()
			return ctx.Err()
		},
	})
	p = &Poster{Client: hung, Log: logged.logger(), DrainTimeout: 50 * time.Millisecond, PostTimeout: time.Hour}
	for range 3 {
		p.Enqueue(exampleRef, TypeNormal, "R", "m")
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n := logged.containing("Failed to post an event"); n < 1 {
		t.Errorf("%d failures logged, want at least the first", n)
	}
	if n := logged.containing("Dropped the events still queued"); n != 1 {
		t.Errorf("the dropped events were not reported: %v", logged.all)
	}
	if len(queuedEvents(p)) != 0 {
		t.Errorf("events are left in the queue")
	}
}

func TestPostFailureIsLogged(t *testing.T) {
	var logged lines
	failing := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return errors.New("forbidden")
		},
	})
	p := &Poster{Client: failing, Log: logged.logger()}
	p.Enqueue(exampleRef, TypeWarning, "Reason1", "message1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatalf("Start() = %v; a failed event must not fail the poster", err)
	}
	if logged.containing(`"Failed to post an event. Ignoring and continuing."`) != 1 || logged.containing("forbidden") != 1 {
		t.Errorf("the failure was not logged: %v", logged.all)
	}
}

func TestNeedLeaderElection(t *testing.T) {
	if !(&Poster{}).NeedLeaderElection() {
		t.Errorf("the poster does not wait for the leader election; the manager would stop it before the handlers")
	}
}

// TestStopCutsAPICall: a call in flight when the operator stops ends at
// once and is tried again in the drain, under the same name: whether the
// API server had taken the cut call or not, the Event is there once.
func TestStopCutsAPICall(t *testing.T) {
	for _, tc := range []struct {
		name string
		made bool // the API server took the cut call
	}{{"the cut call was not made", false}, {"the cut call was made", true}} {
		t.Run(tc.name, func(t *testing.T) {
			entered := make(chan struct{})
			calls := 0
			var names []string
			c := fake.NewClientBuilder().Build()
			cut := interceptor.NewClient(c, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					calls++ // calls are sequential: one loop posts
					names = append(names, obj.GetName())
					if calls == 1 {
						if tc.made {
							if err := c.Create(ctx, obj, opts...); err != nil {
								return err
							}
						}
						close(entered)
						<-ctx.Done()
						return ctx.Err()
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			p := &Poster{Client: cut, PostTimeout: time.Hour}
			stop := started(t, p)
			p.Enqueue(exampleRef, TypeNormal, "R", "m")
			<-entered
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if got := listEvents(t, c); calls != 2 || len(got) != 1 {
				t.Errorf("%d calls, %d events; want the cut call tried again in the drain, and one Event", calls, len(got))
			}
			if len(names) != 2 || names[0] != names[1] || !strings.HasPrefix(names[0], DefaultNamePrefix) {
				t.Errorf("names of the calls = %q, want the same %s... twice", names, DefaultNamePrefix)
			}
		})
	}
}

// TestNameTaken: a queued Event whose name another Event has by chance is
// posted under a new one.
func TestNameTaken(t *testing.T) {
	taken := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "kopf-event-aaaaa", Namespace: exampleRef.Namespace}}
	c := fake.NewClientBuilder().WithObjects(taken).Build()
	suffixes := []string{"aaaaa", "bbbbb"}
	p := &Poster{Client: c, suffix: func() string {
		next := suffixes[0]
		suffixes = suffixes[1:]
		return next
	}}
	p.Enqueue(exampleRef, TypeNormal, "R", "m")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range listEvents(t, c) {
		names = append(names, ev.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"kopf-event-aaaaa", "kopf-event-bbbbb"}, names); diff != "" {
		t.Errorf("events -want +got:\n%s", diff)
	}
}
