// Package children tells a kind's child handlers what became of the
// children its objects own: one Watch per owner kind and child kind and
// run, fed by the children's informer events, reconciled per child by a
// controller of its own. The owner's change handlers never run for it.
package children

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/cycle"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/indexing"
)

// Kind is what one Watch needs: the owners' kind and where to read them,
// the children's kind and handlers, and the handlers' surroundings.
type Kind struct {
	// Owner is the owners' kind; Owners reads them (the run's cache).
	Owner  objects.Kind
	Owners client.Reader
	// Namespaced: the owners live in their children's namespace; else
	// they are cluster-scoped.
	Namespaced bool
	// Child is the children's registration, served as ChildGVK.
	Child    *registry.ChildKind
	ChildGVK schema.GroupVersionKind
	// Memories are the owners' (for their memos).
	Memories *memory.Store
	Indices  *indexing.Indices
	Clock    clock.PassiveClock
	Defaults execution.Defaults
	// Context is the context a handler runs in, with its logger.
	Context func(ctx context.Context, log logr.Logger) context.Context
	// Label is the owners' kind as the metrics name it.
	Label string
	Log   logr.Logger
	// Known are the children seen so far, kept from run to run.
	Known *Known
}

// Known remembers the children of one owner kind and child kind that
// the operator has seen, with their last state, across the runs of its
// watches: a child deleted while the operator was frozen or paused
// brings no event to the next run, whose listing lacks it; RecallGone
// tells its deletion then.
type Known struct {
	mu       sync.Mutex
	children map[types.NamespacedName]client.Object
}

// NewKnown makes an empty memory of children.
func NewKnown() *Known { return &Known{children: map[types.NamespacedName]client.Object{}} }

func (k *Known) set(key types.NamespacedName, obj client.Object) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if obj == nil {
		delete(k.children, key)
		return
	}
	k.children[key] = obj
}

func (k *Known) snapshot() map[types.NamespacedName]client.Object {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[types.NamespacedName]client.Object, len(k.children))
	for key, obj := range k.children {
		out[key] = obj
	}
	return out
}

// Size is how many children are known.
func (k *Known) Size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.children)
}

// Watch holds what became of each child since its handlers last ran, and
// runs them: Observe hears of the child's events, Reconcile handles one
// child.
type Watch struct {
	k     Kind
	child objects.Kind
	mu    sync.Mutex
	// pending are the children whose handlers are to run (or to be
	// retried), by namespace and name.
	pending map[types.NamespacedName]*pending
}

// pending is what became of one child since its handlers last finished,
// events merged: the state before the first of them, the latest state,
// and the handlers' progress for this change.
type pending struct {
	reason cause.ChildReason
	// old is the child before the first change (nil: there was none), or
	// its last state if it is deleted; new is the child now (nil:
	// deleted); last is its last known state.
	old, new, last client.Object
	states         map[string]*execution.HandlerState
	// seq counts the events merged in, so that a reconcile tells whether
	// another came while its handlers ran.
	seq int
}

// New makes a Watch of one owner kind's children of one kind.
func New(k Kind) *Watch {
	if k.Known == nil {
		k.Known = NewKnown()
	}
	return &Watch{k: k, child: objects.Kind{Registered: &registry.Kind{NewObject: k.Child.NewObject}, GVK: k.ChildGVK},
		pending: map[types.NamespacedName]*pending{}}
}

