package cycle

import (
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// consistencyWait returns how long to wait for the cache to catch up with
// this process's last write (a cycle's, or a daemon's or timer's), zero
// when it has (or the wait is over).
func (r *Reconciler) consistencyWait(o Object, now time.Time) time.Duration {
	if v := o.Mem.TakeDaemonWrite(); v != nil && (o.Mem.ExpectedVersion == "" || versionReached(*v, o.Mem.ExpectedVersion)) {
		o.Mem.ExpectedVersion = *v
		o.Mem.ConsistencyDeadline = now.Add(r.s.ConsistencyTimeout)
	}
	if o.Mem.ExpectedVersion == "" || r.s.ConsistencyTimeout < 0 {
		return 0
	}
	if versionReached(o.Obj.GetResourceVersion(), o.Mem.ExpectedVersion) {
		o.Mem.ExpectedVersion = ""
		return 0
	}
	if left := o.Mem.ConsistencyDeadline.Sub(now); left > 0 {
		return left
	}
	o.Local.Info("The cache did not catch up with this operator's last write in time; proceeding with what it has.",
		"resourceVersion", o.Obj.GetResourceVersion(), "expected", o.Mem.ExpectedVersion,
		"timeout", r.s.ConsistencyTimeout.String())
	o.Mem.ExpectedVersion = ""
	return 0
}

// versionReached reports whether the cached object's resourceVersion is at
// least the expected one. Versions from one API server compare as decimal
// integers (Kubernetes 1.35+ guarantees it; apimachinery's
// resourceversion compares them); anything else is only ever "reached" by
// equality, and the consistency timeout covers the rest.
func versionReached(cached, expected string) bool {
	cmp, err := resourceversion.CompareResourceVersion(cached, expected)
	if err != nil {
		return cached == expected
	}
	return cmp >= 0
}
