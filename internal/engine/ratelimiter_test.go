package engine

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The engine's controllers retry a failing object on controller-runtime's
// per-item backoff with jitter: two objects that failed together are
// retried at different moments, each at least at the backoff's delay.
func TestJitteredRateLimiter(t *testing.T) {
	for _, priorityQueue := range []bool{true, false} {
		t.Run(fmt.Sprint("priority queue ", priorityQueue), func(t *testing.T) {
			l := jitteredRateLimiter(priorityQueue)
			a, b := reconcile.Request{}, reconcile.Request{}
			a.Name, b.Name = "a", "b"
			var distinct bool
			for i := range 20 {
				base := min(5*time.Millisecond<<i, 1000*time.Second) // the backoff's cap
				da, db := l.When(a), l.When(b)
				for _, d := range []time.Duration{da, db} {
					if d < base || d >= base*3/2 {
						t.Fatalf("failure %d: delay %s, want within [%s, %s)", i+1, d, base, base*3/2)
					}
				}
				distinct = distinct || da != db
			}
			if !distinct {
				t.Error("twenty delays of two objects were all equal: no jitter")
			}
		})
	}
}
