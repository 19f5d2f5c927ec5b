package runner

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The metrics server is secure by default, as kubebuilder's scaffolds
// make it: HTTPS with the API server's authentication and authorization,
// HTTP/1.1 only, a self-signed certificate unless a directory is given
// (which must hold one).
func TestMetricsOptions(t *testing.T) {
	certs := t.TempDir()
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certs, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	type want struct {
		Secure, Filtered bool
		NextProtos       []string
		CertDir          string
	}
	tests := []struct {
		name    string
		address string
		opts    MetricsSecurity
		want    want
		wantErr string
	}{
		{"off", "0", MetricsSecurity{}, want{}, ""},
		{"secure by default", ":8443", MetricsSecurity{}, want{Secure: true, Filtered: true, NextProtos: []string{"http/1.1"}}, ""},
		{"with HTTP/2", ":8443", MetricsSecurity{HTTP2: true}, want{Secure: true, Filtered: true, NextProtos: []string{"h2"}}, ""},
		{"a certificate", ":8443", MetricsSecurity{CertDir: certs}, want{Secure: true, Filtered: true, NextProtos: []string{"http/1.1"}, CertDir: certs}, ""},
		{"a directory without one", ":8443", MetricsSecurity{CertDir: empty}, want{}, "certificate directory " + empty + " holds no tls.crt"},
		{"plain HTTP", ":8080", MetricsSecurity{Insecure: true}, want{}, ""},
		{"plain HTTP with a certificate", ":8080", MetricsSecurity{Insecure: true, CertDir: certs}, want{}, "plain HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Metrics(logr.Discard(), tt.address, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Metrics() error = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.BindAddress != tt.address {
				t.Errorf("the address = %q, want %q", o.BindAddress, tt.address)
			}
			got := want{Secure: o.SecureServing, Filtered: o.FilterProvider != nil, CertDir: o.CertDir}
			if o.SecureServing {
				got.NextProtos = nextProtos(o.TLSOpts)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Metrics() -want +got:\n%s", diff)
			}
		})
	}
}

// The webhook server offers HTTP/1.1 only unless HTTP/2 is enabled; the
// program's own TLS options come after, and may choose otherwise.
func TestWithHTTP2(t *testing.T) {
	own := func(c *tls.Config) { c.NextProtos = append(c.NextProtos, "own") }
	tests := []struct {
		name    string
		o       webhook.Options
		enabled bool
		want    []string
	}{
		{"off by default", webhook.Options{}, false, []string{"http/1.1"}},
		{"enabled", webhook.Options{}, true, []string{"h2"}},
		{"the program's options come after", webhook.Options{TLSOpts: []func(*tls.Config){own}}, false, []string{"http/1.1", "own"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, nextProtos(WithHTTP2(tt.o, tt.enabled).TLSOpts)); diff != "" {
				t.Errorf("NextProtos -want +got:\n%s", diff)
			}
		})
	}
}

// nextProtos is what the TLS options make of controller-runtime's default
// NextProtos.
func nextProtos(opts []func(*tls.Config)) []string {
	c := &tls.Config{NextProtos: []string{"h2"}}
	for _, o := range opts {
		o(c)
	}
	return c.NextProtos
}

// Self-signed certificates only where they are meant: when asked for, or
// outside a cluster when there is no certificate. A directory that is
// given but holds none is an error, and so is no certificate in a
// cluster.
func TestWebhookCertificates(t *testing.T) {
	files := map[string]bool{
		"/certs/tls.crt": true, "/certs/tls.key": true, "/certs/ca.crt": true,
		"/half/tls.crt": true,
		filepath.Join(defaultCertDir(), "tls.crt"): false,
	}
	exists := func(path string) bool { return files[path] }
	program := []func(*tls.Config){func(c *tls.Config) {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	}}
	tests := []struct {
		name      string
		o         webhook.Options
		asked     bool
		inCluster bool
		want      certificateSource
		wantErr   string
	}{
		{"files", webhook.Options{CertDir: "/certs"}, false, true, certificateFiles, ""},
		{"files of other names", webhook.Options{CertDir: "/certs", CertName: "ca.crt", KeyName: "tls.key"}, false, true, certificateFiles, ""},
		{"the program's certificate", webhook.Options{TLSOpts: program}, false, true, programCertificate, ""},
		{"asked for", webhook.Options{}, true, true, selfSignedCertificate, ""},
		{"asked for, with files", webhook.Options{CertDir: "/certs"}, true, true, selfSignedCertificate, ""},
		{"nothing, outside a cluster", webhook.Options{}, false, false, selfSignedCertificate, ""},
		{"the default directory, outside a cluster", webhook.Options{CertDir: defaultCertDir()}, false, false, selfSignedCertificate, ""},
		{"nothing, in a cluster", webhook.Options{}, false, true, 0, "runs in a cluster"},
		{"an empty directory given", webhook.Options{CertDir: "/empty"}, false, false, 0, "certificate directory /empty holds no tls.crt and tls.key"},
		{"a directory with half of one", webhook.Options{CertDir: "/half"}, false, false, 0, "certificate directory /half holds no"},
		{"a client CA", webhook.Options{CertDir: "/certs", ClientCAName: "ca.crt"}, false, true, certificateFiles, ""},
		{"a missing client CA", webhook.Options{CertDir: "/certs", ClientCAName: "other.crt"}, false, true, 0, "client CA other.crt (--webhook-client-ca-name) is not in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhookCertificates(tt.o, tt.asked, tt.inCluster, exists)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("webhookCertificates() = %v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "--webhook-") {
					t.Errorf("the error %q names no flag to fix it with", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("webhookCertificates() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
