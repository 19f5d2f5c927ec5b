package engine

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kopf-go/kopf/internal/children"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/cycle"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/internal/write"
)

// kindState is one kind's state, in one place: its registration and GVK,
// its label in the metrics, its clients and writer, the memories of its
// objects, the channel of its daemons' requests for reconciles, whose
// objects are this replica's, and the cycle that reconciles its objects.
// The kind's controller, its daemons' host and its low-level handlers
// share it.
type kindState struct {
	// objects are the kind's registration and GVK, and make its objects.
	objects objects.Kind
	// kindLabel is the kind as the metrics name it.
	kindLabel string
	clients   *clients.Current
	writer    *write.Writer
	memories  *memory.Store
	// events carries the daemons' requests for reconciles.
	events chan event.GenericEvent
	// own says which objects are this replica's to work on.
	own ownership.Ownership
	// daemonLog is the kind's logger for daemons and timers: they outlive
	// the reconcile that spawned them, so they do not take its logger.
	daemonLog logr.Logger
	// settings are the engine's; sup supervises the daemons, which reach
	// the kind through host.
	settings Settings
	sup      *daemons.Supervisor
	host     *kindHost
	// cycles reconcile the kind's objects.
	cycles *cycle.Reconciler
	// children remember the kind's children seen, per child kind, from
	// run to run (children.go).
	childrenMu sync.Mutex
	children   map[*registry.ChildKind]*children.Known
	// claimed are the adopted objects whose claim was sent: each leaves
	// its adoption cache with a DELETED event that is no deletion.
	claimed sync.Map // types.UID → the resourceVersion claimed
	// claimedUpTo are the newest versions of adopted objects whose claim
	// was sent, for as long as the replica adopts: a copy of one of
	// these versions, or an older one, in any adoption cache is from
	// before the claim. No cache's event ends it, since another cache
	// may lag further behind (claimSent).
	claimedUpTo sync.Map // types.UID → the resourceVersion claimed
	// moving are the claimed objects as they were claimed, until the
	// share's cache has them (runreader.go).
	moving sync.Map // types.NamespacedName → movingObject
}

// movingObject is a claimed object, and when its claim was sent.
type movingObject struct {
	obj client.Object
	at  time.Time
}

// movingFor is how long a claimed object is read as it was claimed at
// most: its claim failed, or it went elsewhere meanwhile.
const movingFor = 10 * time.Second

// noteMoving keeps a copy of an object about to be claimed.
func (r *kindState) noteMoving(obj metav1.Object) {
	if o, ok := obj.(client.Object); ok {
		key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
		r.moving.Store(key, movingObject{obj: o.DeepCopyObject().(client.Object), at: time.Now()})
	}
}

// rewrite keeps the copy of a claimed object between caches as the
// engine's last write left it: a deletion's last write (the finalizer's
// removal) must not leave a copy that still holds the finalizer, for a
// reconcile to run the delete handlers on again.
func (r *kindState) rewrite(obj client.Object) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if _, ok := r.moving.Load(key); ok {
		r.noteMoving(obj)
	}
}

// moved forgets the copy of a claimed object that the share's cache has.
func (r *kindState) moved(key types.NamespacedName) { r.moving.Delete(key) }

// readMoving reads a claimed object that is in neither cache into obj as
// it was claimed; false if there is none (or it is too old).
func (r *kindState) readMoving(key types.NamespacedName, obj client.Object) bool {
	v, ok := r.moving.Load(key)
	if !ok {
		return false
	}
	m := v.(movingObject)
	if time.Since(m.at) > movingFor {
		r.moving.Delete(key)
		return false
	}
	src, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m.obj)
	if err != nil {
		return false
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(src, obj) == nil
}

// claim is the kind's writer's claim of adopted objects: the ownership's,
// noting each object it claims (nil if the ownership never adopts).
func (r *kindState) claim() write.Claim {
	body := r.own.ClaimAdopted()
	if body == nil {
		return nil
	}
	return func(obj metav1.Object) map[string]any {
		b := body(obj)
		if b != nil {
			r.noteClaim(obj.GetUID(), obj.GetResourceVersion())
			r.noteMoving(obj)
		}
		return b
	}
}

// noteClaim notes a claim sent of the object at the version. A claim
// that conflicted goes again with the live version, which is newer.
func (r *kindState) noteClaim(uid types.UID, version string) {
	r.claimed.Store(uid, version)
	for {
		v, loaded := r.claimedUpTo.LoadOrStore(uid, version)
		if !loaded || !olderVersion(v.(string), version) || r.claimedUpTo.CompareAndSwap(uid, v, version) {
			return
		}
	}
}

// claimSent reports whether a claim was sent of the object as it is, or
// of a newer version of it: the copy is from before the claim, whatever
// became of the claim. An adoption cache may hold such a copy long after
// the claim landed: its watch lags (or stalls) while the share's cache
// has the object, and once the object was handed over from there, the
// copy, still naming the retired member, would look adopted (and be
// worked on beside the next owner). A copy newer than the claim is read:
// the claim conflicted and was not sent again, or the object came back
// to an adoption cache since.
func (r *kindState) claimSent(obj metav1.Object) bool {
	version, ok := r.claimedUpTo.Load(obj.GetUID())
	return ok && !olderVersion(version.(string), obj.GetResourceVersion())
}

