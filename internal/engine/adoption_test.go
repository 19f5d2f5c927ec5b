package engine

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/registry"
)

// queued records what a handler puts into a queue, and after how long.
type queued struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	now   []reconcile.Request
	after map[reconcile.Request]time.Duration
}

func (q *queued) Add(r reconcile.Request) { q.now = append(q.now, r) }
func (q *queued) AddAfter(r reconcile.Request, d time.Duration) {
	if q.after == nil {
		q.after = map[reconcile.Request]time.Duration{}
	}
	q.after[r] = d
}

// adoptsRetired adopts the objects whose owner label names "retired".
type adoptsRetired struct{ ownership.Unshared }

func (adoptsRetired) Adopts(obj client.Object) bool { return obj.GetLabels()["owner"] == "retired" }

// An object in an adoption cache's first listing is reconciled at once;
// one that enters later (a late claim moved its label to the retired
// member's name) only after the ring's margin, and so are its updates
// within the margin; after it, its updates go at once.
func TestAnObjectEnteringAnAdoptionCacheLateWaitsOutTheMargin(t *testing.T) {
	h := &enteringLater{noticingHandler: noticingHandler{memories: memory.NewStore(nil, nil, nil, nil), own: adoptsRetired{}},
		delay: 200 * time.Millisecond, offered: &sync.Map{}}
	obj := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"owner": "retired"}}}
	}
	q := &queued{}
	h.Create(context.Background(), event.CreateEvent{Object: obj("listed"), IsInInitialList: true}, q)
	h.Create(context.Background(), event.CreateEvent{Object: obj("late")}, q)
	atOnceAndAfterTheMargin(t, q, h.delay, "listed", "late")
	late := requestIn("late")
	q.now, q.after = nil, nil
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: obj("late"), ObjectNew: obj("late")}, q)
	if len(q.now) != 0 || q.after[late] <= 0 || q.after[late] > h.delay {
		t.Errorf("an update within the margin: queued at once %v, after %v; want after the rest of the margin", q.now, q.after)
	}
	time.Sleep(h.delay + 50*time.Millisecond)
	q.now, q.after = nil, nil
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: obj("late"), ObjectNew: obj("late")}, q)
	if len(q.now) != 1 || len(q.after) != 0 {
		t.Errorf("an update after the margin: queued at once %v, after %v; want at once", q.now, q.after)
	}
}

