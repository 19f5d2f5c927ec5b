package admission

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/fields"
)

func TestSelectionByTypeAndID(t *testing.T) {
	tests := []struct {
		name string
		hint Hint
		want []string
	}{
		{"no hint: all", Hint{}, []string{"v:fnX", "v:fn2", "m:fn3", "m:fnX"}},
		{"by id: both types", Hint{ID: "fnX"}, []string{"v:fnX", "m:fnX"}},
		{"by type", Hint{Type: Mutating}, []string{"m:fn3", "m:fnX"}},
		{"by type and id", Hint{Type: Validating, ID: "fnX"}, []string{"v:fnX"}},
		{"an unknown id: none", Hint{ID: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, k := kexKind()
			c := &calls{}
			c.add(k, Validating, "fnX", nil)
			c.add(k, Validating, "fn2", nil)
			c.add(k, Mutating, "fn3", nil)
			c.add(k, Mutating, "fnX", nil)
			resp, err := Review(context.Background(), reg, nil, Input{Request: admissionRequest(t, Create, kexBody(), nil), Hint: tt.hint})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Allowed {
				t.Errorf("not allowed: %v", resp.Result)
			}
			var got []string
			c.mu.Lock()
			for _, r := range c.reqs {
				got = append(got, string(r.Type)[:1]+":"+r.HandlerID)
			}
			c.mu.Unlock()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("called -want +got:\n%s", diff)
			}
		})
	}
}

func TestMutatorsAndDeletion(t *testing.T) {
	tests := []struct {
		name      string
		operation Operation
		ops       []Operation
		want      []string
	}{
		{"create", Create, nil, []string{"validate", "mutate"}},
		{"update", Update, nil, []string{"validate", "mutate"}},
		{"connect", Connect, nil, []string{"validate", "mutate"}},
		{"anything else", "*WHATEVER*", nil, []string{"validate", "mutate"}},
		{"delete: mutators skipped by default", Delete, nil, []string{"validate"}},
		{"delete: mutators for DELETE only are called", Delete, []Operation{Delete}, []string{"validate", "mutate"}},
		{"delete: DELETE among others is not enough", Delete, []Operation{Delete, Create}, []string{"validate"}},
		{"operations are not checked when serving", Update, []Operation{Create}, []string{"validate", "mutate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, k := kexKind()
			c := &calls{}
			c.add(k, Validating, "validate", nil, func(h *Handler) { h.Operations = tt.ops })
			c.add(k, Mutating, "mutate", nil, func(h *Handler) { h.Operations = tt.ops })
			obj, old := kexBody(), kexBody()
			if tt.operation == Delete {
				obj = nil
			}
			if _, err := Review(context.Background(), reg, nil, Input{Request: admissionRequest(t, tt.operation, obj, old)}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.IDs()); diff != "" {
				t.Errorf("called -want +got:\n%s", diff)
			}
		})
	}
}

func TestSubresources(t *testing.T) {
	tests := []struct {
		handler, request string
		want             int
	}{
		{"*", "no", 1},
		{"*", "sb", 1},
		{"*", "", 1},
		{"sb", "no", 0},
		{"sb", "sb", 1},
		{"sb", "", 0},
		{"", "no", 0},
		{"", "sb", 0},
		{"", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.handler+" for "+tt.request, func(t *testing.T) {
			reg, k := kexKind()
			c := &calls{}
			c.add(k, Validating, "v", nil, func(h *Handler) { h.Subresource = tt.handler })
			c.add(k, Mutating, "m", nil, func(h *Handler) { h.Subresource = tt.handler })
			req := admissionRequest(t, Update, kexBody(), kexBody())
			req.SubResource = tt.request
			if _, err := Review(context.Background(), reg, nil, Input{Request: req}); err != nil {
				t.Fatal(err)
			}
			if got := len(c.IDs()); got != 2*tt.want {
				t.Errorf("called %d handlers, want %d", got, 2*tt.want)
			}
			for _, r := range c.reqs {
				if r.Subresource != tt.request {
					t.Errorf("Subresource = %q, want %q", r.Subresource, tt.request)
				}
			}
		})
	}
}

