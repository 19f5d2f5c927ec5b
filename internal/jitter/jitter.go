// Package jitter spreads retries that would otherwise come in lockstep.
// When the API server fails for a moment, every object and every replica
// that it failed meets the error at the same moment; retried on one fixed
// schedule, they all come back at the same moments too, and an API server
// that is just recovering meets them as one wave after another. A delay
// with jitter gets a random extra of up to a fraction of itself, so that
// the retries spread out; it is never shorter than the delay asked for.
package jitter

import (
	"math"
	"math/rand/v2"
	"time"
)

// Fraction is the most that the engine's retries add to a delay: half of
// it. A retry after 1 s comes between 1 s and 1.5 s later; retries of
// many objects spread over half a second at the shortest delay, and over
// more as the delays grow, while a delay that the operator relies on (a
// renewal within its deadline) grows by a bounded, known amount.
const Fraction = 0.5

// Source returns random numbers in [0, 1). Tests give a fixed sequence.
type Source func() float64

// Jitter adds a random extra of up to Fraction of a delay to the delay.
// Its zero value adds nothing.
type Jitter struct {
	// Fraction is the most extra, as a part of the delay.
	Fraction float64
	// Rand is the random source; nil is math/rand/v2's, which is safe for
	// concurrent use.
	Rand Source
}

// Default is the jitter of the engine's retries: up to Fraction extra, from
// math/rand/v2.
func Default() Jitter { return Jitter{Fraction: Fraction} }

// Apply returns d with its random extra. A delay of zero or less stays as
// it is (it means "now"), and so does any delay when the fraction is zero.
func (j Jitter) Apply(d time.Duration) time.Duration {
	if d <= 0 || j.Fraction <= 0 {
		return d
	}
	r := j.Rand
	if r == nil {
		r = rand.Float64
	}
	extra := float64(d) * j.Fraction * r()
	if extra >= float64(math.MaxInt64-d) {
		return math.MaxInt64
	}
	return d + time.Duration(extra)
}

// RateLimiter is client-go's workqueue.TypedRateLimiter by its methods:
// it decides how long an item waits before its next retry. (This package
// does not import client-go; any of its rate limiters fits.)
type RateLimiter[T comparable] interface {
	// When is how long the item waits now; it counts a retry.
	When(item T) time.Duration
	// Forget ends the item's retries: its next failure starts afresh.
	Forget(item T)
	// NumRequeues is how many times the item has been retried.
	NumRequeues(item T) int
}

// Limiter is base with its delays jittered: the per-item backoff of a
// workqueue (controller-runtime's default, 5 ms doubling up to 1000 s,
// has none) spread out, so that items that failed together are not
// retried together.
func Limiter[T comparable](base RateLimiter[T], j Jitter) RateLimiter[T] {
	return limiter[T]{base: base, jitter: j}
}

type limiter[T comparable] struct {
	base   RateLimiter[T]
	jitter Jitter
}

func (l limiter[T]) When(item T) time.Duration { return l.jitter.Apply(l.base.When(item)) }
func (l limiter[T]) Forget(item T)             { l.base.Forget(item) }
func (l limiter[T]) NumRequeues(item T) int    { return l.base.NumRequeues(item) }
