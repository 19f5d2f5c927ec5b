// Package daemons runs the per-object background handlers, daemons and
// timers, under a supervisor that owns every goroutine it starts: it
// spawns them when objects match, stops them politely and then by force
// when objects are deleted, stop matching, or the operator pauses or exits,
// and tells, while the operator stops, what it is still waiting for.
package daemons

import "github.com/kopf-go/kopf/pkg/cause"

// StopReason says why a daemon or timer is asked to stop (the public
// cause.StopReason, which the supervisor sets).
type StopReason = cause.StopReason

// The reasons, with Kopf's names.
const (
	StopDone            = cause.StopDone
	StopFiltersMismatch = cause.StopFiltersMismatch
	StopResourceDeleted = cause.StopResourceDeleted
	StopOperatorPausing = cause.StopOperatorPausing
	StopOperatorExiting = cause.StopOperatorExiting
	StopSignalled       = cause.StopSignalled
	StopCancelled       = cause.StopCancelled
	StopAbandoned       = cause.StopAbandoned
)
