package handlers

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/internal/selfsigned"
)

// devServing is what the webhook server serves with when it is given no
// certificate: a self-signed CA and certificate, as Kopf's WebhookServer
// makes (docs/admission.md, "In development"). ca is nil when the server
// has certificates of its own.
type devServing struct {
	ca   []byte
	host string
	port int
}

// serveSelfSigned gives the manager's webhook server a self-signed
// certificate if it has none (no files in its CertDir, no TLS options of
// the program's), for the hosts the API server may use: localhost, the
// server's own host, and the host at which a local cluster it recognises
// reaches this machine.
func serveSelfSigned(mgr manager.Manager) (devServing, error) {
	ws, ok := mgr.GetWebhookServer().(*webhook.DefaultServer)
	if !ok {
		return devServing{}, nil // a server of the program's own
	}
	o := &ws.Options
	certDir := cmp.Or(o.CertDir, filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"))
	certName, keyName := cmp.Or(o.CertName, "tls.crt"), cmp.Or(o.KeyName, "tls.key")
	dev := devServing{host: o.Host, port: cmp.Or(o.Port, webhook.DefaultPort)}
	if len(o.TLSOpts) > 0 || exists(filepath.Join(certDir, certName)) && exists(filepath.Join(certDir, keyName)) {
		return dev, nil
	}
	guessed := selfsigned.GuessHost(apiServerCertificate(mgr.GetConfig()))
	if dev.host == "" || dev.host == "0.0.0.0" || dev.host == "::" {
		dev.host = cmp.Or(guessed, "localhost")
	}
	hosts := []string{dev.host, "localhost", "127.0.0.1", "::1"}
	if guessed != "" {
		hosts = append(hosts, guessed)
	}
	bundle, err := selfsigned.Generate(hosts, time.Now())
	if err != nil {
		return dev, fmt.Errorf("make a self-signed certificate for the webhook server: %w", err)
	}
	pair, err := tls.X509KeyPair(bundle.Cert, bundle.Key)
	if err != nil {
		return dev, fmt.Errorf("load the self-signed certificate: %w", err)
	}
	// Served from memory: no files to write, watch or clean up.
	o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil }
	})
	mgr.GetLogger().WithName("admission").Info("The webhook server has no certificate: it serves with a self-signed one, for development only.",
		"hosts", hosts)
	dev.ca = bundle.CA
	return dev, nil
}

// clientConfig completes the managed configurations' client config: the
// URL of the server as the API server reaches it, if none is given, and
// the self-signed CA, if the server serves with it.
func (d devServing) clientConfig(c admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
	if c.URL == nil && c.Service == nil && d.host != "" {
		u := "https://" + net.JoinHostPort(d.host, strconv.Itoa(d.port))
		c.URL = &u
	}
	if len(c.CABundle) == 0 && d.ca != nil {
		c.CABundle = d.ca
	}
	return c
}

// apiServerCertificate is the API server's serving certificate, read as
// Kopf reads it to tell local clusters apart; nil if it cannot be read.
func apiServerCertificate(cfg *rest.Config) *x509.Certificate {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Scheme != "https" {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	dialer := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only the certificate's names are read
	conn, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil
	}
	defer func() { _ = conn.Close() }()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	return certs[0]
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
