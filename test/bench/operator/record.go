package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// recorder keeps what the handlers were called for: the same functions
// serve both variants, so their calls are counted alike.
type recorder struct {
	mu sync.Mutex
	// firstCreate is when each object's create handler was first called,
	// in Unix nanoseconds.
	firstCreate map[string]int64
	// handled is the highest spec counter handled per object.
	handled map[string]int
	calls   map[string]int
	// stale counts calls of a create or update handler on a body whose
	// counter was handled already: re-runs on a stale body.
	stale   int
	daemons atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{firstCreate: map[string]int64{}, handled: map[string]int{}, calls: map[string]int{}}
}

// changed records a create or update handler's call for the object of
// that name, whose spec.counter is counter.
func (r *recorder) changed(handler, name string, counter int) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[handler]++
	if _, ok := r.firstCreate[name]; !ok && handler == "create" {
		r.firstCreate[name] = now
	}
	if prev, ok := r.handled[name]; ok && counter <= prev {
		r.stale++
		return
	}
	r.handled[name] = counter
}

// deleted records a delete handler's call.
func (r *recorder) deleted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["delete"]++
}