// A standby cache holds other members' objects: it queues none of them,
// and notes the moment one's labels move, so that, were its owner retired
// within the margin, its work would wait out the rest (requestAdopted
// asks wait). An adopted object whose labels change and that stays
// adopted did not enter, and an update that moves an object to the
// retired member's name is an entry, as a late creation is.
func TestAStandbyCacheNotesMovesAndQueuesOnlyWhatItAdopts(t *testing.T) {
	var forgotten []types.UID
	h := &enteringLater{noticingHandler: noticingHandler{memories: memory.NewStore(nil, nil, nil, nil), own: adoptsRetired{}},
		delay: 200 * time.Millisecond, offered: &sync.Map{}, claimSeen: func(uid types.UID) { forgotten = append(forgotten, uid) }}
	obj := func(name, owner string, more ...string) *corev1.ConfigMap {
		labels := map[string]string{"owner": owner}
		for _, k := range more {
			labels[k] = "set"
		}
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: labels}}
	}
	q := &queued{}
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: obj("theirs", "live-a"), IsInInitialList: true}, q)
	h.Create(ctx, event.CreateEvent{Object: obj("placed", "live-a")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: obj("moved", "live-a"), ObjectNew: obj("moved", "live-b")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: obj("still", "live-a"), ObjectNew: obj("still", "live-a")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: obj("gone", "live-a")}, q)
	if len(q.now) != 0 || len(q.after) != 0 {
		t.Errorf("other members' objects were queued: at once %v, after %v", q.now, q.after)
	}
	for name, want := range map[string]bool{"theirs": false, "placed": true, "moved": true, "still": false} {
		if got := h.wait(types.UID("uid-"+name)) > 0; got != want {
			t.Errorf("%s: waits %v, want %v", name, got, want)
		}
	}
	if _, ok := h.offered.Load(types.UID("uid-moved")); ok {
		t.Error("an object of a live member is taken for offered")
	}
	h.Create(ctx, event.CreateEvent{Object: obj("claimed", "retired"), IsInInitialList: true}, q)
	if _, ok := h.offered.Load(types.UID("uid-claimed")); !ok {
		t.Error("an adopted object in the first listing was not taken for offered")
	}
	q.now = nil
	forgotten = nil
	h.Update(ctx, event.UpdateEvent{ObjectOld: obj("claimed", "retired"), ObjectNew: obj("claimed", "me")}, q)
	if len(forgotten) != 1 || forgotten[0] != "uid-claimed" {
		t.Errorf("an object the cache shows claimed: claims forgotten %v, want its own", forgotten)
	}
	// Should its new owner retire later, the epoch's pass, which reads
	// the retired members' objects alone, must offer it again.
	if _, ok := h.offered.Load(types.UID("uid-claimed")); ok {
		t.Error("an object that the cache shows moved to a live member is still taken for offered")
	}

	h.Update(ctx, event.UpdateEvent{ObjectOld: obj("adopted", "retired"), ObjectNew: obj("adopted", "retired", "edited")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: obj("claimed-late", "live-a"), ObjectNew: obj("claimed-late", "retired")}, q)
	adopted, late := reconcile.Request{}, reconcile.Request{}
	adopted.Namespace, adopted.Name = "ns", "adopted"
	late.Namespace, late.Name = "ns", "claimed-late"
	if len(q.now) != 1 || q.now[0] != adopted {
		t.Errorf("queued at once: %v, want the adopted object whose labels were edited alone", q.now)
	}
	if d := q.after[late]; d <= 0 || d > h.delay {
		t.Errorf("an object moved to the retired member's name is queued after %s, want within the margin %s", d, h.delay)
	}
	for _, name := range []string{"adopted", "claimed-late"} {
		if _, ok := h.offered.Load(types.UID("uid-" + name)); !ok {
			t.Errorf("%s was queued but not taken for offered", name)
		}
	}
	time.Sleep(h.delay + 50*time.Millisecond)
	if w := h.wait("uid-moved"); w != 0 {
		t.Errorf("a move older than the margin still waits %s", w)
	}
}

// A claimed object is read as it was claimed while it is in neither
// cache, until the share's cache has it, and no longer than movingFor.
func TestAClaimedObjectIsReadAsItWasClaimed(t *testing.T) {
	r := &kindState{}
	claimed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "uid-o", Labels: map[string]string{"owner": "retired"}},
		Data: map[string]string{"k": "v"}}
	key := types.NamespacedName{Namespace: "ns", Name: "o"}
	if r.readMoving(key, &corev1.ConfigMap{}) {
		t.Fatal("an object never claimed was read")
	}
	r.noteMoving(claimed)
	claimed.Labels["owner"] = "changed after the claim"
	got := &corev1.ConfigMap{}
	if !r.readMoving(key, got) || got.Name != "o" || got.Labels["owner"] != "retired" || got.Data["k"] != "v" {
		t.Errorf("read %+v, want the object as it was claimed", got)
	}
	r.moved(key)
	if r.readMoving(key, &corev1.ConfigMap{}) {
		t.Error("an object that the share's cache has was still read as claimed")
	}
	r.moving.Store(key, movingObject{obj: claimed, at: time.Now().Add(-movingFor - time.Second)})
	if r.readMoving(key, &corev1.ConfigMap{}) {
		t.Error("a claim older than movingFor was still read")
	}
}

