package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/registry"
)

// logged is what a review logged at error level: each line's message and
// whether it carries a goroutine's stack.
type logged struct {
	Msg     string
	Stacked bool
}

func reviewLogging(t *testing.T, reg *Registry) (*admissionv1.AdmissionResponse, []logged) {
	t.Helper()
	var lines []logged
	log := funcr.NewJSON(func(obj string) {
		if !strings.Contains(obj, `"error"`) {
			return // info lines
		}
		var l logged
		if i := strings.Index(obj, `"msg":"`); i >= 0 {
			rest := obj[i+len(`"msg":"`):]
			l.Msg = rest[:strings.Index(rest, `"`)]
		}
		l.Stacked = strings.Contains(obj, `"stack":"goroutine `)
		lines = append(lines, l)
	}, funcr.Options{})
	resp, err := Review(logr.NewContext(context.Background(), log), reg, nil, Input{Request: admissionRequest(t, Create, kexBody(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	return resp, lines
}

// TestHandlerPanic: a handler's panic denies the request with a message
// that says nothing of the panic, and its stack goes into the log line,
// which names the handler; the other handlers run as usual.
func TestHandlerPanic(t *testing.T) {
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "broken", func(*Request) error { panic("the secret is hunter2") })
	c.add(k, Validating, "fine", nil)
	resp, lines := reviewLogging(t, reg)
	want := &admissionv1.AdmissionResponse{UID: "uid1", Result: &metav1.Status{Message: PanicMessage, Code: 500}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"broken", "fine"}, c.IDs()); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	wantLines := []logged{{Msg: "Handler 'broken' failed with an exception and will stop now: panic: the secret is hunter2", Stacked: true}}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Errorf("error lines -want +got:\n%s", diff)
	}
}

// TestFilterPanic: a handler whose filter panics is not called, and the
// request is denied with the generic message (fail closed: a validator
// that cannot tell whether it applies lets nothing through); the other
// handlers still run, and the log line names the handler and carries the
// stack.
func TestFilterPanic(t *testing.T) {
	tests := []struct {
		name   string
		filter func(h *Handler)
	}{
		{"when", func(h *Handler) {
			h.When = func(registry.Object, *causes.Cause) bool { panic("no") }
		}},
		{"when of the request", func(h *Handler) {
			h.WhenRequest = func(registry.Object, *Request) bool { panic("no") }
		}},
		{"a label's function", func(h *Handler) {
			h.Labels = map[string]registry.Filter{"somelabel": registry.Check(func(any) bool { panic("no") })}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, k := kexKind()
			c := &calls{}
			c.add(k, Validating, "broken", func(*Request) error { return Error{Message: "refused"} }, tt.filter)
			c.add(k, Validating, "fine", nil)
			resp, lines := reviewLogging(t, reg)
			if resp.Allowed || resp.Result == nil || resp.Result.Message != PanicMessage {
				t.Errorf("the response = allowed %v, %v; want denied with %q", resp.Allowed, resp.Result, PanicMessage)
			}
			if diff := cmp.Diff([]string{"fine"}, c.IDs()); diff != "" {
				t.Errorf("calls -want +got:\n%s", diff)
			}
			wantLines := []logged{{Msg: "Handler 'broken' is not called: its filter panicked, and the request is denied: panic: no", Stacked: true}}
			if diff := cmp.Diff(wantLines, lines); diff != "" {
				t.Errorf("error lines -want +got:\n%s", diff)
			}
		})
	}
}
