package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/fields"
)

func TestResponses(t *testing.T) {
	setField := func(r *Request) error { r.Patch.Set(123, "spec", "injected"); return nil }
	tests := []struct {
		name      string
		handlers  func(c *calls, k *Kind)
		want      *admissionv1.AdmissionResponse
		wantPatch []Op
	}{
		{"no handlers", func(*calls, *Kind) {}, &admissionv1.AdmissionResponse{UID: "uid1", Allowed: true}, nil},
		{"a validator that admits", func(c *calls, k *Kind) { c.add(k, Validating, "v", nil) },
			&admissionv1.AdmissionResponse{UID: "uid1", Allowed: true}, nil},
		{"an admission error with a code", func(c *calls, k *Kind) {
			c.add(k, Validating, "v", func(*Request) error { return Error{Message: "I'm too lazy anyway. Go away!", Code: 555} })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Result: &metav1.Status{Message: "I'm too lazy anyway. Go away!", Code: 555}}, nil},
		{"any error denies, with 500", func(c *calls, k *Kind) {
			c.add(k, Mutating, "m", func(*Request) error { return errors.New("No!") })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Result: &metav1.Status{Message: "No!", Code: 500}}, nil},
		{"a panic denies", func(c *calls, k *Kind) {
			c.add(k, Validating, "v", func(*Request) error { panic("boom") })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Result: &metav1.Status{Message: PanicMessage, Code: 500}}, nil},
		{"all handlers run; the best error wins", func(c *calls, k *Kind) {
			c.add(k, Validating, "v1", func(*Request) error { return execution.NewTemporaryError("temporary", 0) })
			c.add(k, Validating, "v2", func(*Request) error { return &Error{Message: "admission", Code: 409} })
			c.add(k, Validating, "v3", func(*Request) error { return execution.NewPermanentError("permanent") })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Result: &metav1.Status{Message: "admission", Code: 409}}, nil},
		{"warnings of all handlers, in order", func(c *calls, k *Kind) {
			c.add(k, Validating, "v", func(r *Request) error { r.Warn("oops!"); return nil })
			c.add(k, Mutating, "m", func(r *Request) error { r.Warn("again"); r.Warn("and again"); return nil })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Allowed: true, Warnings: []string{"oops!", "again", "and again"}}, nil},
		{"warnings of failing handlers too", func(c *calls, k *Kind) {
			c.add(k, Validating, "v", func(r *Request) error { r.Warn("oops!"); return errors.New("No!") })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Warnings: []string{"oops!"}, Result: &metav1.Status{Message: "No!", Code: 500}}, nil},
		{"a mutator's patch", func(c *calls, k *Kind) {
			c.add(k, Mutating, "m", func(r *Request) error {
				r.Patch.Set("added", "xyz")
				r.Patch.Set("replaced", "spec", "field")
				return nil
			})
		}, &admissionv1.AdmissionResponse{UID: "uid1", Allowed: true}, []Op{
			{Op: "replace", Path: "/spec/field", Value: "replaced"},
			{Op: "add", Path: "/xyz", Value: "added"},
		}},
		{"the mutators' patches together", func(c *calls, k *Kind) {
			c.add(k, Mutating, "m1", setField)
			c.add(k, Mutating, "m2", func(r *Request) error { r.Patch.SetLabel("kopf.dev/mutated", "yes"); return nil })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Allowed: true}, []Op{
			{Op: "add", Path: "/metadata/labels/kopf.dev~1mutated", Value: "yes"},
			{Op: "add", Path: "/spec/injected", Value: 123},
		}},
		{"a validator's patch is ignored", func(c *calls, k *Kind) { c.add(k, Validating, "v", setField) },
			&admissionv1.AdmissionResponse{UID: "uid1", Allowed: true}, nil},
		{"a patch that changes nothing is left out", func(c *calls, k *Kind) {
			c.add(k, Mutating, "m", func(r *Request) error { r.Patch.Set("value", "spec", "field"); return nil })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Allowed: true}, nil},
		{"a patch that is not JSON denies", func(c *calls, k *Kind) {
			c.add(k, Mutating, "m", func(r *Request) error { r.Patch.Set(func() {}, "spec", "fn"); return nil })
		}, &admissionv1.AdmissionResponse{UID: "uid1", Result: &metav1.Status{
			Message: "encode the patch: json: unsupported type: func()", Code: 500}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, k := kexKind()
			tt.handlers(&calls{}, k)
			resp, err := Review(context.Background(), reg, nil, Input{Request: admissionRequest(t, Create, kexBody(), nil)})
			if err != nil {
				t.Fatal(err)
			}
			var gotPatch []Op
			if resp.Patch != nil {
				if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
					t.Errorf("PatchType = %v, want JSONPatch", resp.PatchType)
				}
				if err := json.Unmarshal(resp.Patch, &gotPatch); err != nil {
					t.Fatal(err)
				}
				resp.Patch, resp.PatchType = nil, nil
			}
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(deepJSON(t, tt.wantPatch), deepJSON(t, gotPatch)); diff != "" {
				t.Errorf("patch -want +got:\n%s", diff)
			}
		})
	}
}

