// Package relogin keeps the operator's credentials fresh with its login
// handlers: a request that the API server refuses as unauthorized waits
// for one new login, shared by all the requests that wait, run outside
// any lock on the operator's own context and bounded in time.
package relogin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// reloginInterval is the least time between the starts of two re-logins:
// a server that refuses every token gets its 401s, not a storm of logins.
const reloginInterval = time.Second

// reloginTimeout bounds one re-login, its handlers' retries included: a
// login handler that hangs (an identity provider that does not answer)
// gives up then, the requests that wait for it get their 401s, and the
// next 401 tries again. Thirty seconds leave a slow provider a few
// attempts; the requests that wait are bounded by their own contexts
// before that, and the others do not wait at all.
const reloginTimeout = 30 * time.Second

// relogins run the login handlers again when the API server answers 401
// (the credentials expired or were revoked), as Kopf does, and the
// refused requests are retried once with the new token. It refreshes
// bearer tokens; other credentials (client certificates) are those of the
// first login. One state serves every transport made from the
// configuration (client-go makes several), so one 401 logs in once for
// all of them.
//
// A login runs in a goroutine of the state's, on a context of its own
// (not the request's that met the 401, which may end at any moment),
// bounded by reloginTimeout, and without the lock: requests that the
// server does not refuse go on meanwhile with the current token (a ring
// member's Lease renewals among them, which must not wait behind a slow
// login). Requests refused meanwhile wait for that one login, each no
// longer than its own context allows, and are retried once if it gave a
// new token.
type Relogins struct {
	login   func(context.Context) (*rest.Config, error)
	log     logr.Logger
	clock   clock.Clock
	timeout time.Duration
	// base is the logins' context, cancelled by close.
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	token string
	// last is when the last login began; running is the login under way
	// (nil: none), closed once it is over.
	last    time.Time
	running chan struct{}
	closed  bool
}

// Wrap makes the connection log in again on 401s. The logins run
// on ctx's values, not its cancellation: the operator may need a new
// token while it stops gracefully. The caller closes the returned state
// once nothing uses the connection any more.
func Wrap(ctx context.Context, cfg *rest.Config, login func(context.Context) (*rest.Config, error), log logr.Logger) *Relogins {
	s := newRelogins(ctx, cfg.BearerToken, login, log, clock.RealClock{})
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &relogin{base: rt, s: s} })
	return s
}

func newRelogins(ctx context.Context, token string, login func(context.Context) (*rest.Config, error), log logr.Logger, clk clock.Clock) *Relogins {
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &Relogins{login: login, log: log, clock: clk, timeout: reloginTimeout, base: base, cancel: cancel, token: token}
}

// Close cancels the login under way, if any, and waits for it; no login
// starts after it.
func (s *Relogins) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

func (s *Relogins) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// refreshed is what a request refused with the token used waits for
// before it is retried: nil to retry at once (another login has renewed
// the token since), the login under way or a new one; ok is false if
// there is nothing to wait for (a login began just now and is over, or
// the connection is closed).
func (s *Relogins) refreshed(used string) (wait <-chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.token != used:
		return nil, true
	case s.running != nil:
		return s.running, true
	case s.closed:
		return nil, false
	}
	now := s.clock.Now()
	if now.Sub(s.last) < reloginInterval {
		return nil, false
	}
	s.last = now
	running := make(chan struct{})
	s.running = running
	s.wg.Go(func() { s.run(running, used) })
	return running, true
}

// run logs in once, replacing the token used if the login gives another,
// and closes done.
func (s *Relogins) run(done chan struct{}, used string) {
	defer close(done)
	s.log.Info("The API server refuses the credentials; logging in again.")
	token, err := s.loginOnce()
	s.mu.Lock()
	s.running = nil
	renewed := err == nil && token != "" && token != used
	if renewed {
		s.token = token
	}
	s.mu.Unlock()
	switch {
	case err != nil:
		s.log.Error(err, "Logging in again failed; the refused requests get their 401s.")
	case !renewed:
		s.log.Error(nil, "Logging in again gave no new token; the refused requests get their 401s.")
	default:
		s.log.Info("Logged in again; the refused requests are retried with the new token.")
	}
}

// loginOnce runs the login handlers on the logins' context, bounded by
// the timeout on the state's clock, and returns the bearer token they
// give.
func (s *Relogins) loginOnce() (string, error) {
	ctx, cancel := context.WithCancelCause(s.base)
	var timing sync.WaitGroup
	defer timing.Wait()
	defer cancel(nil)
	timeout := s.clock.NewTimer(s.timeout)
	defer timeout.Stop()
	timing.Go(func() {
		select {
		case <-timeout.C():
			cancel(fmt.Errorf("the login took longer than %s", s.timeout))
		case <-ctx.Done():
		}
	})
	cfg, err := s.login(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return "", err
	}
	if cfg == nil {
		return "", nil
	}
	return cfg.BearerToken, nil
}

// relogin is one transport's side of the relogins: it sends requests with
// the current token, and retries a refused one once the login it waited
// for has renewed the token.
type relogin struct {
	base http.RoundTripper
	s    *Relogins
}

func (r *relogin) RoundTrip(req *http.Request) (*http.Response, error) {
	token := r.s.current()
	resp, err := r.base.RoundTrip(withToken(req, token))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	wait, ok := r.s.refreshed(token)
	if !ok {
		return resp, nil
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body cannot be sent again (the login goes on for the others)
	}
	if wait != nil {
		select {
		case <-wait:
		case <-req.Context().Done():
			discard(resp)
			return nil, fmt.Errorf("wait for the login after a 401: %w", req.Context().Err())
		}
	}
	renewed := r.s.current()
	if renewed == token {
		return resp, nil // the login gave nothing better: the 401 stands
	}
	retry := withToken(req, renewed)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		retry.Body = body
	}
	discard(resp)
	return r.base.RoundTrip(retry)
}

// discard reads and closes a response that is not handed on, so that its
// connection can be used again.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// withToken is the request with the bearer token, if any.
func withToken(req *http.Request, token string) *http.Request {
	if token == "" {
		return req
	}
	out := req.Clone(req.Context())
	out.Header.Set("Authorization", "Bearer "+token)
	return out
}
