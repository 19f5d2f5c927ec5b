package rounds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// handler is a change handler of the reason that records its calls and
// returns what outcome says.
func handler(id string, reason causes.Reason, calls *[]string, outcome func(c *causes.Cause) (any, error)) *registry.ChangeHandler {
	return &registry.ChangeHandler{Handler: execution.Handler{ID: id}, Reason: reason,
		Fn: func(_ context.Context, _ registry.Object, c *causes.Cause) (any, error) {
			*calls = append(*calls, id)
			return outcome(c)
		}}
}

// parent is a create handler that registers the sub-handlers, as
// handlers.Subhandler does, through its call's context.
func parent(id string, calls *[]string, subs ...*registry.ChangeHandler) *registry.ChangeHandler {
	return &registry.ChangeHandler{Handler: execution.Handler{ID: id}, Reason: causes.Create,
		Fn: func(ctx context.Context, _ registry.Object, _ *causes.Cause) (any, error) {
			*calls = append(*calls, id)
			for _, h := range subs {
				causes.AddSubhandler(ctx, h)
			}
			return nil, nil
		}}
}

func succeed(*causes.Cause) (any, error) { return map[string]any{"done": true}, nil }

// annotation is a written annotation of the patch ("" if none; nil-valued
// ones, removals, as "<removed>").
func annotation(p *patch.Patch, key string) string {
	v, ok := p.Get("metadata", "annotations", key)
	switch {
	case !ok:
		return ""
	case v == nil:
		return "<removed>"
	}
	return fmt.Sprint(v)
}

