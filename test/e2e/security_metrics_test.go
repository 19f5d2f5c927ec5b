package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The runner serves /metrics as kubebuilder's scaffolds do, by default:
// over HTTPS (a self-signed certificate), HTTP/1.1 only, and only to the
// callers whom the API server authenticates (TokenReview) and authorizes
// to get /metrics (SubjectAccessReview). A scraper's ServiceAccount token
// bound to a metrics-reader role is served; an anonymous caller, and a
// ServiceAccount without the binding, are refused.
func TestMetricsAreServedToAuthorizedCallers(t *testing.T) {
	ns := env.Namespace(t)
	reader := accountToken(t, ns, "metrics-reader")
	stranger := accountToken(t, ns, "stranger")
	bindMetricsReader(t, ns, "metrics-reader")
	at := fmt.Sprintf("127.0.0.1:%d", extraFreePort(t))
	op := startExample(t, "01-minimal", ns, "--metrics-bind-address="+at)
	url := "https://" + at + "/metrics"
	c := tlsClient(nil)

	if err := env.Client.Create(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatalf("create the object: %v", err)
	}
	// The binding takes a moment to reach the API server's authorizer.
	const want = `kopf_handler_invocations_total{cause="create",handler="create_fn",kind="KopfExample.kopf.dev",outcome="success"} 1`
	op.waitFor(t, "the metrics reader is served create_fn's count", func() bool {
		resp, body := httpsGet(c, url, reader)
		return resp != nil && resp.StatusCode == http.StatusOK && strings.Contains(body, "\n"+want+"\n")
	})

	tests := []struct {
		name, token string
		want        int
	}{
		{"anonymous", "", http.StatusUnauthorized},
		{"a ServiceAccount not bound to the role", stranger, http.StatusForbidden},
		// controller-runtime's filter answers 500 when the TokenReview
		// says the token is invalid: refused all the same.
		{"a token that is no token", "not-a-token", http.StatusInternalServerError},
		{"the metrics reader", reader, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := httpsGet(c, url, tt.token)
			if resp == nil {
				t.Fatal("the metrics server does not answer")
			}
			if resp.StatusCode != tt.want {
				t.Errorf("HTTP %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.want != http.StatusOK && strings.Contains(body, "kopf_") {
				t.Errorf("a refused caller is served metrics: %.200s", body)
			}
			// The client offers h2 and HTTP/1.1; the server takes HTTP/1.1.
			if got := httpProtocol(resp); got != "HTTP/1.1 http/1.1" {
				t.Errorf("the protocol is %q, want HTTP/1.1", got)
			}
		})
	}
	// Plain HTTP gets no metrics from a TLS server.
	if body := scrapeMetrics(at); body != "" {
		t.Errorf("a plain-HTTP scrape is served: %.200s", body)
	}
	op.stop(t)
}
