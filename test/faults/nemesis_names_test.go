package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardring "github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// The nemesis's bounds.
const (
	// incarnationsPerMember is how many incarnations the nemesis creates
	// per member of the ring the join makes, in distinct buckets, so that
	// some land in the buckets that the join moves to the joiner (each
	// does with a chance of one in the members): with eight per member,
	// none does in about one run of 3,000 (e^-8). (With five, and at
	// most 64 in a ring of 15, one run in 70 tested nothing.)
	incarnationsPerMember = 8
	// minIncarnations and maxIncarnations bound their number.
	minIncarnations, maxIncarnations = 20, 160
	// runningBound bounds the wait until their create handlers run.
	runningBound = 30 * time.Second
	// epochBound bounds the wait for the joiner's member Lease, and then
	// for the epoch that lists it.
	epochBound = time.Minute
	// refusalPeriod is how soon a refused create is tried again, and
	// reuseBound how long, per name.
	refusalPeriod = 100 * time.Millisecond
	reuseBound    = 2 * time.Minute
	// workingWindow is how recent a run's last record must be for its
	// actor to count as still working on the object: a few beats.
	workingWindow = 500 * time.Millisecond
	// startBound bounds the wait for the new incarnations' create
	// handlers to start somewhere.
	startBound = 30 * time.Second
)

// reuse is one name deleted and taken again.
type reuse struct {
	name    string
	old     types.UID
	owners  []string // the actors working on the predecessor when chosen
	deleted time.Time
	taken   time.Time // when the new incarnation was created
	new     types.UID
	// refusals counts the creates refused with AlreadyExists.
	refusals int
	// vanished: the predecessor was gone (or replaced) before the deletion.
	vanished bool
	err      error
}

// nameReused creates incarnations in the ring's namespace, waits until
// their create handlers run, joins a new replica (podID) and waits until
// the ring's epoch lists it; then each incarnation in a bucket that now
// hashes to the joiner, whose old owner still works on it, is deleted
// and at once created again under its name, the create tried again every
// refusalPeriod while the API server refuses it (AlreadyExists: the name
// is taken until the old owner lets the predecessor go). The fault, from
// the join to the last new incarnation's start, is logged with the
// joiner's POD_ID and no actor, as a join: its victims are the old
// owners of the names, which it does not stop. If no predecessor was
// still worked on at its deletion, the fault tested nothing.
func (r *ring) nameReused(ctx context.Context, podID string, slow time.Duration) error {
	r.mu.Lock()
	if r.renaming {
		r.mu.Unlock()
		// The objects are the renamed ring's meanwhile, whose members'
		// records this ring does not read.
		return notInjected(errors.New("a rename of the ring is under way"))
	}
	r.reuses++
	nth := r.reuses
	r.mu.Unlock()

	names := incarnationNames(r.ns, nth, min(max(incarnationsPerMember*(r.live()+1), minIncarnations), maxIncarnations))
	created, err := r.createIncarnations(ctx, names)
	if err != nil {
		return notInjected(err)
	}
	prefix := fmt.Sprintf("%s/inc-%d-", r.ns, nth)
	var running map[string][]string
	_ = poll(ctx, runningBound, func() bool {
		running = working(r.incarnationRuns(prefix), time.Now(), "")
		return len(running) >= len(created)
	})

	slow = max(slow, 0)
	id := r.begin(ctx, faultlog.Entry{Kind: faultlog.NameReused, Replica: podID,
		Note: fmt.Sprintf("slow %s; %d incarnations %s*, %d of them running", slow, len(created), prefix, len(running))})
	joinAt := time.Now()
	m, err := r.add(podID, slow, false)
	if err != nil {
		r.log.Fail(id, err.Error())
		return notInjected(err)
	}
	// No other fault takes the joiner down while its buckets move.
	r.mu.Lock()
	r.busy[podID] = true
	r.mu.Unlock()
	defer r.release(m)
	var joiner string
	if err := poll(ctx, epochBound, func() bool { joiner, err = r.memberName(ctx, m); return err == nil }); err != nil {
		r.log.Fail(id, fmt.Sprintf("the joiner has no Lease after %s", epochBound))
		return notInjected(fmt.Errorf("%s did not join: %w", podID, err))
	}
	joined := time.Since(joinAt)
	var members []string
	if err := poll(ctx, epochBound, func() bool { members = r.epochMembers(ctx); return slices.Contains(members, joiner) }); err != nil {
		r.log.Fail(id, fmt.Sprintf("the epoch does not list %s after %s: %v", joiner, epochBound, members))
		return notInjected(fmt.Errorf("the epoch did not list %s: %w", joiner, err))
	}
	inEpoch := time.Since(joinAt)

	// The names whose buckets the joiner now owns, and who works on them.
	running = working(r.incarnationRuns(prefix), time.Now(), podID)
	var reuses []*reuse
	moving, idle := 0, 0
	for _, name := range names {
		uid, ok := created[name]
		if !ok || sharding.Owner(sharding.ObjectKey(r.ns, name), members) != joiner {
			continue
		}
		moving++
		owners := running[r.ns+"/"+name]
		if len(owners) == 0 {
			idle++
			continue
		}
		reuses = append(reuses, &reuse{name: name, old: uid, owners: owners})
	}
	var wg sync.WaitGroup
	for _, x := range reuses {
		wg.Go(func() { r.reuseName(ctx, x) })
	}
	wg.Wait()
	// Where the new incarnations start: from the records, once all did,
	// and a few beats later, for whatever the predecessors did beside them.
	_ = poll(ctx, startBound, func() bool {
		runs := r.incarnationRuns(prefix)
		for _, x := range reuses {
			if x.new != "" && !startedRun(runs, x.new) {
				return false
			}
		}
		return true
	})
	sleep(ctx, workingWindow)
	runs := r.incarnationRuns(prefix)
	note, workedOn := reuseNote(reuses, runs, podID)
	r.log.End(id, fmt.Sprintf("joined as %s (member %s) after %s, in the epoch after %s; of %d incarnations, %d in buckets moved to it, "+
		"%d of them no longer worked on; %s", m.Actor(), joiner, joined.Round(time.Millisecond), inEpoch.Round(time.Millisecond),
		len(created), moving, idle, note))
	var errs []error
	for _, x := range reuses {
		if x.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", x.name, x.err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if workedOn == 0 {
		return notInjected(fmt.Errorf("no reused name's predecessor was still worked on at its deletion "+
			"(%d of %d incarnations in buckets moved to the joiner, %d reused): the fault tested nothing", moving, len(created), len(reuses)))
	}
	return nil
}

