// Command replica is an operator with managed webhooks, run as several
// replicas by test/admission's rolling update: a validating handler that
// refuses KopfExamples whose spec.field is "invalid" (saying which
// replica refused), a persistent one that refuses those labelled
// "rolling-test-frozen", and a mutating one that stamps spec.stamp.
//
// The webhook configurations are named $REPLICA_MANAGED and point the API
// server at $REPLICA_URL (a load balancer in front of the replicas), with
// the CA of $REPLICA_CA_FILE. The command line is the standalone
// runner's; POD_ID and POD_NAMESPACE name the replica and its Leases'
// namespace, as in a cluster.
package main

import (
	"context"
	"fmt"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/filter"
)

func main() {
	ca, err := os.ReadFile(os.Getenv("REPLICA_CA_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "read the CA:", err)
		os.Exit(2)
	}
	url := os.Getenv("REPLICA_URL")
	pod := os.Getenv("POD_ID")

	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnValidate(kex, "refuse-invalid", func(_ context.Context, obj *unstructured.Unstructured, _ *admission.Request) error {
		if field, _, _ := unstructured.NestedString(obj.Object, "spec", "field"); field == "invalid" {
			return admission.Error{Message: "the field is invalid (refused by " + pod + ")", Code: 422}
		}
		return nil
	})
	handlers.OnValidate(kex, "refuse-frozen", func(context.Context, *unstructured.Unstructured, *admission.Request) error {
		return admission.Error{Message: "frozen", Code: 422}
	}, handlers.Persistent(), handlers.Labels{"rolling-test-frozen": filter.Present})
	handlers.OnMutate(kex, "stamp", func(_ context.Context, _ *unstructured.Unstructured, r *admission.Request) error {
		r.Patch.Set(pod, "spec", "stamp")
		return nil
	})
	handlers.Main(reg, handlers.RunOptions{Options: handlers.Options{Webhooks: handlers.WebhookOptions{
		Managed:      os.Getenv("REPLICA_MANAGED"),
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
	}}})
}
