package cycle

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/jitter"
)

// throttler delays an object after an unexpected error (the API server
// failing, say), as Kopf does: 1 s, 1 s, 2 s, 3 s, 5 s, ... (the last delay
// repeats), skipping events meanwhile, until a cycle succeeds again. No
// delays: throttling is off, and controller-runtime's backoff applies.
// Each delay gets its jitter (up to half of it more): the objects that one
// outage of the API server failed together come back spread out, not in
// one wave at each step of the sequence, as they would in Kopf.
type throttler struct {
	delays []time.Duration
	jitter jitter.Jitter
}

// after turns a cycle's result and error into the reconcile's, in one
// switch as controller-runtime's reconcileHandler turns those into queue
// operations: a success ends the object's throttling and keeps the
// cycle's requeue; an error without throttling goes to controller-runtime
// (its rate-limited requeue); any other error starts or extends the
// throttling, and the object comes back when it is over.
func (t throttler) after(o Object, now time.Time, result reconcile.Result, err error) (reconcile.Result, error) {
	switch {
	case err == nil:
		if o.Mem.Throttles > 0 {
			o.Local.Info("Throttling is over. Switching back to normal operations.")
			o.Mem.Throttles, o.Mem.ThrottledUntil = 0, time.Time{}
		}
		return result, nil
	case len(t.delays) == 0:
		return result, err
	default:
		delay := t.jitter.Apply(t.delays[min(o.Mem.Throttles, len(t.delays)-1)])
		o.Mem.Throttles++
		o.Mem.ThrottledUntil = now.Add(delay)
		o.Local.Error(err, fmt.Sprintf("Throttling for %s seconds due to an unexpected error: %v", execution.Seconds(delay.Round(logPrecision)), err))
		return reconcile.Result{RequeueAfter: delay}, nil
	}
}
