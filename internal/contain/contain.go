// Package contain runs the operator author's callbacks so that a panic in
// one of them stays that callback's failure: Call turns the panic into an
// error (*Panic) that carries the panic's value and the stack where it
// happened, for the caller to log, count and treat as Kopf treats an
// exception there. Nothing here logs or counts: the engine does, where it
// knows which callback of which handler panicked.
//
// A panic that must end more than the callback (a storage's, which would
// leave a cycle half done) is contained where it happens and then carried
// up with Unwind, through every Call on the way, to the Unwound of whoever
// owns the unit of work.
package contain

import (
	"fmt"
	"runtime/debug"
)

// Panic is a callback's panic as an error.
type Panic struct {
	// Value is what the callback panicked with.
	Value any
	// Stack is the panicking goroutine's stack, taken where the panic was
	// recovered: the callback's frames are on it.
	Stack []byte
}

// Error renders the panic as Kopf renders an exception in its log lines:
// the value only (the stack goes into a log value of its own).
func (p *Panic) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Call runs fn and returns its panic, nil if it returned. A panic that
// Unwind started passes through: it is already contained.
func Call(fn func()) (p *Panic) {
	defer func() {
		if r := recover(); r != nil {
			if u, ok := r.(unwinding); ok {
				panic(u)
			}
			p = &Panic{Value: r, Stack: debug.Stack()}
		}
	}()
	fn()
	return nil
}

// Value runs fn and returns its result, or its panic (and T's zero value).
func Value[T any](fn func() T) (v T, p *Panic) {
	p = Call(func() { v = fn() })
	if p != nil {
		var zero T
		return zero, p
	}
	return v, nil
}

// Result runs fn and returns what it returns; its panic comes back as the
// error, a *Panic.
func Result[T any](fn func() (T, error)) (T, error) {
	var v T
	var err error
	if p := Call(func() { v, err = fn() }); p != nil {
		var zero T
		return zero, p
	}
	return v, err
}

// unwinding is the panic value of Unwind: an error that ends a unit of
// work, already logged or counted where it happened.
type unwinding struct{ err error }

// Unwind ends the enclosing unit of work with err (which wraps a *Panic,
// as a rule): it panics with it, passes through every Call on its way up,
// and stops at the Unwound deferred by the unit's owner. Whoever calls it
// must run under such an owner.
func Unwind(err error) { panic(unwinding{err: err}) }

// Unwound, deferred by the owner of a unit of work, turns an Unwind of the
// unit into *err; any other panic goes on (it is nobody's callback's).
func Unwound(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if u, ok := r.(unwinding); ok {
		*err = u.err
		return
	}
	panic(r)
}
