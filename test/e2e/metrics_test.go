package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The runner's --metrics-bind-address is a contract of the command line:
// `go run ./examples/01-minimal --standalone --metrics-bind-address=...
// --metrics-secure=false` serves /metrics over plain HTTP, where, once one
// object is handled, create_fn is counted once with the outcome success.
// (TestMetricsAreServedToAuthorizedCallers scrapes the default, HTTPS.)
func TestMetricsEndpoint(t *testing.T) {
	ns := env.Namespace(t)
	at := fmt.Sprintf("127.0.0.1:%d", extraFreePort(t))
	op := startExample(t, "01-minimal", ns, "--metrics-bind-address="+at, "--metrics-secure=false")

	if err := env.Client.Create(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatalf("create the object: %v", err)
	}
	op.waitForLine(t, "Creation is processed: 1 succeeded; 0 failed.")
	const want = `kopf_handler_invocations_total{cause="create",handler="create_fn",kind="KopfExample.kopf.dev",outcome="success"} 1`
	var body string
	op.waitFor(t, "/metrics counts create_fn's success", func() bool {
		body = scrapeMetrics(at)
		return strings.Contains(body, "\n"+want+"\n")
	})
	for _, line := range []string{
		"# TYPE kopf_handler_invocations_total counter",
		"# TYPE kopf_handler_duration_seconds histogram",
		`kopf_objects_failed{kind="KopfExample.kopf.dev"} 0`,
		`kopf_objects_retrying{kind="KopfExample.kopf.dev"} 0`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	op.stop(t)
}

// scrapeMetrics returns what /metrics serves at the address, or "" while
// nothing does.
func scrapeMetrics(at string) string {
	resp, err := http.Get("http://" + at + "/metrics")
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(body)
}