// reuseName deletes the predecessor (by its UID) and creates the name
// again at once, trying every refusalPeriod while it is refused, for up
// to reuseBound.
func (r *ring) reuseName(ctx context.Context, x *reuse) {
	err := fixtures.env.Client.Delete(ctx, newIncarnation(r.ns, x.name), client.Preconditions{UID: &x.old})
	x.deleted = time.Now()
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		x.vanished = true
		return
	}
	if err != nil {
		x.err = fmt.Errorf("delete: %w", err)
		return
	}
	deadline := x.deleted.Add(reuseBound)
	for {
		obj := newIncarnation(r.ns, x.name)
		obj.Object["spec"] = map[string]any{"incarnation": int64(2)}
		err := fixtures.env.Client.Create(ctx, obj)
		if err == nil {
			x.new, x.taken = obj.GetUID(), time.Now()
			return
		}
		if apierrors.IsAlreadyExists(err) {
			x.refusals++
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			x.err = fmt.Errorf("not created again within %s, %d refusals; the last answer: %w", reuseBound, x.refusals, err)
			return
		}
		sleep(ctx, refusalPeriod)
	}
}

// epochMembers are the members that the ring's epoch Lease lists, none
// if it cannot be read.
func (r *ring) epochMembers(ctx context.Context) []string {
	var lease coordinationv1.Lease
	if err := fixtures.env.Client.Get(ctx, client.ObjectKey{Namespace: r.leaseNS, Name: r.names.epochLease}, &lease); err != nil {
		return nil
	}
	return shardring.Published(&lease).Members
}

