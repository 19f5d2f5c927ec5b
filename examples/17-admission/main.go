// Command 17-admission serves validating and mutating admission webhooks
// for KopfExample objects, and keeps the cluster's webhook configurations
// "auto.kopf.dev" pointing at its webhook server while it runs.
package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/filter"
)

func main() {
	flags, args, err := parseWebhookFlags(os.Args[1:])
	if err == nil {
		err = run(flags, args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the webhooks with the standalone runner until SIGINT or
// SIGTERM. Kopf's example configures its server in a startup handler;
// here the configuration is the runner's options, set before it starts.
func run(flags webhookFlags, args []string) error {
	webhooks, err := flags.webhookOptions()
	if err != nil {
		return err
	}
	return handlers.Run(ctrl.SetupSignalHandler(), registry(), args, handlers.RunOptions{Options: handlers.Options{Webhooks: webhooks}})
}

func registry() *handlers.Registry {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnValidate(kex, "authhook", authhook)
	handlers.OnValidate(kex, "validate1", validate1)
	handlers.OnValidate(kex, "validate2", validate2,
		handlers.Field("spec.field"), handlers.Value(filter.Equals("not-allowed")))
	handlers.OnValidate(kex, "validate_subresources", validateSubresources, handlers.Subresource("*"))
	handlers.OnMutate(kex, "mutate1", mutate1, handlers.Labels{"somelabel": filter.Equals("somevalue")})
	return reg
}

// authhook tells the API client who calls the webhook: the user agent of
// the API server's request, and the common name of its client
// certificate, if it sent one.
func authhook(ctx context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
	userAgent := r.Headers.Get("User-Agent")
	if userAgent == "" {
		userAgent = "(unidentified)"
	}
	r.Warn("Accessing as user-agent: " + userAgent)
	switch {
	case len(r.PeerCertificates) == 0:
		r.Warn("SSL peer is not identified.")
	case r.PeerCertificates[0].Subject.CommonName != "":
		r.Warn(fmt.Sprintf("SSL peer is %s.", r.PeerCertificates[0].Subject.CommonName))
	default:
		r.Warn("SSL peer's common name is absent.")
	}
	return nil
}

// validate1 refuses spec.field "wrong", except on dry runs.
func validate1(ctx context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
	if field, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "field"); !r.DryRun && field == "wrong" {
		return admission.Error{Message: "Meh! I don't like it. Change the field."}
	}
	return nil
}

// validate2 is called only for spec.field "not-allowed" (the filter says
// so), and refuses it with a code of its own.
func validate2(ctx context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
	return admission.Error{Message: "I'm too lazy anyway. Go away!", Code: 555}
}

// validateSubresources sees the object and all its subresources: a status
// whose field differs from the spec's is refused through /status, and
// only warned about through the object itself.
func validateSubresources(ctx context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
	specField, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "field")
	statusField, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "field")
	if reflect.DeepEqual(specField, statusField) {
		return nil
	}
	switch r.Subresource {
	case "status":
		return admission.Error{Message: "status.field MUST be equal to spec.field!"}
	case "":
		r.Warn(fmt.Sprintf("Also update status.field to match spec.field: %s != %s", repr(specField), repr(statusField)))
	}
	return nil
}

// mutate1 injects a field into the labelled objects.
func mutate1(ctx context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
	r.Patch.Set(123, "spec", "injected")
	return nil
}

// repr renders a value as Kopf's example does (Python's repr): strings in
// single quotes, None for an absent value.
func repr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case string:
		return "'" + strings.ReplaceAll(v, "'", `\'`) + "'"
	}
	return fmt.Sprint(v)
}