func TestFilters(t *testing.T) {
	var seenCause *causes.Cause
	var seenRequest *Request
	tests := []struct {
		name    string
		filters registry.Filters
		when    func(registry.Object, *Request) bool
		want    bool
	}{
		{"none", registry.Filters{}, nil, true},
		{"label value", registry.Filters{Labels: map[string]registry.Filter{"somelabel": registry.Equals("somevalue")}}, nil, true},
		{"other label value", registry.Filters{Labels: map[string]registry.Filter{"somelabel": registry.Equals("other")}}, nil, false},
		{"label present", registry.Filters{Labels: map[string]registry.Filter{"somelabel": registry.Present}}, nil, true},
		{"label absent", registry.Filters{Labels: map[string]registry.Filter{"somelabel": registry.Absent}}, nil, false},
		{"label callable", registry.Filters{Labels: map[string]registry.Filter{"x": registry.Check(func(v any) bool { return v == nil })}}, nil, true},
		{"annotation", registry.Filters{Annotations: map[string]registry.Filter{"note": registry.Equals("x")}}, nil, true},
		{"annotation mismatch", registry.Filters{Annotations: map[string]registry.Filter{"note": registry.Equals("y")}}, nil, false},
		{"field present", registry.Filters{Field: fields.Parse("spec.field")}, nil, true},
		{"field absent", registry.Filters{Field: fields.Parse("spec.nope")}, nil, false},
		{"field value", registry.Filters{Field: fields.Parse("spec.field"), Value: registry.Equals("value")}, nil, true},
		{"field other value", registry.Filters{Field: fields.Parse("spec.field"), Value: registry.Equals("not-allowed")}, nil, false},
		{"field absent by filter", registry.Filters{Field: fields.Parse("spec.nope"), Value: registry.Absent}, nil, true},
		{"when, true", registry.Filters{When: func(_ registry.Object, c *causes.Cause) bool { seenCause = c; return true }}, nil, true},
		{"when, false", registry.Filters{When: func(registry.Object, *causes.Cause) bool { return false }}, nil, false},
		{"when request, true", registry.Filters{}, func(_ registry.Object, r *Request) bool { seenRequest = r; return r.Operation == Update }, true},
		{"when request, false", registry.Filters{}, func(_ registry.Object, r *Request) bool { return r.DryRun }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, k := kexKind()
			c := &calls{}
			c.add(k, Validating, "v", nil, func(h *Handler) { h.Filters = tt.filters; h.WhenRequest = tt.when })
			old := kexBody()
			old["spec"] = m{"field": "old"}
			if _, err := Review(context.Background(), reg, nil, Input{Request: admissionRequest(t, Update, kexBody(), old)}); err != nil {
				t.Fatal(err)
			}
			if got := len(c.IDs()) == 1; got != tt.want {
				t.Errorf("called = %v, want %v", got, tt.want)
			}
		})
	}
	if seenCause == nil || seenCause.Reason != causes.Update || seenCause.HandlerID != "v" || len(seenCause.Diff) != 1 {
		t.Errorf("when got the cause %+v; want reason update, the id and the diff", seenCause)
	}
	if seenRequest == nil || seenRequest.HandlerID != "v" {
		t.Errorf("when request got %+v; want the handler's request", seenRequest)
	}
}

func TestFiltersOnDeletionTestTheOldBody(t *testing.T) {
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "v", nil, func(h *Handler) {
		h.Labels = map[string]registry.Filter{"somelabel": registry.Equals("somevalue")}
		h.Field, h.Value = fields.Parse("spec.field"), registry.Equals("value")
	})
	if _, err := Review(context.Background(), reg, nil, Input{Request: admissionRequest(t, Delete, nil, kexBody())}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v"}, c.IDs()); diff != "" {
		t.Errorf("called -want +got:\n%s", diff)
	}
}

func TestIDFromPath(t *testing.T) {
	tests := []struct {
		path, prefix string
		want         string
		ok           bool
	}{
		{"/fn", "", "fn", true},
		{"/fn/spec.field", "", "fn/spec.field", true},
		{"/", "", "", true},
		{"/hooks/fn", "/hooks", "fn", true},
		{"/hooks/fn", "/hooks/", "fn", true},
		{"/hooks", "/hooks", "", true},
		{"/hooks/", "/hooks", "", true},
		{"/other/fn", "/hooks", "", false},
		{"/hooksfn", "/hooks", "", false},
	}
	for _, tt := range tests {
		got, ok := idFromPath(tt.path, tt.prefix)
		if got != tt.want || ok != tt.ok {
			t.Errorf("idFromPath(%q, %q) = %q, %v; want %q, %v", tt.path, tt.prefix, got, ok, tt.want, tt.ok)
		}
	}
}

func TestValidate(t *testing.T) {
	fn := func(context.Context, registry.Object, *Request) error { return nil }
	tests := []struct {
		name     string
		handlers []*Handler
		want     []string
	}{
		{"fine", []*Handler{{ID: "a", Type: Validating, Fn: fn}, {ID: "a", Type: Mutating, Fn: fn, Operations: []Operation{Create}}}, nil},
		{"no id", []*Handler{{Type: Validating, Fn: fn}}, []string{`KopfExample: validating handler "": the id is required`}},
		{"empty operations", []*Handler{{ID: "a", Type: Mutating, Fn: fn, Operations: []Operation{}}},
			[]string{`KopfExample: mutating handler "a": operations must be either unset or non-empty`}},
		{"unknown operation", []*Handler{{ID: "a", Type: Mutating, Fn: fn, Operations: []Operation{"PATCH"}}},
			[]string{`KopfExample: mutating handler "a": unknown operation "PATCH" (want CREATE, UPDATE, DELETE or CONNECT)`}},
		{"value without field", []*Handler{{ID: "a", Type: Validating, Fn: fn, Filters: registry.Filters{Value: registry.Present}}},
			[]string{`KopfExample: validating handler "a": a value filter needs a field`}},
		{"twice", []*Handler{{ID: "a", Type: Validating, Fn: fn}, {ID: "a", Type: Validating, Fn: fn}},
			[]string{`KopfExample: validating handler id "a" is registered twice`}},
		{"no function", []*Handler{{ID: "a", Type: Validating}}, []string{`KopfExample: validating handler "a": no function`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, k := kexKind()
			k.Handlers = tt.handlers
			var got []string
			if err := reg.Validate(); err != nil {
				var joined interface{ Unwrap() []error }
				if errors.As(err, &joined) {
					for _, e := range joined.Unwrap() {
						got = append(got, e.Error())
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() -want +got:\n%s", diff)
			}
		})
	}
}
