package bench

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Over an even number of rounds, every variant runs at the same mean
// position in the lifecycle's rounds, and every round runs every variant.
func TestRoundOrderBalancesPositions(t *testing.T) {
	variants := []string{"a", "b", "c", "d", "e", "f"}
	for _, rounds := range []int{2, 4, 6} {
		sums := map[string]int{}
		for round := range rounds {
			order := roundOrder(variants, round)
			sorted := slices.Sorted(slices.Values(order))
			if diff := cmp.Diff(variants, sorted); diff != "" {
				t.Fatalf("round %d runs %v, not every variant once (-want +got):\n%s", round, order, diff)
			}
			for pos, v := range order {
				sums[v] += pos
			}
		}
		want := rounds * (len(variants) - 1) / 2
		for _, v := range variants {
			if sums[v] != want {
				t.Errorf("over %d rounds, %s's positions sum to %d, want %d: %v", rounds, v, sums[v], want, sums)
			}
		}
	}
	if diff := cmp.Diff([]string{"b", "c", "a"}, roundOrder([]string{"a", "b", "c"}, 2)); diff != "" {
		t.Errorf("the third round is the first rotated by one (-want +got):\n%s", diff)
	}
}
