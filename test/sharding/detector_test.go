package sharding

import (
	"fmt"
	"sync"
)

// detector records, per object, which replicas run its handlers, daemons
// and timers at every moment, and every moment when two replicas did so
// at once: the overlaps that the ring must never allow. It also counts
// what the tests check afterwards.
type detector struct {
	mu sync.Mutex
	// running counts executions per object and replica.
	running  map[string]map[string]int
	overlaps []string
	// created counts successful create handlers per object, by replica.
	created map[string][]string
	// daemons counts running daemons per object and replica.
	daemons map[string]map[string]int
	// handled is the last spec.field each object's update or create
	// handler handled.
	handled map[string]string
	// deleted counts the delete handlers that succeeded, per object.
	deleted map[string]int
}

func newDetector() *detector {
	return &detector{running: map[string]map[string]int{}, created: map[string][]string{},
		daemons: map[string]map[string]int{}, handled: map[string]string{}, deleted: map[string]int{}}
}

// enter records that an execution of what starts on replica for obj,
// and returns its end.
func (d *detector) enter(obj, replica, what string) (leave func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for other, n := range d.running[obj] {
		if other != replica && n > 0 {
			d.overlaps = append(d.overlaps, fmt.Sprintf("%s of %s started on %s while %d ran on %s", what, obj, replica, n, other))
		}
	}
	if d.running[obj] == nil {
		d.running[obj] = map[string]int{}
	}
	d.running[obj][replica]++
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.running[obj][replica]--
	}
}

func (d *detector) daemon(obj, replica string, delta int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.daemons[obj] == nil {
		d.daemons[obj] = map[string]int{}
	}
	d.daemons[obj][replica] += delta
}

func (d *detector) create(obj, replica, field string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.created[obj] = append(d.created[obj], replica)
	d.handled[obj] = field
}

func (d *detector) update(obj, field string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handled[obj] = field
}

func (d *detector) delete(obj string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted[obj]++
}

// daemonHosts are the replicas that run a daemon of obj now.
func (d *detector) daemonHosts(obj string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var hosts []string
	for replica, n := range d.daemons[obj] {
		for range n {
			hosts = append(hosts, replica)
		}
	}
	return hosts
}

func (d *detector) creates(obj string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.created[obj]...)
}

func (d *detector) lastHandled(obj string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.handled[obj]
}

func (d *detector) deletions(obj string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deleted[obj]
}

func (d *detector) overlapping() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.overlaps...)
}
