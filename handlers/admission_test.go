package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	engine "github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

func noop[T any](context.Context, T, *admission.Request) error { return nil }

func TestWebhookRegistration(t *testing.T) {
	reg := NewRegistry()
	kex := ForKind(reg, "kopf.dev", "v1", "KopfExample")
	OnValidate(kex, "validate1", noop[*unstructured.Unstructured])
	OnValidate(kex, "validate2", noop[*unstructured.Unstructured], Field("spec.field"), Value(filter.Equals("not-allowed")),
		Labels{"somelabel": filter.Present}, Annotations{"note": filter.Absent}, Operations(admission.Create, admission.Update),
		Subresource("*"), Persistent(), SideEffects(), IgnoreFailures())
	OnMutate(kex, "mutate1", noop[*unstructured.Unstructured], Labels{"somelabel": filter.Equals("somevalue")},
		Operations(admission.Delete), When(func(*unstructured.Unstructured, *cause.Change) bool { return true }),
		WhenRequest(func(*unstructured.Unstructured, *admission.Request) bool { return true }))
	// The same kind again: the handlers join it.
	OnMutate(ForKind(reg, "kopf.dev", "v1", "KopfExample"), "mutate2", noop[*unstructured.Unstructured])

	if len(reg.webhooks.Kinds) != 1 {
		t.Fatalf("kinds = %d, want 1", len(reg.webhooks.Kinds))
	}
	k := reg.webhooks.Kinds[0]
	if k.GVK != (schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}) {
		t.Errorf("GVK = %v", k.GVK)
	}
	type view struct {
		ID, Type, Subresource                   string
		Operations                              []admission.Operation
		Persistent, SideEffects, IgnoreFailures bool
		Field                                   string
		Labels, Annotations                     []string
		When, WhenRequest, Value                bool
	}
	var got []view
	for _, h := range k.Handlers {
		v := view{ID: h.ID, Type: string(h.Type), Subresource: h.Subresource, Operations: h.Operations, Persistent: h.Persistent,
			SideEffects: h.SideEffects, IgnoreFailures: h.IgnoreFailures, Field: h.Field.String(),
			When: h.When != nil, WhenRequest: h.WhenRequest != nil, Value: h.Value.IsSet()}
		for key := range h.Labels {
			v.Labels = append(v.Labels, key)
		}
		for key := range h.Annotations {
			v.Annotations = append(v.Annotations, key)
		}
		got = append(got, v)
	}
	want := []view{
		{ID: "validate1", Type: "validating"},
		{ID: "validate2/spec.field", Type: "validating", Subresource: "*", Operations: []admission.Operation{"CREATE", "UPDATE"},
			Persistent: true, SideEffects: true, IgnoreFailures: true, Field: "spec.field", Labels: []string{"somelabel"},
			Annotations: []string{"note"}, Value: true},
		{ID: "mutate1", Type: "mutating", Operations: []admission.Operation{"DELETE"}, Labels: []string{"somelabel"}, When: true, WhenRequest: true},
		{ID: "mutate2", Type: "mutating"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handlers -want +got:\n%s", diff)
	}
	if err := reg.webhooks.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if other := NewRegistry(); len(other.webhooks.Kinds) != 0 {
		t.Error("a new registry sees another registry's webhooks")
	}
}

