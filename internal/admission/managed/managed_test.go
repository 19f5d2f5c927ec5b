package managed

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/admission"
)

// flakyMapper knows the example kind only after a few lookups, like a
// cluster where its CRD is installed a little later.
type flakyMapper struct {
	meta.RESTMapper
	failures atomic.Int32
}

func (f *flakyMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, &meta.NoKindMatchError{GroupKind: gk}
	}
	return f.RESTMapper.RESTMapping(gk, versions...)
}

func kexMapper(failures int32) *flakyMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(kexGVK, meta.RESTScopeNamespace)
	f := &flakyMapper{RESTMapper: m}
	f.failures.Store(failures)
	return f
}

func managedRegistry() *admission.Registry {
	reg, k := kexKind()
	addWebhook(k, admission.Validating, "plain")
	addWebhook(k, admission.Validating, "keep", func(h *admission.Handler) { h.Persistent = true })
	addWebhook(k, admission.Mutating, "mutate")
	return reg
}

// names returns the webhooks' names, each with " (no rules)" if it has
// none; nil if the configurations are absent.
func names(t *testing.T, c *fake.Clientset) (validating, mutating []string) {
	t.Helper()
	ctx := context.Background()
	v, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "auto.kopf.dev", metav1.GetOptions{})
	if err != nil {
		return nil, nil
	}
	m, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "auto.kopf.dev", metav1.GetOptions{})
	if err != nil {
		return nil, nil
	}
	for _, w := range v.Webhooks {
		validating = append(validating, w.Name+ruled(len(w.Rules)))
	}
	for _, w := range m.Webhooks {
		mutating = append(mutating, w.Name+ruled(len(w.Rules)))
	}
	return validating, mutating
}

func ruled(n int) string {
	if n == 0 {
		return " (no rules)"
	}
	return ""
}

// run starts the runnable and returns a function that stops it and
// returns its error.
func run(m *Configurations) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func managed(c *fake.Clientset, mapper meta.RESTMapper) *Configurations {
	return &Configurations{
		Config:    admission.Config{Name: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}},
		Registry:  managedRegistry(),
		Clientset: c, Mapper: mapper, Logger: logr.Discard(),
	}
}

// One process alone (no namespace for Leases): it writes the webhooks once
// the server is ready, keeps what else the configuration has, and leaves
// the persistent webhooks when it stops.
func TestManagedAlone(t *testing.T) {
	defer goleak.VerifyNone(t)
	existing := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "auto.kopf.dev", Labels: map[string]string{"mine": "yes"}},
	}
	c := fake.NewClientset(existing)
	m := managed(c, kexMapper(0))
	var readyCalls atomic.Int32
	m.Ready = func() error {
		if readyCalls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	}
	if m.Serving() == nil {
		t.Errorf("Serving() before the start = nil, want an error")
	}
	stop := run(m)
	eventually(t, "the webhooks", func() bool {
		v, mu := names(t, c)
		return len(v) == 2 && len(mu) == 1
	})
	if readyCalls.Load() < 3 {
		t.Errorf("the configurations were written before the server was ready")
	}
	if err := m.Serving(); err != nil {
		t.Errorf("Serving() = %v once written, want nil", err)
	}
	v, mu := names(t, c)
	if diff := cmp.Diff([]string{"plain.auto.kopf.dev", "keep.auto.kopf.dev"}, v); diff != "" {
		t.Errorf("validating -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mutate.auto.kopf.dev"}, mu); diff != "" {
		t.Errorf("mutating -want +got:\n%s", diff)
	}
	if err := stop(); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	v, mu = names(t, c)
	if diff := cmp.Diff([]string{"keep.auto.kopf.dev"}, v); diff != "" {
		t.Errorf("validating after exit -want +got:\n%s", diff)
	}
	if len(mu) != 0 {
		t.Errorf("mutating after exit = %v, want none", mu)
	}
	got, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), "auto.kopf.dev", metav1.GetOptions{})
	if err != nil || got.Labels["mine"] != "yes" {
		t.Errorf("labels = %v (%v), want the existing ones kept", got.Labels, err)
	}
}

func TestManagedWaitsForUnknownKinds(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := fake.NewClientset()
	m := managed(c, kexMapper(3))
	m.RetryInterval = 10 * time.Millisecond
	stop := run(m)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Start() = %v", err)
		}
	}()
	eventually(t, "rules", func() bool {
		v, _ := names(t, c)
		return cmp.Equal(v, []string{"plain.auto.kopf.dev", "keep.auto.kopf.dev"})
	})
}

func TestManagedFailsWhenForbidden(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := fake.NewClientset()
	c.PrependReactor("patch", "validatingwebhookconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "validatingwebhookconfigurations"}, "auto.kopf.dev", errors.New("no"))
	})
	err := managed(c, kexMapper(0)).Start(context.Background())
	if !apierrors.IsForbidden(err) {
		t.Errorf("Start() = %v, want forbidden", err)
	}
}

func TestManagedDoesNothingIfStoppedBeforeReady(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := fake.NewClientset()
	asked := make(chan struct{})
	var once sync.Once
	m := managed(c, kexMapper(0))
	m.Ready = func() error {
		once.Do(func() { close(asked) })
		return errors.New("never")
	}
	stop := run(m)
	<-asked
	if err := stop(); err != nil {
		t.Errorf("Start() = %v", err)
	}
	if len(c.Actions()) != 0 {
		t.Errorf("the API was called: %v", c.Actions())
	}
}

// toggledMapper knows the example kind, or fails as discovery does for a
// moment.
type toggledMapper struct {
	meta.RESTMapper
	failing bool
}

func (f *toggledMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if f.failing {
		return nil, &meta.NoKindMatchError{GroupKind: gk}
	}
	return f.RESTMapper.RESTMapping(gk, versions...)
}

// A kind whose resource the mapper fails to tell for a moment keeps the
// last known one (its webhooks keep their rules), and the configuration
// counts as incomplete, to be looked at again; one the mapper never knew
// has none.
func TestResourcesKeepTheLastKnown(t *testing.T) {
	mapper := &toggledMapper{RESTMapper: kexMapper(0).RESTMapper}
	reg, k := kexKind()
	m := &Configurations{Registry: reg, Mapper: mapper, Logger: logr.Discard()}
	want := schema.GroupVersionResource{Group: kexGVK.Group, Version: kexGVK.Version, Resource: "kopfexamples"}

	mapper.failing = true
	if _, complete := m.resources(); complete {
		t.Error("complete while the mapper fails")
	}
	if gvr, ok := func() (schema.GroupVersionResource, bool) { r, _ := m.resources(); return r(k) }(); ok {
		t.Errorf("a resource never known = %v, want none", gvr)
	}
	mapper.failing = false
	resources, complete := m.resources()
	if gvr, ok := resources(k); !ok || gvr != want || !complete {
		t.Errorf("resources = %v, %v, complete %v; want %v", gvr, ok, complete, want)
	}
	mapper.failing = true
	resources, complete = m.resources()
	if gvr, ok := resources(k); !ok || gvr != want || complete {
		t.Errorf("while failing: resources = %v, %v, complete %v; want the last known %v, incomplete", gvr, ok, complete, want)
	}
}
