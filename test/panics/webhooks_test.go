package panics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/testenv"
)

// managed names the operator's webhook configurations (operator.managed).
const managed = "panics.kopf.dev"

// panicMessage is what the API client learns of a handler's panic
// (admission.PanicMessage).
const panicMessage = "Internal error in an admission handler (see the operator's log)."

// TestWebhookPanics runs the operator's admission handlers behind the API
// server: a validating handler that panics denies the request with a
// message that tells nothing of the panic, and its stack goes to the log;
// a handler whose filter panics is not called, and the request is denied
// in the same way (fail closed); both panics are counted, and the other
// requests are served.
// The webhook configurations apply to every KopfExample of the cluster,
// so this test runs alone (not in parallel).
func TestWebhookPanics(t *testing.T) {
	ctx := context.Background()
	t.Cleanup(func() { deleteWebhooks(t) }) // after the operator's kill
	ns := env.Namespace(t)
	host, port, _ := strings.Cut(testenv.FreeAddress(t), ":")
	op := startOperator(t, ns, []string{"--webhooks"},
		"--webhook-host="+host, "--webhook-port="+port, "--webhook-self-signed")
	op.waitFor(t, "the webhooks are configured", func() bool {
		config := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: managed}, config); err != nil {
			return false
		}
		var names []string
		for _, w := range config.Webhooks {
			names = append(names, w.Name)
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"validate-when." + managed, "validate." + managed})
	})

	trigger := example(ns, "trigger-webhook", "webhook")
	// The API server calls the webhooks a moment after they are
	// configured: until a dry run of the trigger is denied by them.
	op.waitFor(t, "the API server calls the webhooks", func() bool {
		err := env.Client.Create(ctx, trigger.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "denied the request")
	})
	err := env.Client.Create(ctx, trigger.DeepCopy())
	var status apierrors.APIStatus
	want := fmt.Sprintf("admission webhook %q denied the request: %s", "validate."+managed, panicMessage)
	switch {
	case !errors.As(err, &status):
		t.Errorf("the panicking handler's object: %v, want a denial", err)
	case !strings.Contains(status.Status().Message, want) || status.Status().Code != 500:
		t.Errorf("the denial is %d %q, want 500 with %q", status.Status().Code, status.Status().Message, want)
	case strings.Contains(status.Status().Message, "is broken"):
		t.Errorf("the denial tells the panic's value: %q", status.Status().Message)
	}
	op.panicLogged(t, "Handler 'validate' failed with an exception and will stop now: panic: webhook of trigger-webhook is broken", trigger.GetName())
	op.panicCounted(t, "webhook", "validate")

	filtered := example(ns, "trigger-webhook-filter", "webhook-filter")
	err = env.Client.Create(ctx, filtered)
	want = fmt.Sprintf("admission webhook %q denied the request: %s", "validate-when."+managed, panicMessage)
	switch {
	case !errors.As(err, &status):
		t.Errorf("the object whose filter panics: %v, want a denial", err)
	case !strings.Contains(status.Status().Message, want) || status.Status().Code != 500:
		t.Errorf("the denial is %d %q, want 500 with %q", status.Status().Code, status.Status().Message, want)
	}
	op.panicLogged(t, "Handler 'validate_when' is not called: its filter panicked, and the request is denied: panic: webhook-filter of trigger-webhook-filter is broken", filtered.GetName())
	op.panicCounted(t, "filter", "validate_when")

	if err := env.Client.Create(ctx, example(ns, "plain-webhook", "")); err != nil {
		t.Errorf("a plain object is refused: %v", err)
	}
	if op.Exited() {
		t.Fatalf("the operator exited: %v", op.Err())
	}
}

// deleteWebhooks removes the operator's webhook configurations, should a
// killed operator have left them: they would refuse the later tests'
// objects.
func deleteWebhooks(t *testing.T) {
	for _, config := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
	} {
		config.SetName(managed)
		if err := env.Client.Delete(context.Background(), config); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete the webhook configuration %T: %v", config, err)
		}
	}
}
