// Package memory is what this process remembers of each object of a
// kind between its cycles: in this process only, never persisted.
package memory

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Object is what this process remembers about one object (one uid) between
// cycles. It is never persisted: after a restart, objects start afresh.
//
// Object has no lock of its own. Its plain fields are safe only because
// controller-runtime's workqueue hands a key to one worker at a time: one
// cycle of an object runs at once, and it owns them. What others touch is
// guarded on its own: daemonWrote is written by the object's daemons and
// timers from their goroutines (atomic); memo is shared with them and with
// the on-event handlers on the informer's goroutine (memo.Memo locks
// itself); standing and dropped are read and written under the store's lock,
// which a stopping engine and the forgetting take too; NoticedByListing
// is set once, under the store's lock, when the memory is made. The
// exported fields are the cycle's own.
type Object struct {
	// noticedByListing: the object was first seen in the initial listing of
	// this process, so it gets resume handlers once.
	NoticedByListing bool
	// fullyHandledOnce: some cause of the object was fully handled (or had
	// no handlers) in this process; resume handlers do not run any more.
	FullyHandledOnce bool
	// expectedVersion is the resourceVersion of this process's last write;
	// until the cache has it, change handlers wait (up to a deadline).
	ExpectedVersion     string
	ConsistencyDeadline time.Time
	// HandedOverAt is the resourceVersion of this process's handover of
	// the object to another ring member: a version older than it, which a
	// lagging cache may still show with this member's labels, is never
	// worked on.
	HandedOverAt string
	// DaemonWrote is the resourceVersion of the latest write of the
	// object's daemons and timers, which write from their own goroutines;
	// the next cycle takes it as its expected version.
	daemonWrote atomic.Pointer[string]
	// unwritten is a cycle's patch that the API server did not accept (an
	// API error); it is written before anything else happens, so that
	// handler outcomes are not lost and handlers do not run twice.
	Unwritten *patch.Patch
	// oversizedEssence is the last handled essence when it could not be
	// stored on the object because of its size.
	OversizedEssence map[string]any
	// throttles counts the unexpected errors in a row; throttledUntil is
	// when the object is processed again.
	Throttles      int
	ThrottledUntil time.Time
	// memo is the object's memo: a copy of the operator's at first sight.
	memo *memo.Memo
	// reported remembers which malformed values were already reported
	// with an Event, so that a bad annotation produces one Event, not one
	// per cycle.
	reported map[string]string
	// standing is where the object stands with its handlers, as the
	// kind's gauges count it (standing.go); dropped: the memory is
	// forgotten and no longer counted.
	standing execution.Standing
	dropped  bool
	// gone: a write found the object gone (deleted, or replaced by another
	// of its name); the cache still shows it, but nothing runs for it.
	Gone bool
}

// Store holds the memory of every object of one kind.
type Store struct {
	mu    sync.Mutex
	byUID map[types.UID]*Object
	byKey map[types.NamespacedName]types.UID
	// operator is the operator's memo, which objects' memos start from.
	operator *memo.Memo
	// retrying and failed count the objects in those standings; closed:
	// the engine has stopped, and they count nothing any more.
	retrying, failed Gauge
	closed           bool
	// replaced is told the uid of an object whose name another object
	// (a new uid) has taken: its memory is gone, and so must its daemons
	// and timers be, though no reconcile saw it missing. Nil: nobody.
	replaced func(uid types.UID)
}

// NewStore is the store of a kind's memories: objects' memos start as
// copies of the operator's; retrying and failed count the objects in
// those standings (nil: not counted); replaced is told of an object whose
// name another has taken (nil: nobody).
func NewStore(operator *memo.Memo, retrying, failed Gauge, replaced func(uid types.UID)) *Store {
	return &Store{byUID: map[types.UID]*Object{}, byKey: map[types.NamespacedName]types.UID{}, operator: operator,
		retrying: retrying, failed: failed, replaced: replaced}
}

