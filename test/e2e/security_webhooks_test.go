package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The runner's webhook server, by default, speaks HTTP/1.1 only, refuses
// reviews over 7 MiB with 413 and other content types or malformed
// reviews with 400, and serves a bounded number of reviews at once
// (here 1): the excess is answered 429 with a Retry-After of one second,
// which the API server honours by calling again, so that an object
// created meanwhile is admitted or denied by the handlers, not by a
// failed call. The managed configurations apply to every KopfExample of
// the cluster, so this test runs alone (not in parallel).
func TestWebhookServerLimits(t *testing.T) {
	t.Cleanup(func() { extraDeleteWebhooks(t) })
	ns := env.Namespace(t)
	port := extraFreePort(t)
	metricsAt := fmt.Sprintf("127.0.0.1:%d", extraFreePort(t))
	op := startExample(t, "17-admission", ns, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port),
		"--webhook-self-signed", "--webhook-max-concurrent-reviews=1", "--metrics-bind-address="+metricsAt, "--metrics-secure=false")
	extraWaitForWebhooks(t, op, []string{"authhook", "validate1", "validate2.spec.field", "validate-subresources"}, []string{"mutate1"})
	op.waitForLine(t, "serves with a self-signed certificate, as asked")
	url := fmt.Sprintf("https://127.0.0.1:%d/validate1", port)
	c := tlsClient(nil)
	fine := reviewBody(t, ns, "kopf-example-fine", "fine", 0)

	var resp *http.Response
	op.waitFor(t, "the webhook server serves", func() bool {
		resp, _ = postReview(c, url, "application/json", fine)
		return resp != nil && resp.StatusCode == http.StatusOK
	})
	// The client offers h2 and HTTP/1.1; the server takes HTTP/1.1.
	if got := httpProtocol(resp); got != "HTTP/1.1 http/1.1" {
		t.Errorf("the protocol is %q, want HTTP/1.1", got)
	}

	tests := []struct {
		name, contentType string
		body              []byte
		want              int
	}{
		{"8 MiB", "application/json", reviewBody(t, ns, "kopf-example-large", "fine", 8<<20), http.StatusRequestEntityTooLarge},
		{"another content type", "text/plain", fine, http.StatusBadRequest},
		{"not JSON", "application/json", []byte(`{"request": `), http.StatusBadRequest},
		{"no request", "application/json", []byte(`{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}`), http.StatusBadRequest},
		{"an object that is no object", "application/json", []byte(`{"request": {"uid": "x", "object": "text"}}`), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := postReview(c, url, tt.contentType, tt.body)
			if resp == nil {
				t.Fatal("the webhook server does not answer")
			}
			if resp.StatusCode != tt.want {
				t.Errorf("HTTP %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}

	// A review whose body is sent in part holds the one place. If it
	// came while one of the posts below held the place, it was refused
	// itself, and is sent again.
	held := startReview(t, port, fine)
	op.waitFor(t, "a second review at once is refused with 429", func() bool {
		if held.answered() {
			_ = held.conn.Close()
			held = startReview(t, port, fine)
		}
		resp, _ := postReview(c, url, "application/json", fine)
		return resp != nil && resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "1"
	})
	// The API server, refused too, calls again after a second: the
	// creation waits, and is denied by validate1 once the place is free.
	refused := webhookRequests(metricsAt, "429")
	created := make(chan error, 1)
	go func() {
		created <- env.Client.Create(context.Background(), extraAdmissionObject(ns, "kopf-example-wrong", "wrong", false))
	}()
	op.waitFor(t, "the API server's call is refused with 429", func() bool { return webhookRequests(metricsAt, "429") > refused })
	if code := held.finish(t); code != http.StatusOK {
		t.Errorf("the review sent in part: HTTP %d, want 200", code)
	}
	err := <-created
	extraCheckDenied(t, err, "validate1."+extraManaged, "Meh! I don't like it. Change the field.", 500)
	var status apierrors.APIStatus
	if errors.As(err, &status) && strings.Contains(status.Status().Message, "429") {
		t.Errorf("the creation failed with the 429: %v", err)
	}
	if resp, _ := postReview(c, url, "application/json", fine); resp == nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a review once the place is free: %v, want 200", resp)
	}
	op.stop(t)
}

// With --webhook-client-ca-name, the webhook server serves only clients
// with a certificate signed by that CA (the API server's, configured in
// its admission configuration); with --enable-http2, it and the metrics
// server speak HTTP/2.
func TestWebhookClientCertificates(t *testing.T) {
	t.Cleanup(func() { extraDeleteWebhooks(t) })
	ns := env.Namespace(t)
	ca := newCertificate(t, "kopf-e2e-ca", true, nil)
	clientCA := newCertificate(t, "kopf-e2e-client-ca", true, nil)
	otherCA := newCertificate(t, "kopf-e2e-other-ca", true, nil)
	server := newCertificate(t, "kopf-e2e-webhook", false, ca)
	apiServer := newCertificate(t, "kube-apiserver", false, clientCA)
	impostor := newCertificate(t, "kube-apiserver", false, otherCA)
	certDir := t.TempDir()
	writeFiles(t, certDir, map[string][]byte{"tls.crt": server.certPEM, "tls.key": server.keyPEM, "client-ca.crt": clientCA.certPEM, "ca.crt": ca.certPEM})

	port := extraFreePort(t)
	metricsAt := fmt.Sprintf("127.0.0.1:%d", extraFreePort(t))
	op := startExample(t, "17-admission", ns, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port),
		"--webhook-cert-dir="+certDir, "--webhook-client-ca-name=client-ca.crt", "--webhook-ca-file="+filepath.Join(certDir, "ca.crt"),
		"--enable-http2", "--metrics-bind-address="+metricsAt)
	extraWaitForWebhooks(t, op, []string{"authhook", "validate1", "validate2.spec.field", "validate-subresources"}, []string{"mutate1"})
	url := fmt.Sprintf("https://127.0.0.1:%d/authhook", port)
	fine := reviewBody(t, ns, "kopf-example-fine", "fine", 0)

	var resp *http.Response
	var body string
	op.waitFor(t, "a client with the API server's certificate is served", func() bool {
		resp, body = postReview(tlsClient(apiServer.tlsCertificate(t)), url, "application/json", fine)
		return resp != nil && resp.StatusCode == http.StatusOK
	})
	if !strings.Contains(body, "SSL peer is kube-apiserver.") {
		t.Errorf("the handler does not see the client's certificate: %s", body)
	}
	if got := httpProtocol(resp); got != "HTTP/2.0 h2" {
		t.Errorf("the webhook server's protocol is %q, want HTTP/2 with --enable-http2", got)
	}
	for name, c := range map[string]*http.Client{
		"without a certificate":            tlsClient(nil),
		"with a certificate of another CA": tlsClient(impostor.tlsCertificate(t)),
	} {
		if resp, body := postReview(c, url, "application/json", fine); resp != nil {
			t.Errorf("a client %s is served: HTTP %d %s", name, resp.StatusCode, body)
		}
	}

	// The metrics server speaks HTTP/2 too (and refuses the anonymous).
	op.waitFor(t, "the metrics server answers", func() bool {
		resp, _ = httpsGet(tlsClient(nil), "https://"+metricsAt+"/metrics", "")
		return resp != nil
	})
	if got := httpProtocol(resp); got != "HTTP/2.0 h2" || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an anonymous scrape: HTTP %d over %q, want 401 over HTTP/2", resp.StatusCode, got)
	}
	op.stop(t)
}

