package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
)

// probeCacheTTL is how long probe results are reused, as in Kopf.
const probeCacheTTL = 10 * time.Second

// errProbeTimeout is why the probes of a round are cancelled when the
// round takes longer than probeTimeout.
var errProbeTimeout = fmt.Errorf("the round of probes took longer than %s", probeTimeout)

// Prober runs the probe handlers for liveness checks: each once per round
// (no retries: a probe answers now or fails), with the results cached for
// ten seconds. It serves them as JSON ({"id": result}) and as a
// controller-runtime health check.
//
// A round runs on a context of the prober's own, bounded by probeTimeout,
// and once for all the callers that come while it runs: a caller that
// hangs up (the kubelet, after its own timeout of a second) leaves the
// round running for the others, and its result is cached as it comes.
// Were it run on the caller's context, one impatient caller would cancel
// the probes, and every caller of the next ten seconds would get that
// failure. The prober owns the rounds' goroutines: it is a Runnable of the
// manager, which cancels and waits for the round under way when it stops.
type Prober struct {
	handlers []*registry.ActivityHandler
	settings Settings
	log      logr.Logger
	// base is the rounds' context, cancelled when the prober stops.
	base   context.Context
	cancel context.CancelFunc
	rounds sync.WaitGroup

	mu      sync.Mutex
	at      time.Time
	results map[string]any
	err     error
	// running is the round under way, if any; stopped: no round starts
	// any more.
	running *round
	stopped bool
}

// round is one run of all the probes; done is closed once its results
// and error are set.
type round struct {
	done    chan struct{}
	results map[string]any
	err     error
}

// NewProber returns the prober of a registry's probe handlers, on the
// engine's resolved settings (Resolved). Its rounds run until Start's
// context ends.
func NewProber(reg *registry.Registry, s Settings, log logr.Logger) *Prober {
	base, cancel := context.WithCancel(context.Background())
	return &Prober{handlers: reg.ActivitiesOf(registry.ActivityProbe), settings: s, log: log, base: base, cancel: cancel}
}

// Start waits until ctx ends, then cancels the round under way (if any)
// and waits for it; the prober runs no round after that, and serves the
// last results, however old. It makes the prober a manager Runnable.
func (p *Prober) Start(ctx context.Context) error {
	<-ctx.Done()
	p.stop()
	return nil
}

// NeedLeaderElection is false: every replica answers its liveness checks.
func (p *Prober) NeedLeaderElection() bool { return false }

// stop cancels the round under way and waits for it; no round starts
// after it.
func (p *Prober) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.cancel()
	p.rounds.Wait()
}

// Results returns the results of a round less than ten seconds old, or
// those of the round under way, or of a new one, once it is over. The
// caller waits no longer than its ctx allows; its leaving does not end the
// round.
func (p *Prober) Results(ctx context.Context) (map[string]any, error) {
	p.mu.Lock()
	now := p.settings.Clock.Now()
	if p.results != nil && now.Sub(p.at) < probeCacheTTL {
		defer p.mu.Unlock()
		return p.results, p.err
	}
	r := p.running
	if r == nil {
		if p.stopped {
			// The operator stops: the last results stand, so that its
			// liveness does not fail while it stops gracefully.
			defer p.mu.Unlock()
			return p.results, p.err
		}
		r = &round{done: make(chan struct{})}
		p.running = r
		p.rounds.Go(func() { p.run(r, now) })
	}
	p.mu.Unlock()
	select {
	case <-r.done:
		return r.results, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the probes: %w", ctx.Err())
	}
}

// run runs one round of the probes begun at now, bounded by probeTimeout
// on the engine's clock, caches its results, and tells its waiters.
func (p *Prober) run(r *round, now time.Time) {
	ctx, cancel := context.WithCancelCause(p.base)
	var timing sync.WaitGroup
	defer timing.Wait()
	defer cancel(nil)
	timeout := p.settings.Clock.NewTimer(probeTimeout)
	defer timeout.Stop()
	timing.Go(func() {
		select {
		case <-timeout.C():
			cancel(errProbeTimeout)
		case <-ctx.Done():
		}
	})
	results, err := map[string]any{}, error(nil)
	hctx := clients.ForHandlers(posting.NewContext(logr.NewContext(ctx, p.log), p.settings.Poster), p.settings.Client, p.settings.Reader)
	for _, h := range p.handlers {
		st := &execution.HandlerState{Active: true, Started: now}
		a := &causes.Activity{HandlerID: h.ID, Param: h.Param, Started: now, Memo: p.settings.Memo, Indices: p.settings.Indices}
		probe := *h
		probe.Retries = 1 // one attempt per round
		outcome := execution.Execute(hctx, &probe.Handler, st, now, execution.Defaults{Errors: execution.ErrorsPermanent},
			func(ctx context.Context) (any, error) { return h.Fn(ctx, a) })
		countPanic(h, outcome)
		switch {
		case outcome.Err != nil && ctx.Err() != nil:
			err = fmt.Errorf("probe '%s' failed: %w (%w)", h.ID, outcome.Err, context.Cause(ctx))
			continue
		case outcome.Err != nil:
			err = fmt.Errorf("probe '%s' failed: %w", h.ID, outcome.Err)
			continue
		}
		results[h.ID] = outcome.Result
	}
	r.results, r.err = results, err
	p.mu.Lock()
	p.at, p.results, p.err = now, results, err
	p.running = nil
	p.mu.Unlock()
	close(r.done)
}

// Check is a controller-runtime health check: it fails when a probe fails.
func (p *Prober) Check(req *http.Request) error {
	_, err := p.Results(req.Context())
	return err
}

// ServeHTTP answers with the probes' results as JSON, 500 if one failed.
func (p *Prober) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	results, err := p.Results(req.Context())
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_ = json.NewEncoder(w).Encode(results)
}

// probeTimeout bounds one round of probes (on the engine's clock), however
// long its callers would wait.
const probeTimeout = 10 * time.Second
