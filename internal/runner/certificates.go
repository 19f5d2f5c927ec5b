package runner

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/internal/selfsigned"
)

// Development is what the webhook server serves with when it serves with a
// self-signed CA and certificate, as Kopf's WebhookServer makes
// (docs/admission.md, "In development: no certificates"). ca is nil when
// the server has certificates of its own.
type Development struct {
	ca   []byte
	host string
	port int
}

// SelfSigned gives the manager's webhook server a self-signed
// certificate where one is meant (webhookCertificates), for the hosts the
// API server may use: localhost, the server's own host, and the host at
// which a local cluster it recognises reaches this machine. It is called
// before anything is registered on the server, which fills in its
// defaults (the certificate directory among them).
func SelfSigned(mgr manager.Manager, asked bool) (Development, error) {
	ws, ok := mgr.GetWebhookServer().(*webhook.DefaultServer)
	if !ok {
		if asked {
			return Development{}, errors.New("serve the webhooks with a self-signed certificate: the webhook server is the program's own, which kopf-go cannot configure")
		}
		return Development{}, nil // a server of the program's own
	}
	o := &ws.Options
	dev := Development{host: o.Host, port: cmp.Or(o.Port, webhook.DefaultPort)}
	if o.Port < 0 {
		return dev, nil // switched off
	}
	source, err := webhookCertificates(*o, asked, inCluster(), exists)
	if err != nil || source != selfSignedCertificate {
		return dev, err
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
	o.TLSOpts = append(slices.Clip(o.TLSOpts), func(c *tls.Config) {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil }
	})
	reason := "as it has none and runs outside a cluster"
	if asked {
		reason = "as asked"
	}
	mgr.GetLogger().WithName("admission").Info("The webhook server serves with a self-signed certificate, "+reason+": for development only.",
		"hosts", hosts)
	dev.ca = bundle.CA
	return dev, nil
}

// certificateSource is what the webhook server serves with.
type certificateSource int

const (
	// programCertificate: the program's TLS options give the certificate.
	programCertificate certificateSource = iota
	// certificateFiles: the files in the certificate directory, which
	// controller-runtime watches and reloads.
	certificateFiles
	// selfSignedCertificate: one made at the start, kept in memory.
	selfSignedCertificate
)

// defaultCertDir is controller-runtime's default certificate directory of
// webhook servers, where kubebuilder's scaffolds mount the certificate.
func defaultCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// webhookCertificates decides what a webhook server with these options
// serves with. A self-signed certificate is meant only when asked for, or
// outside a cluster when there is no certificate: in a cluster, each
// replica would make a CA of its own and write it into the managed
// configurations, and the API server's calls would fail TLS, so a
// missing certificate is an error there, as is a certificate directory
// that is given but holds none (a typo, a Secret not mounted).
func webhookCertificates(o webhook.Options, asked, inCluster bool, exists func(string) bool) (certificateSource, error) {
	certDir := cmp.Or(o.CertDir, defaultCertDir())
	if o.ClientCAName != "" && !exists(filepath.Join(certDir, o.ClientCAName)) {
		return 0, fmt.Errorf("the webhook server's client CA %s (--webhook-client-ca-name) is not in its certificate directory %s (--webhook-cert-dir)", o.ClientCAName, certDir)
	}
	if asked {
		return selfSignedCertificate, nil
	}
	probe := &tls.Config{}
	for _, opt := range o.TLSOpts {
		opt(probe)
	}
	if probe.GetCertificate != nil {
		return programCertificate, nil
	}
	certName, keyName := cmp.Or(o.CertName, "tls.crt"), cmp.Or(o.KeyName, "tls.key")
	if exists(filepath.Join(certDir, certName)) && exists(filepath.Join(certDir, keyName)) {
		return certificateFiles, nil
	}
	const ask = "ask for a self-signed one for development (--webhook-self-signed, WebhookOptions.SelfSigned)"
	if o.CertDir != "" && o.CertDir != defaultCertDir() {
		return 0, fmt.Errorf("the webhook server's certificate directory %s holds no %s and %s: mount the certificate there (a cert-manager Secret), or %s",
			o.CertDir, certName, keyName, ask)
	}
	if inCluster {
		return 0, fmt.Errorf("the webhook server has no certificate (no %s and %s in %s) and the operator runs in a cluster, where a self-signed one would not be trusted: "+
			"give the directory of one (--webhook-cert-dir, webhook.Options.CertDir; a cert-manager Secret), or %s", certName, keyName, certDir, ask)
	}
	return selfSignedCertificate, nil
}

// inCluster reports whether the operator runs in a cluster's pod: the
// kubelet gives every container the API server's service in these
// variables (client-go's in-cluster configuration reads them too).
func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// ClientConfig completes the managed configurations' client config: the
// URL of the server as the API server reaches it, if none is given, and
// the self-signed CA, if the server serves with it.
func (d Development) ClientConfig(c admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
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