// The runner refuses to start, with a clear message, where a certificate
// is missing: a certificate directory given but empty (a typo, a Secret
// not mounted), a webhook server with no certificate in a cluster (where
// a self-signed one would not be trusted), a client CA not in the
// directory, an empty metrics certificate directory.
func TestRunnerRefusesMissingCertificates(t *testing.T) {
	t.Cleanup(func() { extraDeleteWebhooks(t) })
	empty := t.TempDir()
	withCert := t.TempDir()
	cert := newCertificate(t, "kopf-e2e-webhook", false, newCertificate(t, "kopf-e2e-ca", true, nil))
	writeFiles(t, withCert, map[string][]byte{"tls.crt": cert.certPEM, "tls.key": cert.keyPEM})
	inCluster := []string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "TMPDIR=" + t.TempDir()}
	tests := []struct {
		name, example string
		environ       []string
		flags         []string
		want          string
	}{
		{"an empty webhook certificate directory", "17-admission", nil, []string{"--webhook-cert-dir=" + empty},
			"the webhook server's certificate directory " + empty + " holds no tls.crt and tls.key"},
		{"no webhook certificate in a cluster", "17-admission", inCluster, nil,
			"the webhook server has no certificate"},
		{"a client CA not in the directory", "17-admission", nil, []string{"--webhook-cert-dir=" + withCert, "--webhook-client-ca-name=ca.crt"},
			"the webhook server's client CA ca.crt (--webhook-client-ca-name) is not in its certificate directory " + withCert},
		{"an empty metrics certificate directory", "01-minimal", nil,
			[]string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", extraFreePort(t)), "--metrics-cert-dir=" + empty},
			"the metrics server's certificate directory " + empty + " holds no tls.crt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags := append([]string{"--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", extraFreePort(t))}, tt.flags...)
			if tt.example == "01-minimal" {
				flags = tt.flags
			}
			op := startWithEnv(t, tt.example, env.Namespace(t), tt.environ, flags...)
			extraWaitForExit(t, op)
			if op.Err() == nil {
				t.Error("the operator exited with code 0, want 1")
			}
			if !strings.Contains(op.Output(), tt.want) {
				t.Errorf("the output does not say %q", tt.want)
			}
		})
	}
	// The in-cluster refusal says how to fix it.
	t.Run("the in-cluster message", func(t *testing.T) {
		op := startWithEnv(t, "17-admission", env.Namespace(t), inCluster, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", extraFreePort(t)))
		extraWaitForExit(t, op)
		for _, want := range []string{"runs in a cluster", "--webhook-cert-dir", "--webhook-self-signed"} {
			if !strings.Contains(op.Output(), want) {
				t.Errorf("the output does not say %q", want)
			}
		}
	})
}

// partialReview is a review whose headers and first half are sent, the
// rest held back until finish.
type partialReview struct {
	conn *tls.Conn
	rest []byte
}

// startReview sends the headers and half of the body to the webhook
// server at 127.0.0.1:port.
func startReview(t *testing.T, port int, body []byte) *partialReview {
	t.Helper()
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // the server's certificate is not under test
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	half := len(body) / 2
	if _, err := fmt.Fprintf(conn, "POST /validate1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		len(body), body[:half]); err != nil {
		t.Fatal(err)
	}
	return &partialReview{conn: conn, rest: body[half:]}
}

// answered reports whether the server has answered the review already
// (or closed its connection): it was refused before its body was read.
func (p *partialReview) answered() bool {
	_ = p.conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	defer func() { _ = p.conn.SetReadDeadline(time.Time{}) }()
	var b [1]byte
	n, err := p.conn.Read(b[:])
	var netErr net.Error
	return n > 0 || !(errors.As(err, &netErr) && netErr.Timeout())
}

// finish sends the rest of the body and returns the answer's status.
func (p *partialReview) finish(t *testing.T) int {
	t.Helper()
	if _, err := p.conn.Write(p.rest); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(p.conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
