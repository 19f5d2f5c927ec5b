package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/stats"
)

// ringName is the shard ring of every sharding workload; each workload
// has a namespace, and so Leases, of its own.
const ringName = "bench"

// ringView follows, for the observer and under its lock, where each
// object stands in a shard ring: its owner label and handover request,
// how many objects moved, and how many are not yet where the hashing
// over the expected members puts them.
type ringView struct {
	label, next string
	owner       map[string]string // by object name; "" if unowned
	uid         map[string]string
	asked       map[string]bool // a handover request is pending
	byOwner     map[string]int
	pending     int
	// moved counts owner labels changed from one member to another;
	// assigned counts owner labels set where there was none, and
	// lastAssigned is when the latest of them was seen.
	moved, assigned int
	lastAssigned    time.Time
	// live are the members the objects are expected among (nil: none
	// expected yet); placed tells which objects are where the hashing
	// over them puts them, and misplaced counts the others.
	live      []string
	placed    map[string]bool
	misplaced int
}

func newRingView(ns, ringName string) *ringView {
	keys := ring.KeysOf(ns, ringName)
	return &ringView{label: keys.Owner, next: keys.Next, owner: map[string]string{},
		uid: map[string]string{}, asked: map[string]bool{}, byOwner: map[string]int{}, placed: map[string]bool{}}
}

// seen records an object's owner and handover request as an event shows
// them.
func (v *ringView) seen(e *kex.KopfExample) {
	name, now := e.Name, e.Labels[v.label]
	prev, known := v.owner[name]
	switch {
	case known && prev != "" && now != "" && prev != now:
		v.moved++
	case (!known || prev == "") && now != "":
		v.assigned++
		v.lastAssigned = time.Now()
	}
	if known {
		v.byOwner[prev]--
	}
	v.byOwner[now]++
	v.owner[name], v.uid[name] = now, sharding.ObjectKey(e.Namespace, e.Name)
	if asked := e.Annotations[v.next] != ""; asked != v.asked[name] {
		v.asked[name] = asked
		if asked {
			v.pending++
		} else {
			v.pending--
		}
	}
	v.place(name)
}

// gone forgets a deleted object.
func (v *ringView) gone(name string) {
	if owner, known := v.owner[name]; known {
		v.byOwner[owner]--
		delete(v.owner, name)
	}
	if v.asked[name] {
		v.pending--
	}
	if v.live != nil && !v.placed[name] {
		v.misplaced--
	}
	delete(v.asked, name)
	delete(v.placed, name)
	delete(v.uid, name)
}

// place checks whether an object is where the hashing puts it.
func (v *ringView) place(name string) {
	if v.live == nil {
		return
	}
	was, known := v.placed[name]
	now := v.owner[name] == sharding.Owner(v.uid[name], v.live)
	v.placed[name] = now
	switch {
	case !known && !now, known && was && !now:
		v.misplaced++
	case known && !was && now:
		v.misplaced--
	}
}

// expect sets the members the objects should be placed among, and
// returns how many objects are not there yet.
func (o *observer) expect(live []string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := o.ring
	v.live, v.placed, v.misplaced = slices.Clone(live), map[string]bool{}, 0
	for name := range v.owner {
		v.place(name)
	}
	o.check()
	return v.misplaced
}

// ringFigures are the observer's counts of a ring at one moment.
type ringFigures struct {
	moved, assigned int
	lastAssigned    time.Time
}

func (o *observer) ringNow() ringFigures {
	o.mu.Lock()
	defer o.mu.Unlock()
	return ringFigures{moved: o.ring.moved, assigned: o.ring.assigned, lastAssigned: o.ring.lastAssigned}
}

// hashedTo counts the objects that hashing among live puts on member.
func (o *observer) hashedTo(live []string, member string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, uid := range o.ring.uid {
		if sharding.Owner(uid, live) == member {
			n++
		}
	}
	return n
}

