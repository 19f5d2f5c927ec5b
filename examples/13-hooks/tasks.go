package main

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// podTasks are the background tasks, one per pod, and their owner: it
// starts them, asks them to stop, and waits for them. A task is a
// goroutine, so something must wait for it; the operator's engine knows
// nothing of these, hence this owner.
type podTasks struct {
	mu sync.Mutex
	// stoppers are the tasks' stop signals by namespace and name; nil
	// until the startup handler has made the registry.
	stoppers map[string]map[string]chan struct{}
	// stopping: the tasks are asked to stop, and no new ones start.
	stopping bool
	wg       sync.WaitGroup
}

// init makes the registry of tasks.
func (t *podTasks) init() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stoppers == nil {
		t.stoppers = map[string]map[string]chan struct{}{}
	}
}

// start starts the pod's task unless it has one.
func (t *podTasks) start(namespace, name string, log logr.Logger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopping || t.stoppers == nil {
		return
	}
	if _, ok := t.stoppers[namespace][name]; ok {
		return
	}
	if t.stoppers[namespace] == nil {
		t.stoppers[namespace] = map[string]chan struct{}{}
	}
	stop := make(chan struct{})
	t.stoppers[namespace][name] = stop
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		serve(log, stop)
	}()
}

// serve is one pod's task: it serves now and then, at random intervals of
// 1 to 10 seconds, until asked to stop.
func serve(log logr.Logger, stop <-chan struct{}) {
	for {
		pause := time.NewTimer(time.Duration(1+rand.IntN(10)) * time.Second)
		select {
		case <-stop:
			pause.Stop()
			log.Info("Serving is finished by request.")
			return
		case <-pause.C:
			log.Info("Served by the background task.")
		}
	}
}

// stop asks every task to stop; later calls do nothing.
func (t *podTasks) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopping {
		return
	}
	t.stopping = true
	for _, byName := range t.stoppers {
		for _, stop := range byName {
			close(stop)
		}
	}
}

// wait returns once every task has returned; they do at once when asked
// to stop.
func (t *podTasks) wait() { t.wg.Wait() }

// count is the number of tasks, running or stopped.
func (t *podTasks) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, byName := range t.stoppers {
		n += len(byName)
	}
	return n
}

// byNamespace lists the pods with tasks, by namespace, sorted by name.
func (t *podTasks) byNamespace() map[string][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string][]string{}
	for namespace, byName := range t.stoppers {
		names := make([]string, 0, len(byName))
		for name := range byName {
			names = append(names, name)
		}
		slices.Sort(names)
		out[namespace] = names
	}
	return out
}
