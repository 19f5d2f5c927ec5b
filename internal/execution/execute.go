package execution

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/pkg/fields"
)

// Handler is what execution needs to know about a handler: its identity
// and its limits.
type Handler struct {
	ID string
	// Title names the handler kind in log lines: "Handler", "Daemon", ...
	Title string
	// Errors is the errors mode; ErrorsDefault takes the caller's default.
	Errors ErrorsMode
	// Timeout limits the time since the first attempt; zero: no limit. It
	// is also the deadline of the handler's context.
	Timeout time.Duration
	// Retries limits the number of attempts in total; zero: no limit.
	Retries int
	// Backoff is the delay after an arbitrary error; nil: the default.
	Backoff *time.Duration
	// Param is the value the handler was registered with (Kopf's param=),
	// handed to it in its cause: one function registered several times.
	Param any
}

// String renders the handler as Kopf's log lines do: Handler 'create_fn'.
func (h Handler) String() string {
	title := h.Title
	if title == "" {
		title = "Handler"
	}
	return fmt.Sprintf("%s '%s'", title, h.ID)
}

// Outcome is the result of one attempt.
type Outcome struct {
	// Final: the handler is done for this cause, successfully or not.
	Final bool
	// Err is the failure, nil on success (including an ignored error).
	Err error
	// Delay is when to try again, for non-final outcomes.
	Delay *time.Duration
	// Result is what a successful handler returned.
	Result any
	// Cancelled: the handler gave up because its context was cancelled
	// (the operator or the daemon is stopping). It is neither a success nor
	// a failure: the attempt does not count.
	Cancelled bool
	// Subrefs are the ids of the handler's sub-handlers, of all depths.
	Subrefs []string
	// Ignored: the handler failed with an arbitrary error that its errors
	// mode ignores; the outcome is final and counts as a success, but
	// metrics tell it apart.
	Ignored bool
	// NotCalled: the handler's timeout or retries were used up before the
	// attempt, so its function was not called (and took no time).
	NotCalled bool
	// Panic is the handler's panic, if it panicked: also when its errors
	// mode ignores the failure (Err is nil then), so that the caller counts
	// every panic.
	Panic *contain.Panic
}

// Defaults are the settings that apply to handlers that set nothing.
type Defaults struct {
	Errors  ErrorsMode
	Backoff time.Duration
}

// Execute runs one attempt of a handler and turns whatever happens into an
// outcome and Kopf's log line. Handler panics are recovered and treated as
// arbitrary errors (*contain.Panic), logged with their stack, and given in
// the outcome's Panic. The limits are checked strictly before the attempt
// and with a look-ahead after a failure, as Kopf does, so "Retries: 3"
// means three attempts in total.
func Execute(ctx context.Context, h *Handler, st *HandlerState, now time.Time, defaults Defaults, call func(context.Context) (any, error)) Outcome {
	// This frame stays on the stack while a daemon runs for hours, so it is
	// kept small: the checks and the interpretation live in functions of
	// their own. (A goroutine's stack shrinks only if little of it is used.)
	if stop, ok := checkLimits(ctx, h, st, now); !ok {
		return stop
	}
	callCtx, cancel := handlerContext(ctx, h, st)
	// Deferred: a panic that unwinds the whole cycle (contain.Unwind, a
	// storage's in a sub-handler's round) passes through here.
	defer cancel()
	callCtx, span := tracing.Attempt(callCtx, h.Title, h.ID, st.Retries)
	result, err := contain.Result(func() (any, error) { return call(callCtx) })
	outcome := interpret(ctx, h, st, now, defaults, result, err)
	if p, ok := err.(*contain.Panic); ok {
		outcome.Panic = p
	}
	endAttempt(span, outcome)
	return outcome
}

// endAttempt ends the attempt's span with what became of it.
//
//go:noinline
func endAttempt(span tracing.Span, o Outcome) {
	if !span.Recording() {
		span.End(nil)
		return
	}
	err, word := o.Err, tracing.OutcomeTemporary
	switch {
	case o.Panic != nil:
		err, word = o.Panic, tracing.OutcomePanic
	case o.Cancelled:
		word = tracing.OutcomeCancelled
	case o.Err == nil:
		word = tracing.OutcomeSuccess
	case o.Final:
		word = tracing.OutcomePermanent
	}
	span.EndAttempt(word, string(Classify(o)), err)
}