// reuseNote says what became of the reused names, from their new
// incarnations and the records; it returns how many predecessors were
// still worked on at their deletion.
func reuseNote(reuses []*reuse, runs []incarnationRun, joiner string) (string, int) {
	var reused, vanished, failed, workedOn, refusals, onJoiner, elsewhere, notStarted, beside int
	var longest time.Duration
	var owners []string
	for _, x := range reuses {
		if x.vanished {
			vanished++
			continue
		}
		for _, a := range x.owners {
			if !slices.Contains(owners, a) {
				owners = append(owners, a)
			}
		}
		// The predecessor's last record, by any actor: after the
		// deletion, its old owner still worked on it.
		var oldEnd int64
		for _, run := range runs {
			if run.uid == string(x.old) {
				oldEnd = max(oldEnd, run.to)
			}
		}
		if oldEnd >= x.deleted.UnixNano() {
			workedOn++
		}
		refusals += x.refusals
		if x.new == "" {
			failed++
			continue
		}
		reused++
		longest = max(longest, x.taken.Sub(x.deleted))
		started := false
		for _, run := range runs {
			if run.uid != string(x.new) {
				continue
			}
			if !started {
				if strings.HasPrefix(run.actor, joiner+"/") {
					onJoiner++
				} else {
					elsewhere++
				}
			}
			started = true
			if run.from <= oldEnd {
				beside++
			}
		}
		if !started {
			notStarted++
		}
	}
	slices.Sort(owners)
	if len(owners) == 0 {
		owners = []string{"nobody"}
	}
	return fmt.Sprintf("%d names reused (%d predecessors still worked on at the deletion; their owners when chosen: %s), %d vanished before it, %d not taken again; "+
		"%d refusals (AlreadyExists), the longest wait %s; the new incarnations started on the joiner %d, elsewhere %d, not yet %d; "+
		"%d runs of a new incarnation began before its predecessor's last record",
		reused, workedOn, strings.Join(owners, ", "), vanished, failed, refusals, longest.Round(time.Millisecond), onJoiner, elsewhere, notStarted, beside), workedOn
}

// The note counts a predecessor as worked on when a record of it came
// after its deletion, and a new incarnation as begun beside it when it
// started before that record.
func TestReuseNote(t *testing.T) {
	at := func(ms int64) time.Time { return time.Unix(0, ms*int64(time.Millisecond)) }
	run := func(actor, uid string, from, to int64) incarnationRun {
		return incarnationRun{actor: actor, object: "ns/inc-1-000", uid: uid, from: from * int64(time.Millisecond), to: to * int64(time.Millisecond), ended: true}
	}
	tests := []struct {
		name     string
		reuses   []*reuse
		runs     []incarnationRun
		workedOn int
		note     string
	}{{
		name:     "refused until the old owner was done, then started on the joiner",
		reuses:   []*reuse{{name: "inc-1-000", old: "a", new: "b", owners: []string{"r1/1"}, deleted: at(1000), taken: at(3000), refusals: 20}},
		runs:     []incarnationRun{run("r1/1", "a", 0, 2900), run("joiner/9", "b", 3100, 5000)},
		workedOn: 1,
		note: "1 names reused (1 predecessors still worked on at the deletion; their owners when chosen: r1/1), 0 vanished before it, 0 not taken again; " +
			"20 refusals (AlreadyExists), the longest wait 2s; the new incarnations started on the joiner 1, elsewhere 0, not yet 0; " +
			"0 runs of a new incarnation began before its predecessor's last record",
	}, {
		name:     "taken at once and started beside the predecessor",
		reuses:   []*reuse{{name: "inc-1-000", old: "a", new: "b", owners: []string{"r1/1"}, deleted: at(1000), taken: at(1010)}},
		runs:     []incarnationRun{run("r1/1", "a", 0, 20000), run("joiner/9", "b", 1200, 21000)},
		workedOn: 1,
		note: "1 names reused (1 predecessors still worked on at the deletion; their owners when chosen: r1/1), 0 vanished before it, 0 not taken again; " +
			"0 refusals (AlreadyExists), the longest wait 10ms; the new incarnations started on the joiner 1, elsewhere 0, not yet 0; " +
			"1 runs of a new incarnation began before its predecessor's last record",
	}, {
		name: "done before the deletion, vanished, and never taken again",
		reuses: []*reuse{
			{name: "inc-1-000", old: "a", new: "b", owners: []string{"r1/1"}, deleted: at(1000), taken: at(1010)},
			{name: "inc-1-001", old: "c", vanished: true},
			{name: "inc-1-002", old: "d", owners: []string{"r2/2"}, deleted: at(1000), refusals: 5},
		},
		runs:     []incarnationRun{run("r1/1", "a", 0, 900), run("r2/2", "b", 1200, 2000)},
		workedOn: 0,
		note: "1 names reused (0 predecessors still worked on at the deletion; their owners when chosen: r1/1, r2/2), 1 vanished before it, 1 not taken again; " +
			"5 refusals (AlreadyExists), the longest wait 10ms; the new incarnations started on the joiner 0, elsewhere 1, not yet 0; " +
			"0 runs of a new incarnation began before its predecessor's last record",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			note, workedOn := reuseNote(tt.reuses, tt.runs, "joiner")
			if diff := cmp.Diff(tt.note, note); diff != "" || workedOn != tt.workedOn {
				t.Errorf("worked on %d, want %d; the note -want +got:\n%s", workedOn, tt.workedOn, diff)
			}
		})
	}
}
