package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/pkg/fields"
)

func TestValidate(t *testing.T) {
	negative := -time.Second
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
	tests := []struct {
		name     string
		handlers []*ChangeHandler
		failed   []error
		want     []string
	}{
		{"valid", []*ChangeHandler{
			handler("create_fn", causes.Create),
			handler("fn", causes.Create),
			handler("fn", causes.Update), // the same id for another cause is fine
			handler("fn", "", resume),
			handler("field_fn", "", onField("spec.field"), func(h *ChangeHandler) { h.Value = Present }),
			handler("upd", causes.Update, onField("spec.x"), func(h *ChangeHandler) { h.Old, h.New = Absent, Present }),
		}, nil, nil},
		{"no id", []*ChangeHandler{handler("", causes.Create)}, nil,
			[]string{"KopfExample: a handler has no id"}},
		{"the same id twice for a cause", []*ChangeHandler{handler("fn", causes.Create), handler("fn", causes.Create)}, nil,
			[]string{`KopfExample: handler id "fn" is registered twice for the same cause`}},
		{"the same id twice for a cause, with another cause between", []*ChangeHandler{
			handler("fn", causes.Create), handler("fn", causes.Update), handler("fn", causes.Create),
		}, nil,
			[]string{`KopfExample: handler id "fn" is registered twice for the same cause`}},
		{"value with old/new", []*ChangeHandler{handler("fn", causes.Update, onField("spec.x"), func(h *ChangeHandler) { h.Value, h.New = Present, Present })}, nil,
			[]string{`KopfExample: handler "fn/spec.x": a value filter cannot be combined with old/new filters`}},
		{"old without a field", []*ChangeHandler{handler("fn", causes.Update, func(h *ChangeHandler) { h.Old = Present })}, nil,
			[]string{`KopfExample: handler "fn": value/old/new filters need a field`}},
		{"value without a field", []*ChangeHandler{handler("fn", causes.Create, func(h *ChangeHandler) { h.Value = Equals(1) })}, nil,
			[]string{`KopfExample: handler "fn": value/old/new filters need a field`}},
		{"negative retries", []*ChangeHandler{handler("fn", causes.Create, func(h *ChangeHandler) { h.Retries = -1 })}, nil,
			[]string{`KopfExample: handler "fn": retries, timeout and backoff cannot be negative`}},
		{"negative timeout", []*ChangeHandler{handler("fn", causes.Create, func(h *ChangeHandler) { h.Timeout = negative })}, nil,
			[]string{`KopfExample: handler "fn": retries, timeout and backoff cannot be negative`}},
		{"negative backoff", []*ChangeHandler{handler("fn", causes.Create, func(h *ChangeHandler) { h.Backoff = &negative })}, nil,
			[]string{`KopfExample: handler "fn": retries, timeout and backoff cannot be negative`}},
		{"recorded failures come first, all reported", []*ChangeHandler{handler("", causes.Create)}, []error{errors.New("bad option")},
			[]string{"bad option", "KopfExample: a handler has no id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Registry{Kinds: []*Kind{{GVK: gvk, Changing: tt.handlers}}}
			for _, err := range tt.failed {
				r.Fail(err)
			}
			err := r.Validate()
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() -want +got:\n%s", diff)
			}
		})
	}
}

func TestValidateKeepsFailedErrors(t *testing.T) {
	sentinel := errors.New("sentinel")
	r := &Registry{}
	r.Fail(sentinel)
	if err := r.Validate(); !errors.Is(err, sentinel) {
		t.Errorf("Validate() = %v, want it to wrap the recorded error", err)
	}
	if err := (&Registry{}).Validate(); err != nil {
		t.Errorf("Validate() of an empty registry = %v", err)
	}
}

func TestKindExtraFieldsAndIDs(t *testing.T) {
	kind := &Kind{Changing: []*ChangeHandler{
		handler("create_fn", causes.Create),
		handler("fn", "", onField("status.phase")),
		handler("fn", causes.Update),
		handler("fn", "", resume),
		handler("other", "", onField("spec.field")),
	}}
	wantFields := []fields.Path{{"status", "phase"}, {"spec", "field"}}
	if diff := cmp.Diff(wantFields, kind.ExtraFields()); diff != "" {
		t.Errorf("ExtraFields() -want +got:\n%s", diff)
	}
	wantIDs := []string{"create_fn", "fn/status.phase", "fn", "other/spec.field"}
	if diff := cmp.Diff(wantIDs, kind.IDs()); diff != "" {
		t.Errorf("IDs() -want +got:\n%s", diff)
	}
	if got := (&Kind{}).ExtraFields(); got != nil {
		t.Errorf("ExtraFields() of no handlers = %v", got)
	}
}
