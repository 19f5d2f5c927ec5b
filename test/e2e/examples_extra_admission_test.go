package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// extraManaged is the name of the webhook configurations that
// 17-admission keeps, as Kopf's example.
const extraManaged = "auto.kopf.dev"

// TestAdmissionExample runs 17-admission with its webhook server on
// 127.0.0.1 and no certificate, outside a cluster: the operator serves
// with a self-signed one and points the managed webhook configurations at
// itself with its CA, as in development. The configurations apply to
// every KopfExample of the cluster, so this test runs alone (not in
// parallel).
func TestAdmissionExample(t *testing.T) {
	ctx := context.Background()
	// controller-runtime's default certificate directory is under $TMPDIR:
	// an empty one of the test's, so that no certificate is found.
	tmp := t.TempDir()
	// Should the operator not clean up (a failed test kills it), the
	// webhooks would refuse every KopfExample of the later tests. This runs
	// after the operator's own cleanup, which kills it.
	t.Cleanup(func() { extraDeleteWebhooks(t) })

	ns := env.Namespace(t)
	port := extraFreePort(t)
	op := startWithEnv(t, "17-admission", ns, []string{"TMPDIR=" + tmp, "KUBERNETES_SERVICE_HOST="}, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port))
	extraWaitForWebhooks(t, op, []string{"authhook", "validate1", "validate2.spec.field", "validate-subresources"}, []string{"mutate1"})

	warnings := &extraWarnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server starts calling the webhooks a moment after they are
	// configured: until a dry run of "not-allowed" is refused.
	op.waitFor(t, "the API server calls the webhooks", func() bool {
		err := c.Create(ctx, extraAdmissionObject(ns, "kopf-example-probe", "not-allowed", false), client.DryRunAll)
		var status apierrors.APIStatus
		return errors.As(err, &status) && status.Status().Code == 555
	})

	// validate1 refuses "wrong", except on dry runs.
	err = c.Create(ctx, extraAdmissionObject(ns, "kopf-example-wrong", "wrong", false))
	extraCheckDenied(t, err, "validate1."+extraManaged, "Meh! I don't like it. Change the field.", 500)
	if err := c.Create(ctx, extraAdmissionObject(ns, "kopf-example-wrong", "wrong", false), client.DryRunAll); err != nil {
		t.Errorf("a dry run of spec.field 'wrong' is refused: %v", err)
	}

	// validate2 refuses "not-allowed" with a code of its own.
	err = c.Create(ctx, extraAdmissionObject(ns, "kopf-example-not-allowed", "not-allowed", false))
	extraCheckDenied(t, err, "validate2.spec.field."+extraManaged, "I'm too lazy anyway. Go away!", 555)

	// A valid object is admitted, with warnings from two validators.
	warnings.reset()
	plain := extraAdmissionObject(ns, "kopf-example-plain", "value", false)
	if err := c.Create(ctx, plain); err != nil {
		t.Fatalf("create a valid object: %v", err)
	}
	got := warnings.reset()
	want := []string{
		"Accessing as user-agent: kube-apiserver-admission",
		"Also update status.field to match spec.field: 'value' != None",
		"SSL peer is not identified.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the warnings of a valid creation (-want +got):\n%s", diff)
	}
	// mutate1 injects its field into labelled objects only.
	if _, found, _ := unstructured.NestedFieldNoCopy(plain.Object, "spec", "injected"); found {
		t.Errorf("the unlabelled object got spec.injected: %v", plain.Object["spec"])
	}
	labelled := extraAdmissionObject(ns, "kopf-example-labelled", "value", true)
	if err := c.Create(ctx, labelled); err != nil {
		t.Fatalf("create a labelled object: %v", err)
	}
	if injected, _, _ := unstructured.NestedFieldNoCopy(labelled.Object, "spec", "injected"); injected != int64(123) {
		t.Errorf("the labelled object's spec.injected is %#v, want 123", injected)
	}

	// validate_subresources checks /status too.
	status := []byte(`{"status": {"field": "other"}}`)
	err = c.Status().Patch(ctx, plain, client.RawPatch(types.MergePatchType, status))
	extraCheckDenied(t, err, "validate-subresources."+extraManaged, "status.field MUST be equal to spec.field!", 500)
	status = []byte(`{"status": {"field": "value"}}`)
	if err := c.Status().Patch(ctx, plain, client.RawPatch(types.MergePatchType, status)); err != nil {
		t.Errorf("a status that matches the spec is refused: %v", err)
	}

	op.stop(t)
	// Only persistent webhooks stay; the example has none.
	for _, config := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
	} {
		if names := extraWebhookNames(t, config); len(names) > 0 {
			t.Errorf("%T keeps the webhooks %q after the exit", config, names)
		}
	}
	extraCheckLines(t, op, map[string]int{"Cleaning up the admission webhooks auto.kopf.dev.": 1})
	// Each denial is a handler's permanent failure, logged as an error, as
	// in Kopf: the dry run that found the webhooks active, "wrong",
	// "not-allowed", and the status.
	extraCheckOutcomes(t, op, nil, map[string]int{"validate1": 1, "validate2/spec.field": 2, "validate_subresources": 1})
	extraCheckCleanLog(t, op, 4)
}

