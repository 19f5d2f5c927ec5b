package children

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/pkg/cause"
)

// Events is the Watch's handler of the children's informer events: each
// is merged into what is pending for its child, which is queued.
func (w *Watch) Events() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return events{w}
}

type events struct{ w *Watch }

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (e events) Create(_ context.Context, ev event.TypedCreateEvent[client.Object], q queue) {
	reason := cause.ChildCreated
	if ev.IsInInitialList {
		reason = cause.ChildExisting
	}
	e.observe(q, reason, nil, ev.Object)
}

func (e events) Update(_ context.Context, ev event.TypedUpdateEvent[client.Object], q queue) {
	e.observe(q, cause.ChildChanged, ev.ObjectOld, ev.ObjectNew)
}

func (e events) Delete(_ context.Context, ev event.TypedDeleteEvent[client.Object], q queue) {
	e.observe(q, cause.ChildDeleted, ev.Object, nil)
}

// Generic queues a child whose event RecallGone has observed already.
func (events) Generic(_ context.Context, ev event.TypedGenericEvent[client.Object], q queue) {
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}})
}

func (e events) observe(q queue, reason cause.ChildReason, old, new client.Object) {
	obj := new
	if obj == nil {
		obj = old
	}
	if obj == nil {
		return
	}
	// This runs on the informer's goroutine, where a panic (in a typed
	// child's own DeepCopy or conversion) would end the process.
	queued, p := contain.Value(func() bool { return e.w.Observe(reason, old, new) })
	if p != nil {
		e.w.k.Log.Error(p, "An event of a child cannot be handled: the object's own code panicked.", "stack", string(p.Stack))
		metrics.CallbackPanicked(e.w.k.Label, metrics.CallbackEncoding, "")
		return
	}
	if !queued {
		return
	}
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}})
}
