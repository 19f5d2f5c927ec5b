package admission

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"

	"github.com/kopf-go/kopf/pkg/admission"
)

// Webhooks in development, as with Kopf's WebhookServer: outside a
// cluster, with no certificate, no CA bundle and no URL given, the
// operator serves with a self-signed certificate, and the managed
// configuration points the API server at it with its CA. The API server
// then calls the validating handler.
func TestWebhooksWithoutCertificates(t *testing.T) {
	kopftest.NoLeaks(t)
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnValidate(kind, "nothing-forbidden", func(_ context.Context, obj *unstructured.Unstructured, _ *admission.Request) error {
		if field, _, _ := unstructured.NestedString(obj.Object, "spec", "field"); field == "forbidden" {
			return admission.Error{Message: "the field is forbidden here"}
		}
		return nil
	})
	_, portText, _ := net.SplitHostPort(testenv.FreeAddress(t))
	port, _ := strconv.Atoi(portText)
	// No certificate: controller-runtime's default directory, under a
	// temporary directory of the test's own, so that no other test's files
	// are found. Outside a cluster, that is the development setting.
	t.Setenv("TMPDIR", t.TempDir())
	mgr, err := manager.New(cfg, manager.Options{
		Logger:        logr.Discard(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := handlers.SetupWebhooksWithManager(mgr, reg, handlers.WebhookOptions{Path: "/dev", Managed: "dev.kopf.dev"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the operator failed: %v", err)
		}
	})

	ns := namespace(t)
	var denied error
	kopftest.Eventually(t, "the API server asks the webhook, and it denies", 30*time.Second, func() bool {
		denied = k8s.Create(context.Background(), kex(ns, "bad-"+strconv.FormatInt(time.Now().UnixNano(), 36), nil, map[string]any{"field": "forbidden"}))
		return denied != nil && strings.Contains(denied.Error(), "the field is forbidden here")
	})
	if err := k8s.Create(context.Background(), kex(ns, "good", nil, map[string]any{"field": "fine"})); err != nil {
		t.Errorf("an allowed object is refused: %v", err)
	}
}