// The adoption cache's copy of an object as it was when its claim was
// sent, or from before, is not read (the claim has changed it); a newer
// copy, which the claim did not change (it conflicted), or one never
// claimed, is. A claim that conflicted and went again with the live
// version hides the copy it was first sent for too, and an adoption
// cache's sight of the claim (claimSeen) hides nothing less: another
// cache may still hold a copy from before it. A claim that failed, and
// the end of the adoption, hide nothing any more.
func TestAClaimSentHidesTheCopyFromBeforeIt(t *testing.T) {
	r := &kindState{}
	at := func(version string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "uid-o", ResourceVersion: version}}
	}
	if r.claimSent(at("5")) {
		t.Fatal("an object never claimed counts as claimed")
	}
	r.noteClaim("uid-o", "5")
	if !r.claimSent(at("5")) {
		t.Error("the copy the claim was sent for counts as unclaimed")
	}
	if r.claimSent(at("6")) {
		t.Error("a copy newer than the claim counts as claimed")
	}
	r.noteClaim("uid-o", "7") // the claim conflicted, and went again
	for _, v := range []string{"4", "5", "7"} {
		if !r.claimSent(at(v)) {
			t.Errorf("the copy at %s, from before a claim sent at 7, counts as unclaimed", v)
		}
	}
	r.noteClaim("uid-o", "6") // a late note of an older attempt
	if !r.claimSent(at("7")) {
		t.Error("an older claim's note unhid the copy of a newer one")
	}
	r.claimSeen("uid-o")
	if !r.claimSent(at("5")) {
		t.Error("one cache's sight of the claim unhid the copies from before it")
	}
	if _, ok := r.claimed.Load(types.UID("uid-o")); ok {
		t.Error("the claim seen is still taken for an object leaving its adoption cache")
	}
	r.forgetClaim("uid-o")
	if r.claimSent(at("5")) {
		t.Error("a claim that failed still hides the copy")
	}
	r.noteClaim("uid-o", "9")
	r.adoptionEnded()
	if r.claimSent(at("9")) {
		t.Error("a claim still hides the copy after the adoption ended")
	}
}

// holding is a cache that holds one copy of each object, by name.
type holding struct {
	cache.Cache
	objects map[types.NamespacedName]*unstructured.Unstructured
}

func (c *holding) Get(_ context.Context, key types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	o, ok := c.objects[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}, key.Name)
	}
	o.DeepCopy().DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

