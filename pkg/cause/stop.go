package cause

import "strings"

// StopReason says why a daemon or timer is asked to stop. Reasons combine:
// a deleted object's stubborn daemon ends up
// RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED. It is the cause of a
// daemon's context (context.Cause), and errors.Is matches each flag.
type StopReason uint

// The reasons, with Kopf's names.
const (
	StopDone StopReason = 1 << iota
	StopFiltersMismatch
	StopResourceDeleted
	StopOperatorPausing
	StopOperatorExiting
	StopSignalled
	StopCancelled
	StopAbandoned
)

var reasonNames = []struct {
	flag StopReason
	name string
}{
	{StopDone, "DONE"},
	{StopFiltersMismatch, "FILTERS_MISMATCH"},
	{StopResourceDeleted, "RESOURCE_DELETED"},
	{StopOperatorPausing, "OPERATOR_PAUSING"},
	{StopOperatorExiting, "OPERATOR_EXITING"},
	{StopSignalled, "DAEMON_SIGNALLED"},
	{StopCancelled, "DAEMON_CANCELLED"},
	{StopAbandoned, "DAEMON_ABANDONED"},
}

// String joins the flags' names with "|", as Kopf prints them.
func (r StopReason) String() string {
	var names []string
	for _, n := range reasonNames {
		if r&n.flag != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "NONE"
	}
	return strings.Join(names, "|")
}

// Error makes a reason usable as a context's cause.
func (r StopReason) Error() string { return "stopped: " + r.String() }

// Is reports whether the reason includes all flags of the target reason.
func (r StopReason) Is(target error) bool {
	t, ok := target.(StopReason)
	return ok && t != 0 && r&t == t
}