// One round per cycle, on the body and the patch only: which handlers ran,
// what the patch holds afterwards, and what the round left.
func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		reason      causes.Reason
		annotations map[string]string
		handlers    func(calls *[]string) []*registry.ChangeHandler

		calls    []string
		done     bool
		delay    time.Duration
		standing execution.Standing
		check    func(t *testing.T, p *patch.Patch)
	}{{
		name: "one handler, done: the result in status, no record left", reason: causes.Create,
		handlers: func(calls *[]string) []*registry.ChangeHandler {
			return []*registry.ChangeHandler{handler("create_fn", causes.Create, calls, succeed)}
		},
		calls: []string{"create_fn"}, done: true,
		check: func(t *testing.T, p *patch.Patch) {
			if v, _ := p.Get("status", "create_fn", "done"); v != true {
				t.Errorf("status.create_fn = %v, want the result", v)
			}
			if a := annotation(p, "kopf.zalando.org/create_fn"); a != "" {
				t.Errorf("the record is written (%s): written and purged in one cycle, it leaves nothing", a)
			}
		},
	}, {
		name: "two handlers: one per cycle, the other due at once", reason: causes.Create,
		handlers: func(calls *[]string) []*registry.ChangeHandler {
			return []*registry.ChangeHandler{handler("a", causes.Create, calls, succeed), handler("b", causes.Create, calls, succeed)}
		},
		calls: []string{"a"}, done: false, delay: 0,
		check: func(t *testing.T, p *patch.Patch) {
			if !strings.Contains(annotation(p, "kopf.zalando.org/a"), `"success":true`) || annotation(p, "kopf.zalando.org/b") == "" {
				t.Errorf("records a=%s b=%s, want a succeeded and b started", annotation(p, "kopf.zalando.org/a"), annotation(p, "kopf.zalando.org/b"))
			}
		},
	}, {
		name: "a temporary error: retried after its delay", reason: causes.Update,
		handlers: func(calls *[]string) []*registry.ChangeHandler {
			return []*registry.ChangeHandler{handler("update_fn", causes.Update, calls, func(*causes.Cause) (any, error) {
				return nil, execution.Temporary(errors.New("not yet"), 10*time.Second)
			})}
		},
		calls: []string{"update_fn"}, done: false, delay: 10 * time.Second, standing: execution.Standing{Retrying: true},
		check: func(t *testing.T, p *patch.Patch) {
			if r := annotation(p, "kopf.zalando.org/update_fn"); !strings.Contains(r, `"retries":1`) || !strings.Contains(r, "not yet") {
				t.Errorf("record = %s, want one retry with the message", r)
			}
		},
	}, {
		name: "a permanent failure: done, failed for good", reason: causes.Update,
		handlers: func(calls *[]string) []*registry.ChangeHandler {
			return []*registry.ChangeHandler{handler("update_fn", causes.Update, calls, func(*causes.Cause) (any, error) {
				return nil, execution.NewPermanentError("nope")
			})}
		},
		calls: []string{"update_fn"}, done: true, standing: execution.Standing{Failed: true},
	}, {
		name: "an unfinished earlier cause is superseded: its record purged", reason: causes.Update,
		annotations: map[string]string{"kopf.zalando.org/create_fn": `{"started":"2026-12-01T11:59:00.000000Z","purpose":"create","retries":1,"success":false,"failure":false,"delayed":"2026-12-01T12:10:00.000000Z"}`},
		handlers: func(calls *[]string) []*registry.ChangeHandler {
			return []*registry.ChangeHandler{handler("create_fn", causes.Create, calls, succeed), handler("update_fn", causes.Update, calls, succeed)}
		},
		calls: []string{"update_fn"}, done: true,
		check: func(t *testing.T, p *patch.Patch) {
			if a := annotation(p, "kopf.zalando.org/create_fn"); a != "<removed>" {
				t.Errorf("the superseded record: %q, want it removed", a)
			}
		},
	}, {
		name: "sub-handlers: the parent is not done while one is pending", reason: causes.Create,
		handlers: func(calls *[]string) []*registry.ChangeHandler {
			return []*registry.ChangeHandler{parent("parent", calls,
				handler("x", causes.Create, calls, succeed), handler("y", causes.Create, calls, succeed))}
		},
		calls: []string{"parent", "x"}, done: false,
		check: func(t *testing.T, p *patch.Patch) {
			if !strings.Contains(annotation(p, "kopf.zalando.org/parent.x"), `"success":true`) {
				t.Errorf("sub-handler x's record = %s, want it succeeded", annotation(p, "kopf.zalando.org/parent.x"))
			}
			if !strings.Contains(annotation(p, "kopf.zalando.org/parent"), `"subrefs"`) {
				t.Errorf("the parent's record = %s, want its sub-handlers named", annotation(p, "kopf.zalando.org/parent"))
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			kind := &registry.Kind{Changing: tt.handlers(&calls)}
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": "a"}}}
			obj.SetName("kex")
			obj.SetAnnotations(tt.annotations)
			clock := clocktesting.NewFakeClock(t0)
			p := patch.New()
			var tracked, observed []string
			env := Env{Object: obj, Body: obj.Object, Patch: p, Progress: progress.NewSmart(), Clock: clock, Log: logr.Discard(),
				Defaults: execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: time.Minute}, Ref: stringer("ns/kex"),
				Track: func(name string) func() { tracked = append(tracked, name); return func() {} },
				Observe: func(id, cause, class string, _ time.Duration, called bool) {
					observed = append(observed, fmt.Sprintf("%s %s %s %v", id, cause, class, called))
				}}
			subject := &registry.Subject{Obj: obj, Cause: &causes.Cause{Reason: tt.reason, Body: obj.Object, Patch: p}}
			got := Run(context.Background(), env, kind, subject, t0)
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("called %v, want %v", calls, tt.calls)
			}
			if got.Done != tt.done || got.Delay != tt.delay || got.Standing != tt.standing {
				t.Errorf("Run() = %+v, want done %v, delay %s, standing %+v", got, tt.done, tt.delay, tt.standing)
			}
			// Every handler that ran, sub-handlers too, is tracked for the
			// operator's stop, named with the object.
			if len(tracked) != len(tt.calls) || slices.ContainsFunc(tracked, func(n string) bool { return !strings.HasSuffix(n, " of ns/kex") }) {
				t.Errorf("tracked %q, want each handler that ran, named with the object", tracked)
			}
			// Each attempt reaches the metrics once, with its outcome's class.
			// (A sub-handler's attempt ends before its parent's.)
			if len(observed) != len(tt.calls) || slices.ContainsFunc(observed, func(o string) bool { return !strings.Contains(o, " "+string(tt.reason)+" ") }) {
				t.Errorf("observed %q, want one attempt per call %v", observed, tt.calls)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