func newManager(t *testing.T) manager.Manager {
	t.Helper()
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func TestSetupWebhooksReportsProblems(t *testing.T) {
	reg := NewRegistry()
	kex := ForKind(reg, "kopf.dev", "v1", "KopfExample")
	OnValidate(kex, "", noop[*unstructured.Unstructured])
	OnMutate(kex, "m", noop[*unstructured.Unstructured], Operations())
	OnMutate(kex, "m", noop[*unstructured.Unstructured])
	OnValidate(For[*notInScheme](reg), "v", noop[*notInScheme])
	err := SetupWebhooksWithManager(newManager(t), reg, WebhookOptions{Managed: "auto.kopf.dev"})
	if err == nil {
		t.Fatal("SetupWebhooksWithManager() = nil, want the problems")
	}
	for _, want := range []string{
		`validating handler "": the id is required`,
		`mutating handler "m": operations must be either unset or non-empty`,
		`mutating handler id "m" is registered twice`,
		`find the kind of *handlers.notInScheme`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// notInScheme is a typed object that the manager's scheme does not know.
type notInScheme struct{ corev1.ConfigMap }

func TestSetupWebhooksWithoutHandlersLeavesTheServerAlone(t *testing.T) {
	ws := &recordingServer{Server: webhook.NewServer(webhook.Options{})}
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, WebhookServer: ws,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	ForKind(reg, "kopf.dev", "v1", "KopfExample")
	if err := SetupWebhooksWithManager(mgr, reg, WebhookOptions{Managed: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{
		URL: ptr.To("https://localhost:9443")}}); err != nil {
		t.Fatal(err)
	}
	if len(ws.registered) != 0 {
		t.Errorf("registered %v, want nothing", ws.registered)
	}
}

// recordingServer records the paths registered on a webhook server.
type recordingServer struct {
	webhook.Server
	registered []string
}

func (s *recordingServer) Register(path string, h http.Handler) {
	s.registered = append(s.registered, path)
	s.Server.Register(path, h)
}

func TestSetupWebhooksServesByID(t *testing.T) {
	reg := NewRegistry()
	cms := For[*corev1.ConfigMap](reg)
	var gotData map[string]string
	OnValidate(cms, "check_data", func(_ context.Context, cm *corev1.ConfigMap, r *admission.Request) error {
		gotData = cm.Data
		if cm.Data["forbidden"] != "" {
			return admission.Error{Message: "forbidden data", Code: 422}
		}
		return nil
	})
	OnMutate(cms, "label", func(_ context.Context, _ *corev1.ConfigMap, r *admission.Request) error {
		r.Patch.SetLabel("kopf.dev/mutated", "yes")
		return nil
	})
	mgr := newManager(t)
	if err := SetupWebhooksWithManager(mgr, reg, WebhookOptions{Path: "/kopf/"}); err != nil {
		t.Fatal(err)
	}
	if err := SetupWebhooksWithManager(mgr, reg, WebhookOptions{Path: "/kopf"}); err == nil {
		t.Error("the same path was registered twice without an error")
	}
	srv := httptest.NewServer(mgr.GetWebhookServer().WebhookMux())
	defer srv.Close()

	review := func(data map[string]string) []byte {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: data}
		raw, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: "u", Operation: admissionv1.Create, UserInfo: authenticationv1.UserInfo{Username: "me"},
				Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
				Object:   kruntime.RawExtension{Raw: raw},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	send := func(path string, body []byte) *admissionv1.AdmissionResponse {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d, %v", resp.StatusCode, err)
		}
		return out.Response
	}

	denied := send("/kopf/check_data", review(map[string]string{"forbidden": "x"}))
	if denied.Allowed || denied.Result == nil || denied.Result.Code != 422 || denied.Result.Message != "forbidden data" {
		t.Errorf("response = %+v, want a denial with 422", denied)
	}
	if gotData["forbidden"] != "x" {
		t.Errorf("the handler got data %v", gotData)
	}
	allowed := send("/kopf/check_data", review(map[string]string{"fine": "x"}))
	if !allowed.Allowed || allowed.Patch != nil {
		t.Errorf("response = %+v, want an admission without a patch (the mutator is not at this id)", allowed)
	}
	mutated := send("/kopf/label", review(nil))
	var ops []engine.Op
	if err := json.Unmarshal(mutated.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	wantOps := []engine.Op{{Op: "add", Path: "/metadata/labels", Value: map[string]any{"kopf.dev/mutated": "yes"}}}
	if diff := cmp.Diff(wantOps, ops, cmpopts.EquateEmpty()); !mutated.Allowed || diff != "" {
		t.Errorf("allowed %v, patch -want +got:\n%s", mutated.Allowed, diff)
	}
}

func TestSetupWebhooksManaged(t *testing.T) {
	reg := NewRegistry()
	OnValidate(ForKind(reg, "kopf.dev", "v1", "KopfExample"), "v", noop[*unstructured.Unstructured])
	err := SetupWebhooksWithManager(newManager(t), reg, WebhookOptions{Managed: "auto.kopf.dev",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://localhost:9443")}})
	if err != nil {
		t.Fatal(err)
	}
}
