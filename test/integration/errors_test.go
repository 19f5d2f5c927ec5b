package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
)

// Kopf's acceptance item 6: a TemporaryError with a delay is retried after
// that delay, with the retry count growing and the start time kept; the
// record says when and why.
func TestTemporaryErrorDelay(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	seenVersions := recordVersions(t, ns)
	reg, kind := kex()
	var seen calls
	const delay = time.Second
	handlers.OnCreate(kind, "temp_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		if c.Retry < 2 {
			return nil, handlers.Temporary(errors.New("not yet"), delay)
		}
		return nil, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })
	got := seen.of("temp_fn")
	if len(got) != 3 {
		t.Fatalf("temp_fn called %d times, want 3", len(got))
	}
	for i, c := range got {
		if c.Retry != i {
			t.Errorf("call %d had retry %d", i, c.Retry)
		}
		if i > 0 && c.At.Sub(got[i-1].At) < delay-50*time.Millisecond {
			t.Errorf("call %d came %v after the previous one, before the %v delay", i, c.At.Sub(got[i-1].At), delay)
		}
	}
	if n := op.Logs.Count("Handler 'temp_fn' failed temporarily: not yet"); n != 2 {
		t.Errorf("temporary failure logged %d times, want 2", n)
	}
	records := seenVersions.annotation("kopf.zalando.org/temp_fn")
	var started string
	var retries []float64
	for _, raw := range records {
		r := decodeRecord(t, raw)
		if started == "" {
			started = r["started"].(string)
		}
		if r["started"] != started {
			t.Errorf("started changed from %s to %v", started, r["started"])
		}
		if r["message"] != "not yet" || r["delayed"] == nil || r["success"] != false || r["failure"] != false {
			t.Errorf("record while retrying = %v", r)
		}
		if len(retries) == 0 || retries[len(retries)-1] != r["retries"] {
			retries = append(retries, r["retries"].(float64))
		}
	}
	if len(retries) != 2 || retries[0] != 1 || retries[1] != 2 {
		t.Errorf("stored retries went %v, want [1 2]", retries)
	}
}

// Kopf's acceptance item 7: an arbitrary error is retried after the
// handler's backoff, or the default backoff from the options.
func TestArbitraryErrorBackoff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler []handlers.CreateOption
		opts    handlers.Options
	}{
		{"handler backoff", []handlers.CreateOption{handlers.Backoff(500 * time.Millisecond)}, handlers.Options{}},
		{"default backoff", nil, handlers.Options{DefaultBackoff: 500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			seenVersions := recordVersions(t, ns)
			reg, kind := kex()
			var seen calls
			handlers.OnCreate(kind, "arb_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
				seen.add(c)
				if c.Retry == 0 {
					return nil, errors.New("boom")
				}
				return nil, nil
			}, tc.handler...)
			op := env.StartOperator(t, ns, reg, tc.opts)
			create(t, exampleObject(t, ns))
			eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })
			if n := op.Logs.Count("Handler 'arb_fn' failed with an exception and will try again in 0.5 seconds: boom"); n != 1 {
				t.Errorf("the retry was logged %d times, want 1", n)
			}
			got := seen.of("arb_fn")
			if len(got) != 2 || got[1].At.Sub(got[0].At) < 450*time.Millisecond {
				t.Errorf("calls = %+v, want 2, the second after the backoff", got)
			}
			r := decodeRecord(t, seenVersions.annotation("kopf.zalando.org/arb_fn")[0])
			if r["message"] != "boom" || r["delayed"] == nil || r["success"] != false || r["failure"] != false {
				t.Errorf("record after the error = %v", r)
			}
		})
	}
}

// Kopf's acceptance item 8: retries count attempts in total; the failure
// ends the cause, the diffbase advances, and nothing runs until the next
// change. The same with a timeout.
func TestRetryAndTimeoutLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []handlers.UpdateOption
		message string
		calls   int
	}{
		{"retries", []handlers.UpdateOption{handlers.Retries(3), handlers.Backoff(200 * time.Millisecond)},
			"Handler 'fail_fn' failed with an exception and will stop now (it would exceed 3 retries on the next attempt): boom", 3},
		{"timeout", []handlers.UpdateOption{handlers.Timeout(time.Second), handlers.Backoff(700 * time.Millisecond)},
			"Handler 'fail_fn' failed with an exception and will stop now (it would time out in 1 seconds on the next attempt): boom", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			reg, kind := kex()
			var seen calls
			handlers.OnCreate(kind, "create_fn", nothing)
			handlers.OnUpdate(kind, "fail_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
				seen.add(c)
				return nil, errors.New("boom")
			}, tc.opts...)
			op := env.StartOperator(t, ns, reg, handlers.Options{})
			create(t, exampleObject(t, ns))
			eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })

			mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
			eventually(t, "the update ends", func() bool { return op.Logs.Count("Updating is processed: 0 succeeded; 1 failed.") == 1 })
			if n := len(seen.of("fail_fn")); n != tc.calls {
				t.Errorf("fail_fn called %d times, want %d", n, tc.calls)
			}
			if n := op.Logs.Count(tc.message); n != 1 {
				t.Errorf("the final failure was logged %d times, want 1: %q (seen: %q)", n, tc.message, op.Logs.Messages("fail_fn"))
			}
			// The summary is logged before the cycle's patch is written.
			eventually(t, "the diffbase advances", func() bool {
				return strings.Contains(get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"], `"field":"changed"`)
			})
			// A no-op change runs nothing; a real change runs the handler afresh.
			mergePatch(t, ns, "kopf-example-1", `{"status":{"poke":1}}`, true)
			mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"again"}}`, false)
			eventually(t, "the next update runs the handler again", func() bool { return len(seen.of("fail_fn")) == tc.calls+1 })
			if c := seen.of("fail_fn")[tc.calls]; c.Retry != 0 {
				t.Errorf("the next change started at retry %d, want 0", c.Retry)
			}
		})
	}
}

// Kopf's acceptance item 9: a PermanentError, ErrorsPermanent and
// ErrorsIgnored each lead to exactly one call; ignored counts as success.
func TestPermanentAndIgnoredErrors(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "perm_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return nil, handlers.Permanent(errors.New("nope"))
	})
	handlers.OnCreate(kind, "strict_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return nil, errors.New("strict boom")
	}, handlers.Errors(failure.ErrorsPermanent))
	handlers.OnCreate(kind, "lax_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return map[string]any{"never": "stored"}, errors.New("lax boom")
	}, handlers.Errors(failure.ErrorsIgnored))
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "creation ends", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 2 failed.") == 1 })
	for _, id := range []string{"perm_fn", "strict_fn", "lax_fn"} {
		if n := len(seen.of(id)); n != 1 {
			t.Errorf("%s called %d times, want 1", id, n)
		}
	}
	for _, line := range []string{
		"Handler 'perm_fn' failed permanently: nope",
		"Handler 'strict_fn' failed with an exception and will stop now: strict boom",
		"Handler 'lax_fn' failed with an exception and will ignore it: lax boom",
	} {
		if op.Logs.Count(line) != 1 {
			t.Errorf("missing log line %q", line)
		}
	}
	if _, ok := get(t, ns, "kopf-example-1").Object["status"]; ok {
		t.Errorf("status = %v, want none: failed and ignored handlers deliver no result", get(t, ns, "kopf-example-1").Object["status"])
	}
}
