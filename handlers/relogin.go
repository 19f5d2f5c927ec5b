package handlers

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// reloginInterval is the least time between two re-logins: a server that
// refuses every token gets its 401s, not a storm of logins.
const reloginInterval = time.Second

// relogin runs the login handlers again when the API server answers 401
// (the credentials expired or were revoked), as Kopf does, and retries the
// request once with the new token. It refreshes bearer tokens; other
// credentials (client certificates) are those of the first login.
type relogin struct {
	base  http.RoundTripper
	login func(context.Context) (*rest.Config, error)
	log   logr.Logger
	now   func() time.Time

	mu    sync.Mutex
	token string
	last  time.Time
}

// withRelogin makes the connection log in again on 401s.
func withRelogin(cfg *rest.Config, login func(context.Context) (*rest.Config, error), log logr.Logger) {
	token := cfg.BearerToken
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &relogin{base: rt, login: login, log: log, now: time.Now, token: token}
	})
}

func (r *relogin) RoundTrip(req *http.Request) (*http.Response, error) {
	token := r.current()
	resp, err := r.base.RoundTrip(withToken(req, token))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if !r.refresh(req.Context(), token) {
		return resp, nil
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body cannot be sent again
	}
	retry := withToken(req, r.current())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		retry.Body = body
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return r.base.RoundTrip(retry)
}

func (r *relogin) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.token
}

// refresh logs in again, unless another request already did since it
// was refused with the token used, or a login was tried just now; it tells
// whether there is a new token to try.
func (r *relogin) refresh(ctx context.Context, used string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.token != used {
		return true // refreshed meanwhile
	}
	now := r.now()
	if now.Sub(r.last) < reloginInterval {
		return false
	}
	r.last = now
	r.log.Info("The API server refuses the credentials; logging in again.")
	cfg, err := r.login(ctx)
	if err != nil || cfg == nil || cfg.BearerToken == "" || cfg.BearerToken == used {
		r.log.Error(err, "Logging in again gave no new token.")
		return false
	}
	r.token = cfg.BearerToken
	return true
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