// An object that this replica adopted, claimed (the claim conflicted once
// and went again with the live version) and then handed over from the
// share's cache is read from no adoption cache afterwards, though one of
// them still shows it from before the claim, naming the retired member:
// its watch lags (a stream stalled, as TestFaults' share-watch-stalled
// stalls them) while another cache has shown the claim. A cycle on that copy would
// take the object for adopted, and run its daemons beside the member it
// was handed over to.
func TestAClaimedObjectIsNotReadFromALaggingAdoptionCache(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	kind := &registry.Kind{GVK: gvk, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	key := types.NamespacedName{Namespace: "ns", Name: "o"}
	copyAt := func(version, owner string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		u.SetUID("uid-o")
		u.SetResourceVersion(version)
		u.SetLabels(map[string]string{"owner": owner})
		return u
	}
	r := &kindState{objects: objects.Kind{Registered: kind, GVK: gvk}}
	lagging := &holding{objects: map[types.NamespacedName]*unstructured.Unstructured{key: copyAt("5", "retired")}}
	caughtUp := &holding{objects: map[types.NamespacedName]*unstructured.Unstructured{key: copyAt("8", "me")}}
	a := &adoption{e: &engine{own: adoptsRetired{}}, kinds: []*kindState{r}, caches: map[adoptKey]*adoptCache{
		{retired: "retired", selector: "owner=retired"}:    {c: lagging},
		{retired: ownership.Standby, selector: "bucket=1"}: {c: caughtUp},
	}}
	a.adopting.Store(true)
	share := &holding{objects: map[types.NamespacedName]*unstructured.Unstructured{}}
	reader := &runReader{main: share, a: a, kinds: map[string]*kindState{gvk.String(): r}, scheme: runtime.NewScheme()}
	read := func() (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		return obj, reader.Get(context.Background(), key, obj)
	}

	if obj, err := read(); err != nil || obj.GetResourceVersion() != "5" {
		t.Fatalf("before any claim: read %v, %v; want the adopted copy at 5", obj, err)
	}
	r.noteClaim("uid-o", "5") // conflicted: the object had changed
	r.noteClaim("uid-o", "7") // sent again with the live version; landed at 8
	r.moving.Delete(key)      // the share's cache had the object
	r.claimSeen("uid-o")      // the standby cache showed the claim
	// Handed over from the share's cache: it is in neither the share's
	// cache nor, as this replica's, in any other.
	if obj, err := read(); !apierrors.IsNotFound(err) {
		t.Errorf("after the claim and the handover: read the copy at %s naming %q, want none", obj.GetResourceVersion(), obj.GetLabels()["owner"])
	}
	lagging.objects[key] = copyAt("9", "retired") // back to the retired member's name since (a late write)
	if obj, err := read(); err != nil || obj.GetResourceVersion() != "9" {
		t.Errorf("a copy newer than the claim: read %v, %v; want it", obj, err)
	}
}

// listCounting is a cache that records the field selector of each list
// ("" for none) and lists nothing.
type listCounting struct {
	cache.Cache
	fields []string
}

func (c *listCounting) List(_ context.Context, _ client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	sel := ""
	if o.FieldSelector != nil {
		sel = o.FieldSelector.String()
	}
	c.fields = append(c.fields, sel)
	return nil
}

func (c *listCounting) WaitForCacheSync(context.Context) bool { return true }

// claiming adopts and claims as a ring member does, from any retired
// member; it adopts nothing here, since the caches list nothing.
type claiming struct{ ownership.Unshared }

func (claiming) ClaimAdopted() func(metav1.Object) map[string]any {
	return func(metav1.Object) map[string]any { return nil }
}

// schemeOnly is a manager that has a scheme and nothing else.
type schemeOnly struct {
	manager.Manager
	scheme *runtime.Scheme
}

func (m schemeOnly) GetScheme() *runtime.Scheme { return m.scheme }

// follow looks through the caches that keep going only when what Adopts
// answers may have changed: asked again with the same answer (a takeover's
// pause, re-asked every drainIdle), it reads none of their objects. When
// it does, it reads only the retired members' objects, by the owner index,
// in the standby caches as in the retired member's own.
func TestFollowLooksThroughKeptCachesOnlyForANewAnswer(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	kind := &registry.Kind{GVK: gvk, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	standbySel := labels.SelectorFromSet(labels.Set{"bucket": "1"})
	retiredSel := labels.SelectorFromSet(labels.Set{"owner": "retired"})
	standby, adopted := &listCounting{}, &listCounting{}
	a := &adoption{e: &engine{mgr: schemeOnly{scheme: runtime.NewScheme()}},
		kinds: []*kindState{{objects: objects.Kind{Registered: kind, GVK: gvk}}},
		caches: map[adoptKey]*adoptCache{
			{retired: ownership.Standby, selector: standbySel.String()}: {c: standby},
			{retired: "retired", selector: retiredSel.String()}:         {c: adopted},
		}}
	want := map[string][]labels.Selector{ownership.Standby: {standbySel}, "retired": {retiredSel}}
	a.follow(context.Background(), want, false)
	if len(standby.fields)+len(adopted.fields) != 0 {
		t.Errorf("the same answer: the kept caches were listed %v and %v, want never", standby.fields, adopted.fields)
	}
	a.follow(context.Background(), want, true)
	byOwner := []string{ownerIndex + "=retired"}
	if !slices.Equal(standby.fields, byOwner) || !slices.Equal(adopted.fields, byOwner) {
		t.Errorf("a new answer: the kept caches were listed by %q and %q, want once each by %q", standby.fields, adopted.fields, byOwner)
	}
}

// The drains claim nothing until claimsFrom: a takeover's start of its
// objects has the CPUs first. A wait ends with its context too.
func TestClaimsWaitUntilClaimsFrom(t *testing.T) {
	a := &adoption{}
	if !a.claimsWait(context.Background()) {
		t.Fatal("with no takeover, the claims waited")
	}
	const wait = 100 * time.Millisecond
	from := time.Now().Add(wait)
	a.claimsFrom.Store(from.UnixNano())
	if !a.claimsWait(context.Background()) || time.Now().Before(from) {
		t.Errorf("the claims went %s before claimsFrom", time.Until(from))
	}
	a.claimsFrom.Store(time.Now().Add(time.Hour).UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if a.claimsWait(ctx) {
		t.Error("a wait whose context ended said the claims may go")
	}
}

// While the replica adopts, a drain reads only the retired members'
// objects, by the owner index, each time it looks for objects to claim:
// a standby cache holds a share of live members' objects besides, which
// no drain claims. (The drain's first listing counts the whole cache for
// its log line, once.)
func TestDrainsReadOnlyTheRetiredMembersObjects(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	kind := &registry.Kind{GVK: gvk, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	standby := &listCounting{}
	a := &adoption{e: &engine{mgr: schemeOnly{scheme: runtime.NewScheme()}, own: claiming{}},
		kinds: []*kindState{{objects: objects.Kind{Registered: kind, GVK: gvk}, own: claiming{}}}}
	a.adopting.Store(true)
	retired := []string{"m2", "m3"}
	a.retired.Store(&retired)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	a.drain(ctx, standby, ownership.Standby) // one look, then it idles until ctx ends
	want := []string{"", ownerIndex + "=m2", ownerIndex + "=m3"}
	if !slices.Equal(standby.fields, want) {
		t.Errorf("the drain listed by %q, want %q", standby.fields, want)
	}
}

// claimingFirst adopts the objects whose owner label names "retired",
// and claims first those whose label "first" is set.
type claimingFirst struct{ adoptsRetired }

func (claimingFirst) ClaimsFirst(obj client.Object) bool { return obj.GetLabels()["first"] != "" }

// The low-level handlers of an adoption cache hear of the objects this
// replica adopts, but not of those it claims before any work: another
// ring's write may land instead of the claim. The reconciles still get
// them (their stand-by writes the claim).
func TestLowLevelHandlersHearOfAClaimedFirstObjectOnlyFromTheShare(t *testing.T) {
	obj := func(labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "uid-o", Labels: labels}}
	}
	offered := &sync.Map{}
	lowLevel := offerToLowLevel(claimingFirst{}, offered)
	reconciles := &enteringLater{noticingHandler: noticingHandler{memories: memory.NewStore(nil, nil, nil, nil), own: claimingFirst{}}, offered: offered}
	for _, tt := range []struct {
		name                 string
		labels               map[string]string
		lowLevel, reconciled bool
	}{
		{"adopted", map[string]string{"owner": "retired"}, true, true},
		{"adopted, claimed first", map[string]string{"owner": "retired", "first": "yes"}, false, true},
		{"not adopted", map[string]string{"owner": "live"}, false, false},
	} {
		if got := lowLevel(obj(tt.labels)); got != tt.lowLevel {
			t.Errorf("%s: offered to the low-level handlers: %v, want %v", tt.name, got, tt.lowLevel)
		}
		if got := reconciles.adopts(obj(tt.labels)); got != tt.reconciled {
			t.Errorf("%s: reconciled: %v, want %v", tt.name, got, tt.reconciled)
		}
	}
}

// changedSince adopts the objects whose owner label names "retired", and
// counts those whose version is above 100 as written since the owner's
// retirement.
type changedSince struct{ adoptsRetired }

func (changedSince) ChangedSinceRetirement(obj client.Object) bool {
	v, err := strconv.Atoi(obj.GetResourceVersion())
	return err != nil || v > 100
}

// An object in an adoption cache's first listing that was written since
// its owner's retirement waits out the margin, as a late one does: the
// write may be a retired member's late claim that moved it from another
// adopter, which stops within the margin. One unchanged since goes at
// once.
func TestAListedObjectWrittenSinceTheRetirementWaitsOutTheMargin(t *testing.T) {
	h := &enteringLater{noticingHandler: noticingHandler{memories: memory.NewStore(nil, nil, nil, nil), own: changedSince{}},
		delay: 200 * time.Millisecond, offered: &sync.Map{}}
	obj := func(name, version string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			ResourceVersion: version, Labels: map[string]string{"owner": "retired"}}}
	}
	q := &queued{}
	h.Create(context.Background(), event.CreateEvent{Object: obj("before", "90"), IsInInitialList: true}, q)
	h.Create(context.Background(), event.CreateEvent{Object: obj("since", "120"), IsInInitialList: true}, q)
	atOnceAndAfterTheMargin(t, q, h.delay, "before", "since")
}

// requestIn is the request of the object of that name in "ns".
func requestIn(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// atOnceAndAfterTheMargin checks that q holds the object now alone at
// once, and the object later after the margin.
func atOnceAndAfterTheMargin(t *testing.T, q *queued, margin time.Duration, now, later string) {
	t.Helper()
	if len(q.now) != 1 || q.now[0] != requestIn(now) {
		t.Errorf("queued at once: %v, want %s alone", q.now, now)
	}
	if d := q.after[requestIn(later)]; d < margin-50*time.Millisecond || d > margin {
		t.Errorf("%s is queued after %s, want the margin %s", later, d, margin)
	}
}