// ownedBy counts the objects that a member owns.
func (o *observer) ownedBy(member string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ring.byOwner[member]
}

// placedAll is the condition that n objects are where the hashing over
// the expected members puts them, with no handover pending.
func placedAll(n int) func(o *observer) bool {
	return func(o *observer) bool {
		return o.ring.live != nil && len(o.ring.owner) >= n && o.ring.misplaced == 0 && o.ring.pending == 0
	}
}

// benchRing is a ring of the quick start's replicas, as processes, in
// one namespace.
type benchRing struct {
	tb     testing.TB
	ns     string
	driver client.Client
	// extra are more flags for every replica.
	extra    []string
	replicas []*replica
	started  int
}

// replica is one member of a benchRing.
type replica struct {
	identity, member string
	op               *operatorProcess
}

func newBenchRing(tb testing.TB, ns string, extra ...string) *benchRing {
	return &benchRing{tb: tb, ns: ns, driver: newClient(tb, nil), extra: extra}
}

// start starts n more replicas and waits until the assigner counts every
// running replica as a member.
func (r *benchRing) start(n int) []*replica {
	r.tb.Helper()
	var added []*replica
	for range n {
		r.started++
		id := identityOf(r.started)
		args := append([]string{"--shard-ring", ringName, "--identity", id}, r.extra...)
		if *assignerWorkers > 0 {
			args = append(args, "--assigner-workers", strconv.Itoa(*assignerWorkers))
		}
		rep := &replica{identity: id, op: startOperator(r.tb, variantForKind, r.ns, args...)}
		r.replicas = append(r.replicas, rep)
		added = append(added, rep)
	}
	r.learnMembers(added)
	r.waitMembers()
	return added
}

