package admission

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
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

func managedRegistry() *Registry {
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "plain", nil)
	c.add(k, Validating, "keep", nil, func(h *Handler) { h.Persistent = true })
	c.add(k, Mutating, "mutate", nil)
	return reg
}

// names returns the webhooks' names and whether they have rules.
func names(t *testing.T, c client.Client) (validating, mutating []string) {
	t.Helper()
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "auto.kopf.dev"}, v); err != nil {
		return nil, nil
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "auto.kopf.dev"}, m); err != nil {
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
func run(m *Managed) func() error {
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
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestManagedConfigurations(t *testing.T) {
	defer goleak.VerifyNone(t)
	// A configuration that exists already keeps what is not its webhooks.
	existing := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "auto.kopf.dev", Labels: map[string]string{"mine": "yes"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "stale.auto.kopf.dev",
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}},
	}
	c := fake.NewClientBuilder().WithObjects(existing).Build()
	var readyCalls atomic.Int32
	m := &Managed{
		Config:   Config{Name: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}},
		Registry: managedRegistry(), Client: c, Mapper: kexMapper(0), Logger: logr.Discard(),
		Ready: func() error {
			if readyCalls.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		},
	}
	stop := run(m)
	eventually(t, "the webhooks", func() bool {
		v, mu := names(t, c)
		return len(v) == 2 && len(mu) == 1
	})
	if readyCalls.Load() < 3 {
		t.Errorf("the configurations were written before the server was ready")
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
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "auto.kopf.dev"}, got); err != nil || got.Labels["mine"] != "yes" {
		t.Errorf("labels = %v (%v), want the existing ones kept", got.Labels, err)
	}
}

func TestManagedWaitsForUnknownKinds(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := fake.NewClientBuilder().Build()
	m := &Managed{
		Config:   Config{Name: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}},
		Registry: managedRegistry(), Client: c, Mapper: kexMapper(3), Logger: logr.Discard(), RetryInterval: 10 * time.Millisecond,
	}
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
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "validatingwebhookconfigurations"}, obj.GetName(), errors.New("no"))
		},
	}).Build()
	m := &Managed{
		Config:   Config{Name: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}},
		Registry: managedRegistry(), Client: c, Mapper: kexMapper(0), Logger: logr.Discard(),
	}
	err := m.Start(context.Background())
	if !apierrors.IsForbidden(err) {
		t.Errorf("Start() = %v, want forbidden", err)
	}
}

func TestManagedDoesNothingIfStoppedBeforeReady(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := fake.NewClientBuilder().Build()
	asked := make(chan struct{})
	var once sync.Once
	m := &Managed{
		Config:   Config{Name: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}},
		Registry: managedRegistry(), Client: c, Mapper: kexMapper(0), Logger: logr.Discard(),
		Ready: func() error {
			once.Do(func() { close(asked) })
			return errors.New("never")
		},
	}
	stop := run(m)
	<-asked
	if err := stop(); err != nil {
		t.Errorf("Start() = %v", err)
	}
	if v, mu := names(t, c); v != nil || mu != nil {
		t.Errorf("webhooks %v, %v were written", v, mu)
	}
}
