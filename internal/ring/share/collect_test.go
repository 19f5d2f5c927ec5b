package share

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

// A silent member makes the replica collect garbage at once; silences
// within a renew period of the last collection share it, and a later one
// collects again.
func TestCollectAheadOncePerPeriod(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(shareT0)
	c := newCollectAhead(clk, 5*time.Second, logr.Discard())
	collected := 0
	c.collect = func() { collected++ }
	for _, step := range []struct {
		after  time.Duration // since the previous step
		member string
		want   int
	}{
		{0, "a", 1},
		{time.Second, "b", 1},
		{3 * time.Second, "a", 1},
		{time.Second, "c", 2},
		{4 * time.Second, "c", 2},
		{6 * time.Second, "a", 3},
	} {
		clk.SetTime(clk.Now().Add(step.after))
		c.silent(step.member)
		if collected != step.want {
			t.Fatalf("after %s silent at %s: %d collections, want %d", step.member, clk.Now().Sub(shareT0), collected, step.want)
		}
	}
}
