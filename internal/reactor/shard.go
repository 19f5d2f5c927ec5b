package reactor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/ring"
)

// shard is this replica's place in a ring (docs/sharding.md): the owner
// label that selects its objects into its cache, and the annotation by
// which the assigner asks it to hand an object over. Nil: not sharded.
type shard struct {
	ring, member string
	ownerLabel   string
	nextKey      string
	// taken and released count the objects that entered and left this
	// member's cache since the last summary line.
	taken, released atomic.Int64
	// handed are the uids of objects handed over whose DELETED event (the
	// object leaving the cache) is still to come.
	handed sync.Map
	// lease is the member's Lease, which bounds its writes (set before
	// the manager starts).
	lease *ring.Member
}

// writableUntil is when this member's writes to objects must have ended.
func (s *shard) writableUntil() time.Time {
	if s.lease == nil {
		return time.Time{}
	}
	return s.lease.WritableUntil()
}

func newShard(ringName, member string) *shard {
	return &shard{ring: ringName, member: member, ownerLabel: ring.OwnerLabel(ringName), nextKey: ring.NextAnnotation(ringName)}
}

// selector selects the objects this member owns: its cache holds only
// them, and an object whose label moves to another member leaves it.
func (s *shard) selector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{s.ownerLabel: s.member})
}

// handoverTo is the member that the assigner asks this one to hand the
// object over to; "" if none (or this member itself).
func (s *shard) handoverTo(obj client.Object) string {
	if s == nil {
		return ""
	}
	next := obj.GetAnnotations()[s.nextKey]
	if next == s.member || obj.GetLabels()[s.ownerLabel] != s.member {
		return ""
	}
	return next
}

// acknowledgement is the owner's last write to an object it hands over:
// the owner label moves to the next member and the request goes, guarded
// by the resourceVersion of the object the owner let go of, so that it
// overwrites no change it has not seen.
func (s *shard) acknowledgement(obj client.Object, next string) map[string]any {
	return map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{s.ownerLabel: next},
		"annotations":     map[string]any{s.nextKey: nil},
	}}
}

// wasHandedOver reports (once) whether a DELETED event is an object that
// this member handed over rather than one that was deleted.
func (s *shard) wasHandedOver(uid types.UID) bool {
	if s == nil {
		return false
	}
	_, ok := s.handed.LoadAndDelete(uid)
	return ok
}

// summarize logs how many objects entered and left this member's cache
// since the last summary, if any did: one line per rebalance rather than
// one per object (those are debug lines).
func (s *shard) summarize(log logr.Logger) {
	taken, released := s.taken.Swap(0), s.released.Swap(0)
	if taken == 0 && released == 0 {
		return
	}
	log.Info("The shard of this replica changed.", "ring", s.ring, "member", s.member, "taken", taken, "released", released)
}

// summarizeShard logs, every few seconds while objects move, how many
// entered and left this member's cache.
func (e *engine) summarizeShard(ctx context.Context) error {
	ticker := e.settings.Clock.NewTicker(shardSummaryInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			e.shard.summarize(e.log)
			return nil
		case <-ticker.C():
			e.shard.summarize(e.log)
			for _, r := range e.kinds {
				metrics.ShardObjectsOf(e.shard.ring, r.kindLabel).Set(float64(r.memories.size()))
			}
		}
	}
}

// shardSummaryInterval is how often the objects taken and released are
// summed up in one log line: a rebalance moves them within seconds.
const shardSummaryInterval = 5 * time.Second
