package peering

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watcher follows one peering object and decides whether it freezes the
// operator.
type watcher struct {
	p      *Peering
	t      Target
	frozen bool
	// present: the peering object was there when last seen.
	present bool
}

// watch runs an informer on the one peering object and judges every state
// of it, and again whenever a freezing peer's record expires.
func (w *watcher) watch(ctx context.Context) {
	informer := dynamicinformer.NewFilteredDynamicInformer(w.p.dyn, w.t.Resource(), w.t.Namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.t.Name).String()
		}).Informer()
	states := make(chan *unstructured.Unstructured, 1)
	latest := func(obj any) {
		u, _ := obj.(*unstructured.Unstructured)
		select { // only the latest state matters
		case <-states:
		default:
		}
		states <- u
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    latest,
		UpdateFunc: func(_, obj any) { latest(obj) },
		DeleteFunc: func(any) { latest(nil) },
	})
	if err != nil {
		w.p.s.Logger.Error(err, fmt.Sprintf("Cannot watch the peering object %s.", w.t))
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	defer func() { <-done }()

	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	if len(informer.GetStore().List()) == 0 {
		w.judge(ctx, nil)
	}
	var last *unstructured.Unstructured
	var wake <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case last = <-states:
		case <-wake:
		}
		next := w.judge(ctx, last)
		wake = nil
		if !next.IsZero() {
			wake = w.p.s.Clock.After(next.Sub(w.p.s.Clock.Now()))
		}
	}
}

// judge decides about one state of the peering object (nil: absent) and
// returns when to look again (when a freezing peer expires).
func (w *watcher) judge(ctx context.Context, obj *unstructured.Unstructured) time.Time {
	log := w.p.s.Logger
	if obj != nil && !w.present {
		// A peering object that appears gets this operator's record at once,
		// not only at the next keep-alive.
		w.p.touch(ctx, w.t, w.p.s.Lifetime)
	}
	w.present = obj != nil
	if obj == nil {
		if w.p.s.Mode == ModeMandatory {
			w.set(true, fmt.Sprintf("the peering object %s does not exist", w.t))
		} else {
			w.set(false, "")
		}
		return time.Time{}
	}
	status, err := records(obj)
	if err != nil {
		log.Error(err, fmt.Sprintf("The peering object %s cannot be read; its records are ignored.", w.t))
	}
	v := Judge(status, Self{Identity: w.p.s.Identity, Priority: w.p.s.Priority, Ring: w.p.s.Ring}, w.p.s.Clock.Now())
	if len(v.Dead) > 0 {
		dead := map[string]any{}
		for _, id := range v.Dead {
			dead[id] = nil
		}
		if err := w.p.patchStatus(ctx, w.t, dead); err != nil && ctx.Err() == nil {
			log.Error(err, fmt.Sprintf("Cannot remove the dead peers %s from %s.", strings.Join(v.Dead, ", "), w.t))
		}
	}
	switch {
	case len(v.Higher) > 0:
		if !w.frozen {
			log.Info(fmt.Sprintf("Pausing operations in favour of %s.", list(v.Higher)))
		}
		w.set(true, "in favour of "+list(v.Higher))
	case len(v.Same) > 0:
		log.Info(fmt.Sprintf("Possibly conflicting operators with the same priority: %s.", list(v.Same)))
		if !w.frozen {
			log.Info(fmt.Sprintf("Pausing all operators, including self: %s", list(v.Peers)))
		}
		w.set(true, "conflicting operators with the same priority "+list(v.Same))
	default:
		if w.frozen {
			log.Info("Resuming operations after the pause. Conflicting operators with the same priority are gone.")
		}
		w.set(false, "")
	}
	return v.Wake
}

func (w *watcher) set(frozen bool, reason string) {
	w.frozen = frozen
	w.p.toggle.Set(w.t.blocker(), frozen, reason)
}

// records reads the peer records of a peering object's status.
func records(obj *unstructured.Unstructured) (map[string]*kopfv1.Peer, error) {
	status, ok := obj.Object["status"]
	if !ok || status == nil {
		return nil, nil
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, err
	}
	var out map[string]*kopfv1.Peer
	if err := json.Unmarshal(raw, &out); err != nil {
		// One bad record must not hide the others: read them one by one.
		var each map[string]json.RawMessage
		if json.Unmarshal(raw, &each) != nil {
			return nil, fmt.Errorf("read the peer records: %w", err)
		}
		out = map[string]*kopfv1.Peer{}
		for id, r := range each {
			// A pointer, so that a null record stays nil (being removed)
			// rather than becoming an empty, live one.
			var peer *kopfv1.Peer
			if json.Unmarshal(r, &peer) == nil {
				out[id] = peer
			}
		}
		return out, fmt.Errorf("read the peer records: %w", err)
	}
	return out, nil
}