// PlainResult is a handler's return with its result made of plain JSON
// values (fields.Normalize). Called inside the function that Execute
// contains, it runs the result's own encoding there (a MarshalJSON of the
// user's, which may panic) as part of the handler; the engine then stores
// and writes plain values only. A result that does not encode is left as
// it is: storing it says why it cannot be stored.
func PlainResult(result any, err error) (any, error) {
	if err != nil || result == nil {
		return result, err
	}
	if plain, nerr := fields.Normalize(result); nerr == nil {
		return plain, nil
	}
	return result, nil
}

// checkLimits logs the invocation and fails the handler before the attempt
// if its timeout or retries are used up.
//
//go:noinline
func checkLimits(ctx context.Context, h *Handler, st *HandlerState, now time.Time) (Outcome, bool) {
	log := logr.FromContextOrDiscard(ctx)
	runtime := st.Runtime(now)
	if debug := log.V(1); debug.Enabled() {
		debug.Info(fmt.Sprintf("%s is invoked.", h))
	}
	if h.Timeout > 0 && runtime >= h.Timeout {
		err := &HandlerTimeoutError{Message: fmt.Sprintf("%s has timed out after %s.", h, timedelta(runtime))}
		log.Error(nil, err.Message)
		return Outcome{Final: true, Err: err, NotCalled: true}, false
	}
	if h.Retries > 0 && st.Retries >= h.Retries {
		err := &HandlerRetriesError{Message: fmt.Sprintf("%s has exceeded %d retries.", h, st.Retries)}
		log.Error(nil, err.Message)
		return Outcome{Final: true, Err: err, NotCalled: true}, false
	}
	return Outcome{}, true
}

// handlerContext gives the handler a deadline at started+timeout.
//
//go:noinline
func handlerContext(ctx context.Context, h *Handler, st *HandlerState) (context.Context, context.CancelFunc) {
	if h.Timeout > 0 {
		return context.WithDeadline(ctx, st.Started.Add(h.Timeout))
	}
	return ctx, func() {}
}

// interpret turns what the handler returned into an outcome and Kopf's
// log line.
//
//go:noinline
func interpret(ctx context.Context, h *Handler, st *HandlerState, now time.Time, defaults Defaults, result any, err error) Outcome {
	log := logr.FromContextOrDiscard(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		log.Info(fmt.Sprintf("%s is cancelled.", h))
		return Outcome{Cancelled: true, Err: err}
	}
	if err == nil {
		log.Info(fmt.Sprintf("%s succeeded.", h))
		return Outcome{Final: true, Result: result}
	}
	var temporary *TemporaryError
	var children *ChildrenRetry
	switch {
	case errors.As(err, &children):
		log.V(1).Info(fmt.Sprintf("%s has unfinished sub-handlers. Will retry soon.", h))
		delay := children.Delay
		return Outcome{Err: err, Delay: &delay}
	case errors.As(err, &temporary):
		return failedTemporarily(log, h, st, now, temporary.Delay, err)
	case isPermanent(err):
		log.Error(nil, fmt.Sprintf("%s failed permanently: %s", h, err))
		return Outcome{Final: true, Err: err}
	}
	return failedArbitrarily(log, h, st, now, defaults, err)
}

// failedTemporarily retries the handler after the delay it asked for,
// unless the retry would be past its timeout or retries: then it fails
// now, as Kopf does, rather than wait for an attempt that cannot run.
func failedTemporarily(log logr.Logger, h *Handler, st *HandlerState, now time.Time, delay time.Duration, err error) Outcome {
	switch {
	case willTimeOut(h, st, now, delay):
		msg := fmt.Sprintf("%s failed temporarily but will time out after %s seconds: %s", h, Seconds(h.Timeout), err)
		log.Error(nil, msg)
		return Outcome{Final: true, Err: &HandlerTimeoutError{Message: msg}}
	case willExceed(h, st):
		msg := fmt.Sprintf("%s failed temporarily but will exceed %d retries: %s", h, h.Retries, err)
		log.Error(nil, msg)
		return Outcome{Final: true, Err: &HandlerRetriesError{Message: msg}}
	}
	log.Error(nil, fmt.Sprintf("%s failed temporarily: %s", h, err))
	return Outcome{Err: err, Delay: &delay}
}