// Notice creates the memory of an object on its first sighting, recording
// whether that sighting was the initial listing.
func (m *Store) Notice(uid types.UID, key types.NamespacedName, listing bool) {
	m.mu.Lock()
	_, old := m.recallLocked(uid, key, listing)
	m.mu.Unlock()
	m.tellReplaced(old)
}

// Recall returns the memory of an object, creating it if needed. A new uid
// under a known name is a re-created object: the old one's memory goes.
func (m *Store) Recall(uid types.UID, key types.NamespacedName) *Object {
	m.mu.Lock()
	mem, old := m.recallLocked(uid, key, false)
	m.mu.Unlock()
	m.tellReplaced(old)
	return mem
}

// recallLocked returns the memory of the uid, made if needed, and the uid
// whose memory it replaced under the name (empty: none).
func (m *Store) recallLocked(uid types.UID, key types.NamespacedName, listing bool) (*Object, types.UID) {
	if mem, ok := m.byUID[uid]; ok {
		return mem, ""
	}
	old, ok := m.byKey[key]
	if ok && old != uid {
		m.dropLocked(m.byUID[old])
		delete(m.byUID, old)
	} else {
		old = ""
	}
	mem := &Object{NoticedByListing: listing, memo: m.operator.Copy()}
	m.byUID[uid] = mem
	m.byKey[key] = uid
	return mem, old
}

// tellReplaced tells of a replaced object, outside the lock: the
// supervisor takes its own.
func (m *Store) tellReplaced(uid types.UID) {
	if uid != "" && m.replaced != nil {
		m.replaced(uid)
	}
}

// Known returns the memory of an object if it is remembered, and a memory
// of this moment only if not: for the raw events of an object that may be
// gone already (MODIFIED late, DELETED), whose memory, once its reconcile
// forgot it, must not come back (nothing would forget it again).
func (m *Store) Known(uid types.UID) *Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mem, ok := m.byUID[uid]; ok {
		return mem
	}
	return &Object{memo: m.operator.Copy(), dropped: true}
}

// ForgetUID drops the memory of a deleted object by its uid, leaving a
// re-created object of the same name alone.
func (m *Store) ForgetUID(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.byUID[uid]
	if !ok {
		return
	}
	m.dropLocked(mem)
	delete(m.byUID, uid)
	for key, known := range m.byKey {
		if known == uid {
			delete(m.byKey, key)
		}
	}
}

// Forget drops the memory of an object that no longer exists, and returns
// the uid it had (empty if it was not remembered).
func (m *Store) Forget(key types.NamespacedName) types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	uid, ok := m.byKey[key]
	if ok {
		m.dropLocked(m.byUID[uid])
		delete(m.byUID, uid)
		delete(m.byKey, key)
	}
	return uid
}

// daemonWrote records a write of a daemon or timer of the object with
// this uid, if it is remembered: the next cycle waits for the cache to
// show it, as for the cycles' own writes.
func (m *Store) DaemonWrote(uid types.UID, version string) {
	m.mu.Lock()
	mem := m.byUID[uid]
	m.mu.Unlock()
	if mem != nil && version != "" {
		mem.daemonWrote.Store(&version)
	}
}

// Keys are the names of the remembered objects.
func (m *Store) Keys() []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(m.byKey))
	for key := range m.byKey {
		out = append(out, key)
	}
	return out
}

// Size is the number of remembered objects.
func (m *Store) Size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byUID)
}

// FirstReport records a malformed value and reports whether it is new.
func (mem *Object) FirstReport(what, value string) bool {
	if mem.reported == nil {
		mem.reported = map[string]string{}
	}
	if prev, ok := mem.reported[what]; ok && prev == value {
		return false
	}
	mem.reported[what] = value
	return true
}

// Memo is the object's memo: a copy of the operator's at first sight,
// shared with its daemons and on-event handlers.
func (mem *Object) Memo() *memo.Memo { return mem.memo }

// TakeDaemonWrite returns the resourceVersion of the latest write of the
// object's daemons and timers since the last call (nil: none).
func (mem *Object) TakeDaemonWrite() *string { return mem.daemonWrote.Swap(nil) }