// forgetClaim forgets a claim that failed: the copy it was sent for is
// the object as it is.
func (r *kindState) forgetClaim(uid types.UID) {
	r.claimed.Delete(uid)
	r.claimedUpTo.Delete(uid)
}

// claimSeen forgets, for leftCache, the claim of an object that an
// adoption cache shows as claimed: no DELETED event of that cache is the
// claim's any more. Its copies from before the claim stay hidden.
func (r *kindState) claimSeen(uid types.UID) { r.claimed.Delete(uid) }

// adoptionEnded forgets the versions claimed: the replica reads no
// adoption cache until it adopts again, and what it adopts then are the
// objects of members retired since.
func (r *kindState) adoptionEnded() { r.claimedUpTo.Clear() }

// olderVersion reports whether the resourceVersion a is older than b.
// Versions that do not compare (not decimal) are not: a copy whose
// version does not compare with its claim's stays hidden, the safe side.
func olderVersion(a, b string) bool {
	cmp, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && cmp < 0
}

// leftCache reports (once) whether a DELETED event is an object that left
// this replica's caches without being deleted: handed over to another
// member, or claimed from an adoption cache into the share's.
func (r *kindState) leftCache(uid types.UID) bool {
	if _, ok := r.claimed.LoadAndDelete(uid); ok {
		return true
	}
	return r.cycles.WasHandedOver(uid)
}

// newKindState makes one kind's state: its writer, its daemons' host and
// its cycle. It keeps the memories it is given (those of the state it
// replaces), or makes new ones.
func newKindState(objs objects.Kind, s Settings, cs *clients.Current, status *write.StatusProbe, sup *daemons.Supervisor, own ownership.Ownership, mems *memory.Store, opts ...cycle.Option) *kindState {
	label := metrics.Kind(objs.GVK)
	s = guardStorages(s, label)
	if mems == nil {
		retrying, failed := metrics.Objects(label)
		mems = memory.NewStore(s.Memo, retrying, failed, sup.Gone)
	}
	k := &kindState{objects: objs, kindLabel: label, clients: cs,
		writer: write.New(objs.GVK, s.Finalizer, cs, status, write.Timeout).WithConditions(objs.Registered.Conditions).WithFence(own.Fence()), memories: mems,
		events: make(chan event.GenericEvent, enqueueBuffer), own: own, settings: s, sup: sup}
	if claim := k.claim(); claim != nil {
		// Only a ring member claims, and has copies of claimed objects
		// to keep.
		k.writer.WithClaim(claim, k.rewrite)
	}
	k.host = &kindHost{k: k, done: sup.Done()}
	invocations := metrics.InvokedOf(label)
	round := &cycle.Round{Kind: objs.Registered, Progress: s.Progress, Clock: s.Clock, Defaults: s.defaults(),
		Context: k.handlerContext, Track: sup.Track, Observe: invocations,
		Panicked: func(id string) { metrics.CallbackPanicked(label, metrics.CallbackChange, id) }}
	k.cycles = cycle.New(objs, cycle.Settings{Finalizer: s.Finalizer, KeepNames: own.KeepsNames() && works(objs.Registered), ConsistencyTimeout: s.ConsistencyTimeout,
		ErrorDelays: s.ErrorDelays, Progress: s.Progress, DiffBase: s.DiffBase, Indices: s.Indices, Clock: s.Clock, Defaults: s.defaults()},
		cs, k.writer, append([]cycle.Option{
			cycle.WithMemories(mems), cycle.WithHandlers(round), cycle.WithDaemons(daemonSync{k}), cycle.WithOwnership(own),
			cycle.WithPoster(s.Poster), cycle.WithGone(sup.Gone), cycle.WithLabel(label), cycle.WithJitter(jitter.Default()),
			cycle.WithStatusProbe(status), cycle.WithTracer(s.Tracer)}, opts...)...)
	return k
}

// handlerContext is the context a handler runs in: the logger, the
// poster for its Events, the operator's client and uncached reader, and
// the tracer of the spans of on-event handlers, which run outside any
// cycle.
func (r *kindState) handlerContext(ctx context.Context, log logr.Logger) context.Context {
	ctx = tracing.WithTracer(ctx, r.settings.Tracer)
	return clients.ForHandlers(posting.NewContext(logr.NewContext(ctx, log), r.settings.Poster), r.settings.Client, r.settings.Reader)
}

// works reports whether change handlers or daemons work on the kind's
// objects: a ring keeps the names of those objects taken while a replica
// works on one (ownership.Ownership's KeepsNames).
func works(kind *registry.Kind) bool {
	return len(kind.Changing) > 0 || len(kind.Spawning) > 0
}

// reconciles reports whether the kind has a controller: change handlers,
// daemons or timers. A kind with low-level handlers only has none, unless
// it is sharded: handing its objects over takes a reconcile.
func (r *kindState) reconciles() bool {
	return len(r.objects.Registered.Changing) > 0 || len(r.objects.Registered.Spawning) > 0 || r.own.ReconcilesEveryKind()
}

// forgetObjects forgets the remembered objects that keep does not keep,
// and stops their daemons and timers as for deleted objects: they are
// gone from what the operator serves (their namespace or their kind).
func (r *kindState) forgetObjects(keep func(key types.NamespacedName) bool) {
	for _, key := range r.memories.Keys() {
		if keep(key) {
			continue
		}
		if uid := r.memories.Forget(key); uid != "" {
			r.sup.Gone(uid)
		}
	}
}
