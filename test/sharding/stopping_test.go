package sharding

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A replica whose graceful stop has begun takes no new object, while
// what it holds stays with it until it is gone (docs/sharding.md,
// "Leaving"). Its daemon ignores the stop, so the replica's stop lasts
// its shutdown grace (5 s here), during which it renews its Lease, and
// then it leaves the Lease to expire: with the library's durations, the
// ring counts it a member for about 20 s after the stop began. Objects
// created while it stops go to the other replica and run there at once;
// before, half of them took the stopping member's name and waited for
// its Lease to run out.
func TestAStoppingReplicaTakesNoNewObject(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.libraryDurations = true
	released := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(released) }) }
	t.Cleanup(release) // before the leak check: the daemon returns
	r.register = func(_ *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		if name != "a" {
			return
		}
		handlers.Daemon(res, "stubborn", func(ctx context.Context, _ *unstructured.Unstructured, d *cause.Daemon) (any, error) {
			<-d.Stopped()
			<-released // ignores its stop
			return nil, nil
		})
	}
	r.start("a")
	r.start("b")
	first := r.createObjects(8)
	r.waitCreates(first)
	r.ownedBy("a", first) // fails the test if a holds none: its stubborn daemon keeps its stop going

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.replicas["a"].op.Stop(t)
	}()
	kopftest.Eventually(t, "the epoch says a stops", 10*time.Second, func() bool {
		return slices.Contains(r.epoch().Stopping, r.member("a"))
	})
	select {
	case <-stopped:
		t.Fatal("the epoch said that a stops only once its stop had ended")
	default:
	}

	later := make([]string, 16)
	for i := range later {
		later[i] = fmt.Sprintf("later-%02d", i)
	}
	r.createNamed(later)
	owners := map[string]string{}
	kopftest.Eventually(t, "every new object has an owner", 10*time.Second, func() bool {
		for _, name := range later {
			obj := r.object(name)
			if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, obj); err != nil {
				return false
			}
			owners[name] = obj.GetLabels()[r.keys().Owner]
			if owners[name] == "" {
				return false
			}
		}
		return true
	})
	select {
	case <-stopped:
		t.Fatal("a's stop ended before the new objects were placed, so this tested nothing")
	default:
	}
	for name, owner := range owners {
		if owner != r.member("b") {
			t.Errorf("%s was placed on %s, want b (%s): a (%s) was stopping", name, owner, r.member("b"), r.member("a"))
		}
	}
	r.waitCreates(later)
	if e := r.epoch(); !slices.Contains(e.Members, r.member("a")) {
		t.Errorf("the new objects ran only once a had left: %+v", e)
	}
	for _, name := range later {
		if got := r.det.creates(name); !slices.Equal(got, []string{"b"}) {
			t.Errorf("%s was created on %v, want b alone", name, got)
		}
	}
	release()
	<-stopped
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("overlaps: %v", o)
	}
}