func TestRequestPassedToHandlers(t *testing.T) {
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "v", nil)
	c.add(k, Mutating, "m", func(r *Request) error { r.Patch.Set(1, "spec", "x"); r.Warn("w"); return nil })
	old := kexBody()
	old["spec"] = m{"field": "old"}
	req := admissionRequest(t, Update, kexBody(), old)
	req.DryRun = ptr.To(true)
	req.SubResource = ""
	headers := http.Header{"X": {"123"}}
	if _, err := Review(context.Background(), reg, nil, Input{Request: req, Headers: headers}); err != nil {
		t.Fatal(err)
	}
	if len(c.reqs) != 2 {
		t.Fatalf("called %v, want v and m", c.ids)
	}
	r := c.reqs[0]
	want := &Request{
		HandlerID: "v", Type: Validating, UID: "uid1", Operation: Update, DryRun: true,
		UserInfo: req.UserInfo, Resource: schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"},
		Name: "name1", Namespace: "ns1", Body: kexBody(), Old: old, New: kexBody(),
		Diff:    diff.Diff{{Op: diff.Change, Field: fields.Path{"spec", "field"}, Old: "old", New: "value"}},
		Headers: headers,
	}
	got := *r
	got.Patch = nil
	if d := cmp.Diff(want, &got); d != "" {
		t.Errorf("request -want +got:\n%s", d)
	}
	if r.Patch == c.reqs[1].Patch || !r.Patch.IsEmpty() {
		t.Error("handlers share a patch, or the validator sees the mutator's changes")
	}
	if len(c.reqs[0].Warnings) != 0 {
		t.Errorf("the validator sees the mutator's warnings: %v", c.reqs[0].Warnings)
	}
	u, ok := c.objs[0].(*unstructured.Unstructured)
	if !ok || u.GetName() != "name1" || u.GetLabels()["somelabel"] != "somevalue" {
		t.Errorf("object = %#v, want the new body", c.objs[0])
	}
}

// The object is decoded once per review. Validators share it; a mutator
// gets a copy of its own, so that a change it makes to its object is seen
// by no other handler, nor in the request's bodies. Unstructured objects
// are the request's body itself; a typed object is separate from it, so
// a mutator that runs last takes the shared one.
func TestObjectsOfHandlers(t *testing.T) {
	tests := []struct {
		name  string
		types []Type
		// want is, for each handler in order, the index of the first
		// handler given the same object: unstructured, and typed.
		want, wantTyped []int
	}{
		{"validators share one object", []Type{Validating, Validating, Validating}, []int{0, 0, 0}, []int{0, 0, 0}},
		{"a mutator alone", []Type{Mutating}, []int{0}, []int{0}},
		{"a mutator last", []Type{Validating, Mutating}, []int{0, 1}, []int{0, 0}},
		{"a mutator first", []Type{Mutating, Validating}, []int{0, 1}, []int{0, 1}},
		// With a mutator among them, unstructured validators get copies
		// too: the bodies are the JSONPatch's base.
		{"several mutators", []Type{Mutating, Validating, Mutating, Mutating, Validating, Mutating},
			[]int{0, 1, 2, 3, 4, 5}, []int{0, 1, 2, 3, 1, 1}},
	}
	typed := func() (*Registry, *Kind, *admissionv1.AdmissionRequest) {
		k := &Kind{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), NewObject: func() registry.Object { return &corev1.ConfigMap{} }}
		req := admissionRequest(t, Create, m{"apiVersion": "v1", "kind": "ConfigMap", "metadata": m{"name": "cm", "labels": m{"a": "b"}}}, nil)
		req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
		req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		return &Registry{Kinds: []*Kind{k}}, k, req
	}
	unstructuredKind := func() (*Registry, *Kind, *admissionv1.AdmissionRequest) {
		reg, k := kexKind()
		return reg, k, admissionRequest(t, Create, kexBody(), nil)
	}
	for _, tt := range tests {
		for _, kind := range []struct {
			name string
			make func() (*Registry, *Kind, *admissionv1.AdmissionRequest)
			want []int
		}{{"unstructured", unstructuredKind, tt.want}, {"typed", typed, tt.wantTyped}} {
			t.Run(tt.name+"/"+kind.name, func(t *testing.T) {
				reg, k, req := kind.make()
				c := &calls{}
				var changed []string
				for i, typ := range tt.types {
					id := fmt.Sprintf("h%d", i)
					c.add(k, typ, id, func(r *Request) error {
						obj := c.objs[len(c.objs)-1]
						bodyLabels := r.Body["metadata"].(map[string]any)["labels"].(map[string]any)
						if v := obj.GetLabels()["changed-by"]; v != "" || bodyLabels["changed-by"] != nil {
							changed = append(changed, fmt.Sprintf("%s sees the change of %s%v", id, v, bodyLabels["changed-by"]))
						}
						if typ == Mutating { // by mistake: changes go into the patch
							obj.SetLabels(map[string]string{"changed-by": id})
						}
						return nil
					})
				}
				resp, err := Review(context.Background(), reg, nil, Input{Request: req})
				if err != nil {
					t.Fatal(err)
				}
				got := make([]int, len(c.objs))
				for i, obj := range c.objs {
					got[i] = slices.Index(c.objs, obj)
				}
				if diff := cmp.Diff(kind.want, got); diff != "" {
					t.Errorf("the handlers' objects, as the index of the first handler with the same (-want +got):\n%s", diff)
				}
				if len(changed) > 0 {
					t.Errorf("a mutator's change to its object is seen: %q", changed)
				}
				if resp.Patch != nil {
					t.Errorf("the response patches %s; want no patch, as no handler patched", resp.Patch)
				}
			})
		}
	}
}

