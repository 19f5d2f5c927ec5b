package jitter

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sequence is a random source that returns the values in turn.
func sequence(values ...float64) Source {
	i := 0
	return func() float64 {
		v := values[i%len(values)]
		i++
		return v
	}
}

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name   string
		jitter Jitter
		delays []time.Duration
		want   []time.Duration
	}{
		{name: "no randomness: the delay itself", jitter: Jitter{Fraction: 0.5, Rand: sequence(0)},
			delays: []time.Duration{time.Second, 3 * time.Second}, want: []time.Duration{time.Second, 3 * time.Second}},
		{name: "the extra is the random part of the fraction", jitter: Jitter{Fraction: 0.5, Rand: sequence(0.5, 0.25, 0.999)},
			delays: []time.Duration{time.Second, 2 * time.Second, 10 * time.Second},
			want:   []time.Duration{1250 * time.Millisecond, 2250 * time.Millisecond, 14995 * time.Millisecond}},
		{name: "the engine's fraction: up to half", jitter: Jitter{Fraction: Fraction, Rand: sequence(0.999999)},
			delays: []time.Duration{time.Second}, want: []time.Duration{1499999500 * time.Nanosecond}},
		{name: "now stays now", jitter: Jitter{Fraction: 0.5, Rand: sequence(0.9)},
			delays: []time.Duration{0, -time.Second}, want: []time.Duration{0, -time.Second}},
		{name: "the zero value adds nothing", jitter: Jitter{},
			delays: []time.Duration{time.Second}, want: []time.Duration{time.Second}},
		{name: "no overflow past the longest duration", jitter: Jitter{Fraction: 0.5, Rand: sequence(0.9)},
			delays: []time.Duration{math.MaxInt64 - time.Second}, want: []time.Duration{math.MaxInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			for _, d := range tc.delays {
				got = append(got, tc.jitter.Apply(d))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("delays -want +got:\n%s", diff)
			}
		})
	}
}

// The default source stays within [d, d+d/2), whatever it draws.
func TestDefaultBounds(t *testing.T) {
	j := Default()
	for range 1000 {
		if got := j.Apply(time.Second); got < time.Second || got >= 1500*time.Millisecond {
			t.Fatalf("Apply(1s) = %s, want within [1s, 1.5s)", got)
		}
	}
}

// doubling is a per-item backoff without jitter, as workqueue's
// exponential one: 10 ms doubling per failure.
type doubling struct{ failures map[string]int }

func (d *doubling) When(item string) time.Duration {
	n := d.failures[item]
	d.failures[item]++
	return 10 * time.Millisecond << n
}
func (d *doubling) Forget(item string)          { delete(d.failures, item) }
func (d *doubling) NumRequeues(item string) int { return d.failures[item] }

// Two items that fail together get the base's delays, each with an extra
// of its own; forgetting one starts its backoff afresh.
func TestLimiter(t *testing.T) {
	base := &doubling{failures: map[string]int{}}
	l := Limiter[string](base, Jitter{Fraction: 0.5, Rand: sequence(0.1, 0.9)})
	got := []time.Duration{l.When("a"), l.When("b"), l.When("a"), l.When("b")}
	want := []time.Duration{10500 * time.Microsecond, 14500 * time.Microsecond, 21 * time.Millisecond, 29 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays -want +got:\n%s", diff)
	}
	if n := l.NumRequeues("a"); n != 2 {
		t.Errorf("NumRequeues(a) = %d, want the base's 2", n)
	}
	l.Forget("a")
	if n := l.NumRequeues("a"); n != 0 {
		t.Errorf("after Forget, NumRequeues(a) = %d, want 0", n)
	}
	if d := l.When("a"); d != 10500*time.Microsecond {
		t.Errorf("after Forget, When(a) = %s, want the first delay with its extra", d)
	}
}