// failedArbitrarily applies the handler's errors mode to an error of no
// known class (a panic included, whose stack goes into the log line), and
// retries after the backoff unless the retry would be past the handler's
// timeout or retries.
func failedArbitrarily(log logr.Logger, h *Handler, st *HandlerState, now time.Time, defaults Defaults, err error) Outcome {
	errorsMode := h.Errors
	if errorsMode == ErrorsDefault {
		errorsMode = defaults.Errors
	}
	backoff := defaults.Backoff
	if h.Backoff != nil {
		backoff = *h.Backoff
	}
	var panicked *contain.Panic
	if errors.As(err, &panicked) {
		log = log.WithValues("stack", string(panicked.Stack))
	}
	switch {
	case errorsMode == ErrorsIgnored:
		log.Error(err, fmt.Sprintf("%s failed with an exception and will ignore it: %s", h, err))
		return Outcome{Final: true, Ignored: true}
	case errorsMode == ErrorsPermanent:
		log.Error(err, fmt.Sprintf("%s failed with an exception and will stop now: %s", h, err))
		return Outcome{Final: true, Err: err}
	case willTimeOut(h, st, now, backoff):
		msg := fmt.Sprintf("%s failed with an exception and will stop now (it would time out in %s seconds on the next attempt): %s", h, Seconds(h.Timeout), err)
		log.Error(err, msg)
		return Outcome{Final: true, Err: &HandlerTimeoutError{Message: msg}}
	case willExceed(h, st):
		msg := fmt.Sprintf("%s failed with an exception and will stop now (it would exceed %d retries on the next attempt): %s", h, h.Retries, err)
		log.Error(err, msg)
		return Outcome{Final: true, Err: &HandlerRetriesError{Message: msg}}
	}
	log.Error(err, fmt.Sprintf("%s failed with an exception and will try again in %s seconds: %s", h, Seconds(backoff), err))
	return Outcome{Err: err, Delay: &backoff}
}

// willTimeOut is the look-ahead on the timeout: whether the next attempt,
// after the delay, would start past it.
func willTimeOut(h *Handler, st *HandlerState, now time.Time, delay time.Duration) bool {
	return h.Timeout > 0 && st.Runtime(now)+delay >= h.Timeout
}

// willExceed is the look-ahead on the retries: whether the next attempt
// would be one more than allowed.
func willExceed(h *Handler, st *HandlerState) bool {
	return h.Retries > 0 && st.Retries+1 >= h.Retries
}

// Seconds renders a duration as Kopf prints its seconds: "60", "1.5". It
// is the one rendering of seconds in log lines; callers that log measured
// delays (with the clock's nanosecond noise) round them first.
func Seconds(d time.Duration) string {
	// An exact division: d.Seconds() adds the fraction in floating point,
	// which prints 1.235 s as 1.2349999999999999.
	return strconv.FormatFloat(float64(d)/float64(time.Second), 'f', -1, 64)
}

// timedelta renders a duration as Python's timedelta does: "0:00:02.500000",
// "1 day, 0:00:00", "2 days, 1:00:00" (for durations that are not negative).
func timedelta(d time.Duration) string {
	us := d.Microseconds()
	days := us / 86_400_000_000
	h := us / 3_600_000_000 % 24
	m := us / 60_000_000 % 60
	s := us / 1_000_000 % 60
	frac := us % 1_000_000
	out := fmt.Sprintf("%d:%02d:%02d", h, m, s)
	if frac != 0 {
		out += fmt.Sprintf(".%06d", frac)
	}
	switch {
	case days == 1:
		out = "1 day, " + out
	case days > 1:
		out = fmt.Sprintf("%d days, %s", days, out)
	}
	return out
}
