package sharding

import "time"

// Tenure is a member's hold on its Lease as the member itself counts it,
// by its own clock, from the moment it sent its last successful renewal:
// every observer sees that renewal later than it was sent, so no observer
// can count the member dead before Renewed plus the lease duration.
type Tenure struct {
	// Renewed is when the last successful renewal was sent (the start of
	// the request, not its answer).
	Renewed time.Time
	// RenewDeadline and LeaseDuration are the member's settings.
	RenewDeadline, LeaseDuration time.Duration
}

// FenceAt is when the member must have stopped handling objects unless it
// renews before: the renew deadline after Renewed. Others may count it
// dead no earlier than a lease duration after Renewed, so the difference
// (the margin) is the time its handlers and daemons have to honour the
// cancellation.
func (t Tenure) FenceAt() time.Time { return t.Renewed.Add(t.RenewDeadline) }

// WritableUntil is when the member's writes to objects must have ended:
// from then on another member may have taken its objects over.
func (t Tenure) WritableUntil() time.Time { return t.Renewed.Add(t.LeaseDuration) }

// Holds reports whether the member still holds its objects at now: before
// the fence. A process resumed after a pause longer than the deadline
// learns from this, before its timers have run, that it holds nothing.
func (t Tenure) Holds(now time.Time) bool { return !t.Renewed.IsZero() && now.Before(t.FenceAt()) }