// extraAdmissionObject is a KopfExample with spec.field, labelled as
// mutate1's filter wants if labelled.
func extraAdmissionObject(namespace, name, field string, labelled bool) *unstructured.Unstructured {
	obj := newObject()
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.Object["spec"] = map[string]any{"field": field}
	if labelled {
		obj.SetLabels(map[string]string{"somelabel": "somevalue"})
	}
	return obj
}

// extraCheckDenied asserts that a webhook denied the request with the message
// and the code.
func extraCheckDenied(t *testing.T, err error, webhook, message string, code int32) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Errorf("want a denial by %s, got %v", webhook, err)
		return
	}
	want := fmt.Sprintf("admission webhook %q denied the request: %s", webhook, message)
	if got := status.Status(); !strings.Contains(got.Message, want) || got.Code != code {
		t.Errorf("the denial is %d %q, want %d with %q", got.Code, got.Message, code, want)
	}
}

// extraWaitForWebhooks waits until the managed configurations list the
// webhooks, named after the handlers.
func extraWaitForWebhooks(t *testing.T, op *operator, validating, mutating []string) {
	t.Helper()
	names := func(ids []string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = id + "." + extraManaged
		}
		slices.Sort(out)
		return out
	}
	var got [2][]string
	defer func() {
		if t.Failed() {
			t.Logf("the webhooks configured: validating %q, mutating %q", got[0], got[1])
		}
	}()
	op.waitFor(t, "the webhooks are configured", func() bool {
		got[0] = extraWebhookNames(t, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		got[1] = extraWebhookNames(t, &admissionregistrationv1.MutatingWebhookConfiguration{})
		return cmp.Equal(names(validating), got[0]) && cmp.Equal(names(mutating), got[1])
	})
}

// extraWebhookNames returns the sorted names of the webhooks in the managed
// configuration of config's type; none if it does not exist.
func extraWebhookNames(t *testing.T, config client.Object) []string {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: extraManaged}, config)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get the webhook configuration: %v", err)
	}
	var names []string
	switch c := config.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			names = append(names, w.Name)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			names = append(names, w.Name)
		}
	}
	slices.Sort(names)
	return names
}

// extraDeleteWebhooks deletes the managed configurations, and waits
// until the API server has stopped calling the webhooks, so that the
// later tests' objects are not refused for want of a webhook server.
func extraDeleteWebhooks(t *testing.T) {
	ctx := context.Background()
	for _, config := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
	} {
		config.SetName(extraManaged)
		if err := env.Client.Delete(ctx, config); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete the webhook configuration %T: %v", config, err)
		}
	}
	// A dry run in "default", which outlives the test's namespace.
	probe := extraAdmissionObject("default", "kopf-e2e-17-after", "not-allowed", false)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll) == nil, nil
	})
	if err != nil {
		t.Errorf("the API server still calls the webhooks %s after %s", extraManaged, waitTimeout)
	}
}

// extraWarnings collects the warnings of the API server's responses.
type extraWarnings struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeaderWithContext collects one warning.
func (w *extraWarnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// reset returns the warnings so far, sorted, and forgets them.
func (w *extraWarnings) reset() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	slices.Sort(out)
	return out
}
