package testenv

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// WebhookManager is a manager whose webhook server serves on envtest's
// local serving port (with its certificate), and the client config by
// which the API server reaches it. opts may set the logger and the
// metrics; metrics are off unless it does.
func WebhookManager(t testing.TB, cfg *rest.Config, local envtest.WebhookInstallOptions, opts manager.Options) (manager.Manager, admissionregistrationv1.WebhookClientConfig) {
	t.Helper()
	if opts.Metrics.BindAddress == "" {
		opts.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	opts.WebhookServer = webhook.NewServer(webhook.Options{
		Host: local.LocalServingHost, Port: local.LocalServingPort, CertDir: local.LocalServingCertDir,
	})
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + net.JoinHostPort(local.LocalServingHost, strconv.Itoa(local.LocalServingPort))
	return mgr, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: local.LocalServingCAData}
}

// RunManager starts the manager; stop ends it and waits for it (at the
// test's cleanup too), failing the test if it failed or took over 30 s.
func RunManager(t testing.TB, mgr manager.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the operator failed: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("the operator did not stop within 30 s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
