package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/test/faults/activity"
)

// beat is the heartbeat's period: the checker sees a run's activity to
// within it.
const beat = 50 * time.Millisecond

// probe records the runs of one process.
type probe struct {
	log   *activity.Log
	actor string
	slow  time.Duration
	runs  atomic.Int64
}

// run is one call of a handler or daemon.
type run struct {
	p    *probe
	base activity.Record
}

// begin records the start of a run.
func (p *probe) begin(obj *unstructured.Unstructured, what string) *run {
	r := &run{p: p, base: activity.Record{Actor: p.actor, Object: obj.GetNamespace() + "/" + obj.GetName(),
		UID: string(obj.GetUID()), What: what, Run: p.runs.Add(1)}}
	r.record(activity.Start, false)
	return r
}

// result is what a completed run returns: its actor (as its records name
// it) and its number, so that every result is new.
func (r *run) result() map[string]any {
	return map[string]any{activity.ResultActor: r.base.Actor, activity.ResultRun: r.base.Run}
}

// record appends one record, stamped now. A record that cannot be written
// is said on stderr: the run goes on, as the library would let it.
func (r *run) record(event string, done bool) {
	rec := r.base
	rec.Event, rec.At, rec.Done = event, time.Now().UnixNano(), done
	if err := r.p.log.Write(rec); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
	}
}

// work beats until d has passed (d = 0: forever) and records the end
// with done. If ctx is cancelled first, it beats on for the probe's
// slowness, records the end, and returns false; ignoring the stop, it
// never looks at ctx.
func (r *run) work(ctx context.Context, d time.Duration, ignoreStop bool) bool {
	tick := time.NewTicker(beat)
	defer tick.Stop()
	var finished <-chan time.Time
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		finished = timer.C
	}
	stop := ctx.Done()
	if ignoreStop {
		stop = nil
	}
	for {
		select {
		case <-tick.C:
			r.record(activity.Beat, false)
		case <-finished:
			r.record(activity.End, true)
			return true
		case <-stop:
			r.linger(tick.C)
			r.record(activity.End, false)
			return false
		}
	}
}

// linger beats on for the slowness: a handler that honours its
// cancellation late, but within the margin the library asks for.
func (r *run) linger(tick <-chan time.Time) {
	if r.p.slow <= 0 {
		return
	}
	timer := time.NewTimer(r.p.slow)
	defer timer.Stop()
	for {
		select {
		case <-tick:
			r.record(activity.Beat, false)
		case <-timer.C:
			return
		}
	}
}
