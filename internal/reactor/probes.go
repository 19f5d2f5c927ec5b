package reactor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
)

// probeCacheTTL is how long probe results are reused, as in Kopf.
const probeCacheTTL = 10 * time.Second

// Prober runs the probe handlers for liveness checks: each once per round
// (no retries: a probe answers now or fails), with the results cached for
// ten seconds. It serves them as JSON ({"id": result}) and as a
// controller-runtime health check.
type Prober struct {
	handlers []*registry.ActivityHandler
	settings Settings
	log      logr.Logger

	mu      sync.Mutex
	at      time.Time
	results map[string]any
	err     error
}

// NewProber returns the prober of a registry's probe handlers, on the
// engine's resolved settings (Resolved).
func NewProber(reg *registry.Registry, s Settings, log logr.Logger) *Prober {
	return &Prober{handlers: reg.ActivitiesOf(registry.ActivityProbe), settings: s, log: log}
}

// Results runs the probes, or returns the results of a round less than ten
// seconds old.
func (p *Prober) Results(ctx context.Context) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.settings.Clock.Now()
	if p.results != nil && now.Sub(p.at) < probeCacheTTL {
		return p.results, p.err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	results, err := map[string]any{}, error(nil)
	hctx := WithClient(posting.NewContext(logr.NewContext(ctx, p.log), p.settings.Poster), p.settings.Client)
	for _, h := range p.handlers {
		st := &execution.HandlerState{Active: true, Started: now}
		a := &causes.Activity{HandlerID: h.ID, Param: h.Param, Started: now, Memo: p.settings.Memo, Indices: p.settings.Indices}
		probe := *h
		probe.Retries = 1 // one attempt per round
		outcome := execution.Execute(hctx, &probe.Handler, st, now, execution.Defaults{Errors: execution.ErrorsPermanent},
			func(ctx context.Context) (any, error) { return h.Fn(ctx, a) })
		countActivityPanic(h, outcome)
		if outcome.Err != nil {
			err = fmt.Errorf("probe '%s' failed: %w", h.ID, outcome.Err)
			continue
		}
		results[h.ID] = outcome.Result
	}
	p.at, p.results, p.err = now, results, err
	return results, err
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
