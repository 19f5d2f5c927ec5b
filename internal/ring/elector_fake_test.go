package ring

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// electionLeases is one election Lease as the API server keeps it:
// writes honour the resourceVersion, and every request is recorded with
// the fake clock's time, so that a test sees when the elector acted. The
// elector's own writes are not shown to watches (a candidate that wrote
// has won, and stops watching); the test's writes are, through show.
type electionLeases struct {
	clk *clocktesting.FakeClock

	mu      sync.Mutex
	lease   *coordinationv1.Lease // nil: absent
	version int
	// failWrites fails every Create and Update.
	failWrites error
	// failWatch fails every Watch, as an API server whose watches are
	// broken.
	failWatch error

	calls   chan leaseCall
	watches chan *watch.FakeWatcher
}

// leaseCall is one request: its verb, the fake time, what it wrote (for
// writes) and its error.
type leaseCall struct {
	verb    string
	at      time.Time
	written *coordinationv1.Lease
	err     error
}

const electedLease = "kopf-shard-main"

func newElectionLeases(clk *clocktesting.FakeClock, lease *coordinationv1.Lease) *electionLeases {
	f := &electionLeases{clk: clk, calls: make(chan leaseCall, 100), watches: make(chan *watch.FakeWatcher, 10)}
	if lease != nil {
		f.store(lease.DeepCopy())
	}
	return f
}

// store keeps a Lease under a new resourceVersion; f.mu is held or not needed.
func (f *electionLeases) store(lease *coordinationv1.Lease) *coordinationv1.Lease {
	f.version++
	lease.Name = electedLease
	lease.ResourceVersion = strconv.Itoa(f.version)
	f.lease = lease
	return lease.DeepCopy()
}

func (f *electionLeases) record(verb string, written *coordinationv1.Lease, err error) {
	f.calls <- leaseCall{verb: verb, at: f.clk.Now(), written: written, err: err}
}

func (f *electionLeases) Get(_ context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		err := apierrors.NewNotFound(leaseResource, name)
		f.record("get", nil, err)
		return nil, err
	}
	f.record("get", nil, nil)
	return f.lease.DeepCopy(), nil
}

func (f *electionLeases) Create(_ context.Context, lease *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.failWrites
	if err == nil && f.lease != nil {
		err = apierrors.NewAlreadyExists(leaseResource, lease.Name)
	}
	if err != nil {
		f.record("create", lease.DeepCopy(), err)
		return nil, err
	}
	written := f.store(lease.DeepCopy())
	f.record("create", written, nil)
	return written, nil
}

func (f *electionLeases) Update(_ context.Context, lease *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.failWrites
	switch {
	case err != nil:
	case f.lease == nil:
		err = apierrors.NewNotFound(leaseResource, lease.Name)
	case lease.ResourceVersion != f.lease.ResourceVersion:
		err = apierrors.NewConflict(leaseResource, lease.Name, errors.New("the resourceVersion differs"))
	}
	if err != nil {
		f.record("update", lease.DeepCopy(), err)
		return nil, err
	}
	written := f.store(lease.DeepCopy())
	f.record("update", written, nil)
	return written, nil
}

func (f *electionLeases) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	if f.failWatch != nil {
		f.record("watch", nil, f.failWatch)
		return nil, f.failWatch
	}
	w := watch.NewFake()
	f.watches <- w
	return w, nil
}

// write changes the Lease as another candidate does, and returns it.
func (f *electionLeases) write(change func(*coordinationv1.LeaseSpec)) *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	lease := f.lease.DeepCopy()
	change(&lease.Spec)
	return f.store(lease)
}

// remove deletes the Lease, as someone else does, and returns it as it was.
func (f *electionLeases) remove() *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	gone := f.lease
	f.lease = nil
	return gone
}

// holder is the Lease's holder now; "" if released or absent.
func (f *electionLeases) holder() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return ""
	}
	return holder(f.lease)
}

// setFailWrites makes every write fail with err from now on; nil: none.
func (f *electionLeases) setFailWrites(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWrites = err
}

// show delivers a change to a candidate's watch, and returns once the
// candidate has handled it: an unbuffered fake watch hands over the
// bookmark after it only when the candidate is done with the change. A
// change that wins the Lease must be shown with Modify alone: the winner
// stops watching.
func show(w *watch.FakeWatcher, lease *coordinationv1.Lease) {
	w.Modify(lease)
	w.Action(watch.Bookmark, &coordinationv1.Lease{})
}

// next is the next request, which must be verb at the fake time at.
func (f *electionLeases) next(t *testing.T, verb string, at time.Time) leaseCall {
	t.Helper()
	select {
	case c := <-f.calls:
		if c.verb != verb || !c.at.Equal(at) {
			t.Fatalf("request = %s at %s (%v), want %s at %s", c.verb, c.at.Sub(t0), c.err, verb, at.Sub(t0))
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no request, want %s at %s", verb, at.Sub(t0))
		return leaseCall{}
	}
}

// any is the next request, whichever it is.
func (f *electionLeases) any(t *testing.T) leaseCall {
	t.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no request")
		return leaseCall{}
	}
}

// watching is the candidate's watch, once it has set itself up.
func (f *electionLeases) watching(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-f.watches:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("the candidate does not watch the Lease")
		return nil
	}
}

// heldBy is a Lease that another candidate holds, renewed, by its own
// clock, an hour before t0: the renew time must not be what the elector
// judges the record by.
func heldBy(holder string) *coordinationv1.Lease {
	long := metav1.NewMicroTime(t0.Add(-time.Hour))
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(15)),
		AcquireTime: &long, RenewTime: &long, LeaseTransitions: ptr.To(int32(3)),
	}}
}
