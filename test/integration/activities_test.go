package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/memo"
)

// Kopf's acceptance item 24: startup handlers run (and are retried) before
// anything is watched, and the operator is ready only after them; cleanup
// handlers run when it stops.
func TestStartupAndCleanup(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	var startups, cleanups atomic.Int32
	memo := &memo.Memo{}
	handlers.OnStartup(reg, "startup_fn", func(ctx context.Context, a *cause.Activity) error {
		startups.Add(1)
		if a.Retry < 3 {
			return handlers.Temporary(errors.New("not yet"), 300*time.Millisecond)
		}
		a.Memo.Set("started", true)
		return nil
	})
	handlers.OnCleanup(reg, "cleanup_fn", func(ctx context.Context, a *cause.Activity) error {
		cleanups.Add(1)
		return nil
	})
	var sawMemo atomic.Bool
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		v, _ := c.Memo.Get("started")
		sawMemo.Store(v == true)
		return nil, nil
	})
	create(t, exampleObject(t, ns))
	w := &watches{resource: "kopfexamples"}
	probes := testenv.FreeAddress(t)
	ready := make(chan struct{})
	op := env.StartOperator(t, ns, reg, handlers.Options{Memo: memo, Ready: ready}, kopftest.WithConfig(w.config()),
		kopftest.WithManagerOptions(func(o *manager.Options) { o.HealthProbeBindAddress = probes }))
	select {
	case <-ready:
		if n := startups.Load(); n != 4 {
			t.Errorf("Options.Ready was closed after %d startup attempts, want it after the 4th", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("Options.Ready was not closed after the startup handlers")
	}
	eventually(t, "the probe server answers", func() bool {
		code, body := httpGetMaybe("http://" + probes + "/readyz/kopf-peering")
		return code != 0 && (code == 200 || strings.Contains(body, "startup handlers have not finished"))
	})
	if code, _ := httpGetMaybe("http://" + probes + "/readyz/kopf-peering"); code == 200 && startups.Load() < 4 {
		t.Error("the operator was ready before its startup handlers finished")
	}
	if w.count() > 0 && startups.Load() < 4 {
		t.Error("something was watched before the startup handlers finished")
	}
	eventually(t, "the object is handled after the startup", func() bool { return len(seen.of("create_fn")) == 1 })
	if n := startups.Load(); n != 4 {
		t.Errorf("the startup handler ran %d times, want 4", n)
	}
	if !sawMemo.Load() {
		t.Error("the startup handler's memo did not reach the object's")
	}
	if code, body := httpGetMaybe("http://" + probes + "/readyz/kopf-peering"); code != 200 {
		t.Errorf("readiness after the startup = %d %s", code, body)
	}
	if cleanups.Load() != 0 {
		t.Error("the cleanup ran before the stop")
	}
	op.Stop(t)
	if n := cleanups.Load(); n != 1 {
		t.Errorf("the cleanup handler ran %d times, want 1", n)
	}
}

// A startup handler that fails for good stops the operator, non-zero,
// before anything is watched.
func TestStartupFailureStopsTheOperator(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	handlers.OnStartup(reg, "broken", func(ctx context.Context, a *cause.Activity) error {
		return handlers.Permanent(errors.New("the database is gone"))
	})
	w := &watches{resource: "kopfexamples"}
	ready := make(chan struct{})
	op := env.StartOperator(t, ns, reg, handlers.Options{Ready: ready}, kopftest.WithConfig(w.config()),
		kopftest.BeforeStart(func(manager.Manager) error { create(t, exampleObject(t, ns)); return nil }))
	err := op.Exited(t)
	select {
	case <-ready:
		t.Error("Options.Ready was closed, though the startup failed")
	default:
	}
	if err == nil || !strings.Contains(err.Error(), "the startup handlers failed") {
		t.Errorf("the operator ended with %v, want the startup failure", err)
	}
	if len(seen.all()) != 0 || w.count() != 0 {
		t.Errorf("handled %d objects, %d watches open: nothing should have been watched", len(seen.all()), w.count())
	}
	if len(op.Logs.Messages("Activity 'broken' failed permanently: the database is gone")) != 1 {
		t.Error("the failure was not logged")
	}
}

// The standalone runner logs in through login handlers and serves the
// probes' results at --liveness.
func TestLoginAndProbes(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	var logins atomic.Int32
	handlers.OnLogin(reg, "login_fn", func(ctx context.Context, a *cause.Activity) (*rest.Config, error) {
		if logins.Add(1) == 1 {
			return nil, handlers.Temporary(errors.New("the vault is sealed"), 100*time.Millisecond)
		}
		return rest.CopyConfig(env.Config), nil
	})
	handlers.OnProbe(reg, "objects", func(ctx context.Context, a *cause.Activity) (any, error) {
		return len(seen.all()), nil
	})
	handlers.OnProbe(reg, "broken", func(ctx context.Context, a *cause.Activity) (any, error) {
		return nil, errors.New("the probe cannot tell")
	})
	liveness := testenv.FreeAddress(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- handlers.Run(ctx, reg, []string{"--standalone", "--namespace", ns, "--liveness", "http://" + liveness + "/healthz"}, handlers.RunOptions{})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the runner ended with %v", err)
		}
	}()
	create(t, exampleObject(t, ns))
	eventually(t, "the object is handled through the login's connection", func() bool { return isHandled(t, ns, "kopf-example-1") })
	if n := logins.Load(); n != 2 {
		t.Errorf("the login handler ran %d times, want 2", n)
	}
	var code int
	var body string
	eventually(t, "the liveness endpoint answers", func() bool {
		code, body = httpGetMaybe("http://" + liveness + "/healthz")
		return code != 0
	})
	var results map[string]any
	if err := json.Unmarshal([]byte(body), &results); err != nil {
		t.Fatalf("the liveness body %q is not JSON: %v", body, err)
	}
	if code != 500 || results["objects"] == nil {
		t.Errorf("liveness = %d %v; want 500 (a probe fails) with the other probe's result", code, results)
	}
}
