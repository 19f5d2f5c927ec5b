package bench

import "testing"

// TestShardingSmoke runs BenchmarkSharding's workloads with a few objects
// (all but the takeover, which waits out lease durations), so that they
// cannot rot, and checks what is not a matter of time: every replica
// holds a share, every object is handled once, the objects that move in
// a rebalance are the ones the hashing moves, and a rebalance writes to
// objects at most twice per moved object when a replica joins and once
// when one leaves.
func TestShardingSmoke(t *testing.T) {
	setup(t)
	m := ringMemory(t, 2, 20)
	for _, rep := range m.replicas {
		if rep.objects == 0 || rep.full.HeapInuse == 0 {
			t.Errorf("%s owns %d objects and has %d bytes of heap in use, want a share and a figure", rep.identity, rep.objects, rep.full.HeapInuse)
		}
	}

	tp := ringThroughput(t, 2, 20)
	calls := 0
	for _, n := range tp.calls {
		calls += n
	}
	if calls != tp.objects {
		t.Errorf("the ring's create handlers ran %d times (%v) for %d objects", calls, tp.calls, tp.objects)
	}

	join, leave := ringRebalance(t, 30)
	for _, f := range []struct {
		what     string
		f        rebalanceFigures
		perMoved int
	}{{"join", join, 2}, {"leave", leave, 1}} {
		if f.f.moved != f.f.expected {
			t.Errorf("%s: %d objects moved, the hashing moves %d", f.what, f.f.moved, f.f.expected)
		}
		if writes := landedObjectWrites(f.f.requests); writes > f.perMoved*f.f.moved {
			t.Errorf("%s: %d writes to objects landed for %d moved, want at most %d each: %v", f.what, writes, f.f.moved, f.perMoved, f.f.requests)
		}
	}
}
