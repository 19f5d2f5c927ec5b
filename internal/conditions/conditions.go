// Package conditions derives an object's status.conditions from where the
// handlers of its last cause stand: Ready, and the abnormal-true pair
// Reconciling and Stalled that kstatus (Flux, kpt, Argo CD's generic
// health) reads, each a metav1.Condition. It is pure: the cycle gives it
// the round's progress and the object's status, and it answers with the
// status fields to put into the cycle's patch, merged into the conditions
// that other writers keep there (docs/handlers.md#conditions).
package conditions

import (
	"fmt"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/internal/execution"
)

// The condition types the engine keeps; conditions of other types are
// other writers' and stay as they are.
const (
	Ready       = "Ready"
	Reconciling = "Reconciling"
	Stalled     = "Stalled"
)

// The reasons of the engine's conditions: all three carry the same one,
// where the handlers stand, with the message that tells which handler.
const (
	// ReasonSucceeded: every handler of the cause succeeded (or none was
	// selected).
	ReasonSucceeded = "Succeeded"
	// ReasonInProgress: handlers are pending, none has failed yet.
	ReasonInProgress = "InProgress"
	// ReasonRetrying: a handler failed temporarily and runs again.
	ReasonRetrying = "Retrying"
	// ReasonFailed: a handler failed permanently.
	ReasonFailed = "Failed"
)

// messageLimit is metav1.Condition's limit on a message: a longer one
// (a handler's error can be anything) would make a typed CRD refuse the
// whole status write, results and all.
const messageLimit = 32768

// Handler is where one handler of the cause stands after the round.
type Handler struct {
	ID string
	// Finished: succeeded or failed for good; Failed: failed for good.
	Finished, Failed bool
	// Retries is how many attempts were made; Message the last error's.
	Retries int
	Message string
}

// Progress is where the handlers of the cycle's cause stand after its
// round.
type Progress struct {
	// Title is the cause's, as Kopf's log lines say it ("Creation").
	Title string
	// Handlers are the cause's selected handlers, in the order of their
	// records.
	Handlers []Handler
}

// FromState is the progress of the active handlers of a round's state.
func FromState(st *execution.State, title string) Progress {
	p := Progress{Title: title}
	for _, id := range st.Order {
		h := st.Handlers[id]
		if h == nil || !h.Active {
			continue
		}
		msg := ""
		if h.Message != nil {
			msg = *h.Message
		}
		p.Handlers = append(p.Handlers, Handler{ID: id, Finished: h.Finished(), Failed: h.Failure, Retries: h.Retries, Message: msg})
	}
	return p
}

// Done reports whether every handler is finished: the cause is handled.
func (p Progress) Done() bool {
	for _, h := range p.Handlers {
		if !h.Finished {
			return false
		}
	}
	return true
}

// Derive is the engine's three conditions for the progress, without
// their generation and transition time (Update adds them): Ready True
// only when every handler succeeded; Reconciling True while any is
// pending; Stalled True once any failed for good (with others still
// pending, Reconciling and Stalled are both True, and kstatus says
// InProgress until they finish). The conditions that are not True carry
// Ready's reason and message.
func Derive(p Progress) []metav1.Condition {
	var failed, retrying *Handler
	var pending []string
	succeeded := 0
	for i := range p.Handlers {
		h := &p.Handlers[i]
		switch {
		case h.Failed:
			failed = cmpOr(failed, h)
		case h.Finished:
			succeeded++
		default:
			pending = append(pending, h.ID)
			if h.Retries > 0 {
				retrying = cmpOr(retrying, h)
			}
		}
	}
	// Where the pending handlers stand: Reconciling's, and Ready's
	// unless a handler failed for good.
	progressReason, progressMessage := ReasonInProgress, fmt.Sprintf("%s is in progress: %s pending.", p.Title, strings.Join(pending, ", "))
	if retrying != nil {
		// No count of attempts: the same error again changes nothing,
		// so that a retry writes the status only when its error is new.
		progressReason = ReasonRetrying
		progressMessage = limit(fmt.Sprintf("Handler '%s' failed temporarily and will retry: %s", retrying.ID, retrying.Message))
	}
	reason, message := ReasonSucceeded, fmt.Sprintf("%s is processed: %d succeeded; 0 failed.", p.Title, succeeded)
	switch {
	case failed != nil:
		reason, message = ReasonFailed, limit(fmt.Sprintf("Handler '%s' failed permanently: %s", failed.ID, failed.Message))
	case len(pending) > 0:
		reason, message = progressReason, progressMessage
	}
	ready := condition(Ready, reason == ReasonSucceeded, reason, message)
	reconciling := condition(Reconciling, false, reason, message)
	if len(pending) > 0 {
		reconciling = condition(Reconciling, true, progressReason, progressMessage)
	}
	stalled := condition(Stalled, failed != nil, reason, message)
	return []metav1.Condition{ready, reconciling, stalled}
}

// condition is a condition of the type with the status true or false.
func condition(kind string, isTrue bool, reason, message string) metav1.Condition {
	status := metav1.ConditionFalse
	if isTrue {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: kind, Status: status, Reason: reason, Message: message}
}

// cmpOr is the first of the two that is set.
func cmpOr(first, next *Handler) *Handler {
	if first != nil {
		return first
	}
	return next
}

// limit cuts a message to metav1.Condition's limit, on a rune boundary.
func limit(s string) string {
	if len(s) <= messageLimit {
		return s
	}
	const ellipsis = "..."
	cut := messageLimit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