func TestRequestOnCreateAndDelete(t *testing.T) {
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "v", nil)
	for _, op := range []Operation{Create, Delete} {
		obj, old := kexBody(), map[string]any(nil)
		if op == Delete {
			obj, old = nil, kexBody()
		}
		if _, err := Review(context.Background(), reg, nil, Input{Request: admissionRequest(t, op, obj, old)}); err != nil {
			t.Fatal(err)
		}
	}
	create, del := c.reqs[0], c.reqs[1]
	if create.Old != nil || create.New == nil || len(create.Diff) != 1 || create.Diff[0].Op != diff.Add || len(create.Diff[0].Field) != 0 {
		t.Errorf("creation: old %v, new %v, diff %v; want no old, a new, one addition at the root", create.Old, create.New, create.Diff)
	}
	if del.New != nil || del.Old == nil || fields.Equal(del.Body, kexBody()) != true || len(del.Diff) != 1 || del.Diff[0].Op != diff.Remove {
		t.Errorf("deletion: old %v, new %v, body %v, diff %v; want the old body, removed", del.Old, del.New, del.Body, del.Diff)
	}
	if create.Headers == nil {
		t.Error("headers are nil, want an empty map")
	}
}

func TestTypedObjects(t *testing.T) {
	var got *corev1.ConfigMap
	k := &Kind{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), NewObject: func() registry.Object { return &corev1.ConfigMap{} }}
	k.Handlers = []*Handler{{ID: "v", Type: Validating, Fn: func(_ context.Context, obj registry.Object, _ *Request) error {
		got = obj.(*corev1.ConfigMap)
		return nil
	}}}
	req := admissionRequest(t, Create, m{"apiVersion": "v1", "kind": "ConfigMap", "metadata": m{"name": "cm"}, "data": m{"a": "b"}}, nil)
	req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := Review(context.Background(), &Registry{Kinds: []*Kind{k}}, nil, Input{Request: req}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Name != "cm" || got.Data["a"] != "b" {
		t.Errorf("object = %#v, want the decoded ConfigMap", got)
	}
	req.Object = raw(t, m{"metadata": m{"name": 1}})
	if _, err := Review(context.Background(), &Registry{Kinds: []*Kind{k}}, nil, Input{Request: req}); err == nil {
		t.Error("Review() decoded a ConfigMap with a numeric name")
	}
}

func TestBadReviews(t *testing.T) {
	reg, k := kexKind()
	(&calls{}).add(k, Validating, "v", nil)
	other := &Kind{GVK: schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "Other"}}
	twice := &Registry{Kinds: []*Kind{k, {GVK: kexGVK, NewObject: k.NewObject}}}
	tests := []struct {
		name   string
		reg    *Registry
		modify func(*admissionv1.AdmissionRequest)
		want   func(error) bool
	}{
		{"no user", reg, func(r *admissionv1.AdmissionRequest) {
			r.UserInfo.Username, r.UserInfo.UID, r.UserInfo.Groups = "", "", nil
		},
			isA[*MissingDataError]},
		{"no object", reg, func(r *admissionv1.AdmissionRequest) { r.Object = raw(t, nil) }, isA[*MissingDataError]},
		{"an unknown resource", &Registry{Kinds: []*Kind{other}}, func(*admissionv1.AdmissionRequest) {}, isA[*UnknownResourceError]},
		{"an ambiguous resource", twice, func(*admissionv1.AdmissionRequest) {}, isA[*AmbiguousResourceError]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := admissionRequest(t, Create, kexBody(), nil)
			tt.modify(req)
			_, err := Review(context.Background(), tt.reg, nil, Input{Request: req})
			if !tt.want(err) {
				t.Errorf("Review() = %v, want another error", err)
			}
		})
	}
}

func TestKindsByResourceThroughTheMapper(t *testing.T) {
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "v", nil, func(h *Handler) { h.Subresource = "scale" })
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(kexGVK, meta.RESTScopeNamespace)
	req := admissionRequest(t, Update, kexBody(), kexBody())
	// A scale subresource's kind is not the object's; its resource is.
	req.SubResource = "scale"
	req.Kind = metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	if _, err := Review(context.Background(), reg, nil, Input{Request: req}); err == nil {
		t.Error("without a mapper, a Scale was taken for a KopfExample")
	}
	if _, err := Review(context.Background(), reg, mapper, Input{Request: req}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v"}, c.IDs()); diff != "" {
		t.Errorf("called -want +got:\n%s", diff)
	}
}

// isA reports whether err's chain has a T.
func isA[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}