// learnMembers waits until every replica has joined, and learns its
// member name from its Lease: a name is drawn when a replica joins.
func (r *benchRing) learnMembers(reps []*replica) {
	r.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		members, err := handlers.ShardMembers(context.Background(), r.driver, r.ns, ringName)
		if err != nil {
			r.tb.Fatal(err)
		}
		missing := 0
		for _, rep := range reps {
			for member, identity := range members {
				if identity == rep.identity {
					rep.member = member
				}
			}
			if rep.member == "" {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.tb.Fatalf("%d replicas did not join the ring within a minute", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// identityOf is the identity of the k-th replica a ring starts.
func identityOf(k int) string { return fmt.Sprintf("replica-%d", k) }

// members are the member names of the running replicas, sorted.
func (r *benchRing) members() []string {
	var ms []string
	for _, rep := range r.replicas {
		ms = append(ms, rep.member)
	}
	slices.Sort(ms)
	return ms
}

// remove forgets a replica that was stopped or killed.
func (r *benchRing) remove(rep *replica) {
	r.replicas = slices.DeleteFunc(r.replicas, func(x *replica) bool { return x == rep })
}

// assigner is the replica that holds the assigner's Lease; nil if none
// of the running ones does.
func (r *benchRing) assigner() *replica {
	r.tb.Helper()
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: r.ns, Name: ring.AssignerLease(ringName)}
	if err := r.driver.Get(context.Background(), key, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return nil
	}
	for _, rep := range r.replicas {
		if rep.identity == *lease.Spec.HolderIdentity {
			return rep
		}
	}
	return nil
}

// membersLine starts the assigner's log line that lists the live members.
const membersLine = "The ring's members changed."

// waitMembers waits until the assigner's latest word on the members is
// that every running replica is one: only then are new objects placed
// among all of them at once.
func (r *benchRing) waitMembers() {
	r.tb.Helper()
	want := r.members()
	deadline := time.Now().Add(time.Minute)
	var last []string
	for {
		if a := r.assigner(); a != nil {
			if last = lastMembers(a.op.proc.Output()); slices.Equal(last, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			r.tb.Fatalf("the ring's assigner did not count %v as its members within a minute; it last said %v", want, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastMembers are the members of the last "members changed" line in a
// replica's output (the runner's console log: the message, a tab, then
// the values as JSON), sorted.
func lastMembers(output string) []string {
	i := strings.LastIndex(output, membersLine)
	if i < 0 {
		return nil
	}
	line, _, _ := strings.Cut(output[i+len(membersLine):], "\n")
	var values struct {
		Live []string `json:"live"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &values); err != nil {
		return nil
	}
	slices.Sort(values.Live)
	return values.Live
}

// snapshot reads every running replica's stats, by identity; gc collects
// garbage first.
func (r *benchRing) snapshot(gc bool) map[string]stats.Stats {
	r.tb.Helper()
	query := ""
	if gc {
		query = "gc=1"
	}
	out := map[string]stats.Stats{}
	for _, rep := range r.replicas {
		out[rep.identity] = rep.op.read(r.tb, query)
	}
	return out
}

// settle waits until every running replica is idle.
func (r *benchRing) settle() {
	r.tb.Helper()
	for _, rep := range r.replicas {
		rep.op.settle(r.tb)
	}
}

// stopAll stops the running replicas gracefully, one after the other.
func (r *benchRing) stopAll() {
	r.tb.Helper()
	for _, rep := range slices.Clone(r.replicas) {
		rep.op.stop(r.tb)
		r.remove(rep)
	}
}

// killAll kills the running replicas with SIGKILL: nothing of theirs is
// measured any more, and nobody moves objects between them.
func (r *benchRing) killAll() {
	for _, rep := range r.replicas {
		rep.op.proc.Kill()
	}
	r.replicas = nil
}

// finalStats are the stats that a stopped operator printed as it exited.
func (op *operatorProcess) finalStats(tb testing.TB) stats.Stats {
	tb.Helper()
	const prefix = "final stats "
	out := op.proc.Output()
	i := strings.LastIndex(out, prefix)
	if i < 0 {
		tb.Fatalf("the %s operator printed no final stats:\n%s", op.variant, op.tail())
	}
	line, _, _ := strings.Cut(out[i+len(prefix):], "\n")
	var s stats.Stats
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		tb.Fatalf("decode the %s operator's final stats: %v", op.variant, err)
	}
	return s
}

// requestsBetween sums every replica's requests between two snapshots;
// a replica absent from before counts from its start.
func requestsBetween(before, after map[string]stats.Stats) map[string]int {
	out := map[string]int{}
	for id, a := range after {
		for key, n := range subtract(a.Requests, before[id].Requests) {
			out[key] += n
		}
	}
	return out
}

// deleteAll deletes the namespace's n objects while replicas run, and
// waits until they are gone: their delete handlers run and release them.
func deleteAll(tb testing.TB, driver client.Client, obs *observer, ns string, n int) {
	tb.Helper()
	gone := obs.goneNow()
	if err := forEach(n, bulkWorkers, func(i int) error {
		return client.IgnoreNotFound(driver.Delete(context.Background(), kex.New(ns, i)))
	}); err != nil {
		tb.Fatalf("delete the objects: %v", err)
	}
	obs.await(tb, "all are gone", phaseTimeout, goneAll(gone+n))
}

// dropAll deletes the namespace's n objects with no operator running: it
// removes their finalizers itself.
func dropAll(tb testing.TB, driver client.Client, obs *observer, ns string, n int) {
	tb.Helper()
	gone := obs.goneNow()
	if err := forEach(n, bulkWorkers, func(i int) error {
		if err := mergePatch(driver, kex.New(ns, i), `{"metadata":{"finalizers":null}}`); err != nil {
			return client.IgnoreNotFound(err)
		}
		return client.IgnoreNotFound(driver.Delete(context.Background(), kex.New(ns, i)))
	}); err != nil {
		tb.Fatalf("delete the objects: %v", err)
	}
	obs.await(tb, "all are gone", phaseTimeout, goneAll(gone+n))
}

// goneNow is how many objects the observer has seen go so far.
func (o *observer) goneNow() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gone
}