// Observe merges one event of a child into what is pending for it, and
// reports whether its handlers are to run. old is nil for an existing or
// created child; new is nil for a deleted one. A change of nothing but
// the resourceVersion (a resync, a no-op write) runs nothing.
func (w *Watch) Observe(reason cause.ChildReason, old, new client.Object) bool {
	obj := new
	if obj == nil {
		obj = old
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	w.k.Known.set(key, new)
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pending[key]
	switch {
	case p == nil && reason == cause.ChildChanged && old != nil && new != nil && sameButVersion(old, new):
		return false
	case p == nil:
		p = &pending{reason: reason}
		if reason == cause.ChildChanged || reason == cause.ChildDeleted {
			p.old = old
		}
		w.pending[key] = p
	case reason == cause.ChildDeleted:
		// Whatever came before, the handlers hear of the deletion, from
		// the child's last state.
		p.reason, p.old = cause.ChildDeleted, old
	case p.reason == cause.ChildDeleted:
		// Deleted and created again: a new child.
		p.reason, p.old = cause.ChildCreated, nil
	}
	p.new = new
	if obj != nil {
		p.last = obj
	}
	// Handlers that had finished for the earlier state run again for the
	// merged one, with fresh retries.
	p.states = nil
	p.seq++
	return true
}

// RecallGone tells the deletion of every known child that the reader (the
// run's fresh cache of children, synced) does not have, and queues each
// with send.
func (w *Watch) RecallGone(ctx context.Context, reader client.Reader, send func(client.Object)) {
	for key, last := range w.k.Known.snapshot() {
		if ctx.Err() != nil {
			return
		}
		if err := reader.Get(ctx, key, w.child.New()); !apierrors.IsNotFound(err) {
			continue
		}
		if w.Observe(cause.ChildDeleted, last, nil) {
			send(last)
		}
	}
}

// sameButVersion reports whether two states of a child differ in their
// resourceVersion only.
func sameButVersion(a, b client.Object) bool {
	if a.GetResourceVersion() == b.GetResourceVersion() {
		return true
	}
	if a.GetGeneration() != b.GetGeneration() {
		return false
	}
	ua, err1 := toMap(a)
	ub, err2 := toMap(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return len(diff.Compute(ua, ub)) == 0
}

// Reconcile runs the handlers of one child for what became of it, and
// asks to be called again when some are to be retried.
func (w *Watch) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w.mu.Lock()
	p := w.pending[req.NamespacedName]
	var snapshot pending
	if p != nil {
		snapshot = *p
		if snapshot.states == nil {
			snapshot.states = map[string]*execution.HandlerState{}
		}
	}
	w.mu.Unlock()
	if p == nil {
		return reconcile.Result{}, nil
	}
	states, delay := w.handle(ctx, req.NamespacedName, &snapshot)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[req.NamespacedName] != p || p.seq != snapshot.seq {
		// Another event came meanwhile: it has queued the child again.
		return reconcile.Result{}, nil
	}
	if delay == nil {
		delete(w.pending, req.NamespacedName)
		return reconcile.Result{}, nil
	}
	p.states = states
	return reconcile.Result{RequeueAfter: *delay}, nil
}

// handle runs the handlers that have not finished, and returns their
// progress and the delay before those left are retried (nil: none left).
func (w *Watch) handle(ctx context.Context, key types.NamespacedName, p *pending) (map[string]*execution.HandlerState, *time.Duration) {
	log := w.k.Log.WithValues("childKind", w.k.ChildGVK.Kind, "childNamespace", key.Namespace, "childName", key.Name, "reason", string(p.reason))
	owner, ok := w.owner(ctx, log, p.last)
	if !ok {
		return nil, nil
	}
	log = log.WithValues("namespace", owner.GetNamespace(), "name", owner.GetName())
	c, err := w.cause(p)
	if err != nil {
		log.Error(err, "What became of the child cannot be told to its handlers.")
		return nil, nil
	}
	mem := w.k.Memories.Known(owner.GetUID())
	c.Memo, c.Indices = mem.Memo(), w.k.Indices
	subject := &registry.ChildSubject{Labels: p.last.GetLabels(), Annotations: p.last.GetAnnotations(), Reason: p.reason,
		Old: mapOrNil(c.Old), New: mapOrNil(c.New), FilterPanicked: cycle.FilterPanicked(w.k.Label, log)}
	states := p.states
	var delay *time.Duration
	for _, h := range w.k.Child.Handlers {
		st := states[h.ID]
		if st != nil && st.Finished() {
			continue
		}
		now := w.k.Clock.Now()
		if st == nil {
			if !h.Matches(subject) {
				continue
			}
			st = &execution.HandlerState{Active: true, Started: now}
		}
		if st.Sleeping(now) {
			delay = earliest(delay, st.Delayed.Sub(now))
			continue
		}
		hc := narrow(c, h)
		hc.Retry, hc.Started, hc.Runtime = st.Retries, st.Started, st.Runtime(now)
		hctx := w.k.Context(ctx, log)
		outcome := execution.Execute(hctx, &h.Handler, st, now, w.k.Defaults, func(ctx context.Context) (any, error) {
			return nil, h.Fn(ctx, owner, p.last.DeepCopyObject().(client.Object), &hc)
		})
		if outcome.Panic != nil {
			metrics.CallbackPanicked(w.k.Label, metrics.CallbackChild, h.ID)
		}
		if outcome.Cancelled {
			// The run ends: the next one sees the child as existing.
			return states, nil
		}
		next := st.WithOutcome(outcome, now)
		states[h.ID] = next
		if !next.Finished() {
			d := time.Duration(0)
			if next.Delayed != nil {
				d = max(0, next.Delayed.Sub(now))
			}
			delay = earliest(delay, d)
		}
	}
	return states, delay
}

// owner reads the child's owner: the object of the owners' kind that its
// controller reference names, with that uid. A child without one, or
// whose owner is gone, replaced by another of its name, not served, or
// being deleted, has nobody to tell.
func (w *Watch) owner(ctx context.Context, log logr.Logger, child client.Object) (client.Object, bool) {
	ref := metav1.GetControllerOfNoCopy(child)
	gk := w.k.Owner.GVK.GroupKind()
	if ref == nil || ref.Kind != gk.Kind || schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).Group != gk.Group {
		log.V(1).Info("The child has no controller of the owners' kind: nobody to tell.")
		return nil, false
	}
	key := types.NamespacedName{Name: ref.Name}
	if w.k.Namespaced {
		key.Namespace = child.GetNamespace()
	}
	owner := w.k.Owner.New()
	err := w.k.Owners.Get(ctx, key, owner)
	switch {
	case apierrors.IsNotFound(err):
		log.V(1).Info("The child's owner is not here (gone, or not served): nobody to tell.", "owner", key.String())
		return nil, false
	case err != nil:
		if ctx.Err() == nil {
			log.Error(err, "The child's owner cannot be read: nobody to tell.", "owner", key.String())
		}
		return nil, false
	case owner.GetUID() != ref.UID:
		log.V(1).Info("The child's owner was replaced by another object of its name: nobody to tell.", "owner", key.String())
		return nil, false
	case owner.GetDeletionTimestamp() != nil:
		log.V(1).Info("The child's owner is being deleted: nobody to tell.", "owner", key.String())
		return nil, false
	}
	return owner, true
}

// cause is what became of the child, as its handlers learn it.
func (w *Watch) cause(p *pending) (cause.Child, error) {
	c := cause.Child{Reason: p.reason}
	body, err := w.child.Body(p.last.DeepCopyObject().(client.Object))
	if err != nil {
		return c, err
	}
	c.Body = body
	c.Old, c.New, c.Diff, err = Change(p.old, p.new)
	return c, err
}

// narrow is the cause as one handler sees it: with its id and param, and,
// for a handler of a field, the field's values and diff.
func narrow(c cause.Child, h *registry.ChildHandler) cause.Child {
	c.HandlerID, c.Param = h.ID, h.Param
	if len(h.Field) > 0 {
		c = Narrow(c, h.Field)
	}
	return c
}

// mapOrNil keeps an absent state absent: a nil map in an interface is not
// nil.
func mapOrNil(m any) map[string]any {
	body, _ := m.(map[string]any)
	return body
}

func earliest(d *time.Duration, candidate time.Duration) *time.Duration {
	if d == nil || candidate < *d {
		return &candidate
	}
	return d
}
