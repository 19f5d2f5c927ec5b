package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/handlers"
)

// managed names the webhook configurations that the operator keeps, as in
// Kopf's example.
const managed = "auto.kopf.dev"

// webhookFlags are the example's own flags: where its webhook server
// listens, with which certificate, and how the API server reaches it. All
// other flags are the standalone runner's (Kopf's `kopf run`).
type webhookFlags struct {
	host, certDir, url, caFile string
	port                       int
	// caFileSet: --webhook-ca-file was given, so the file must be there.
	caFileSet bool
}

// parseWebhookFlags takes the example's flags (--webhook-host=..., or
// --webhook-host ...) out of args, and returns the rest for the runner.
func parseWebhookFlags(args []string) (webhookFlags, []string, error) {
	var f webhookFlags
	set := flag.NewFlagSet("17-admission", flag.ContinueOnError)
	set.SetOutput(io.Discard)
	set.StringVar(&f.host, "webhook-host", "", "the address the webhook server listens on (default: all)")
	set.IntVar(&f.port, "webhook-port", 9443, "the port the webhook server listens on")
	set.StringVar(&f.certDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"),
		"the directory with the server's tls.crt and tls.key")
	set.StringVar(&f.url, "webhook-url", "", "the URL the API server calls (default: https://<host or localhost>:<port>)")
	set.StringVar(&f.caFile, "webhook-ca-file", "", "the CA bundle the API server trusts the server with (default: <cert dir>/ca.crt, if there)")

	var rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") || set.Lookup(name) == nil {
			rest = append(rest, arg)
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return f, nil, fmt.Errorf("parse the command line: --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := set.Set(name, value); err != nil {
			return f, nil, fmt.Errorf("parse the command line: --%s: %w", name, err)
		}
		f.caFileSet = f.caFileSet || name == "webhook-ca-file"
	}
	if f.url == "" {
		host := f.host
		if host == "" {
			host = "localhost"
		}
		f.url = "https://" + net.JoinHostPort(host, strconv.Itoa(f.port))
	}
	if f.caFile == "" {
		f.caFile = filepath.Join(f.certDir, "ca.crt")
	}
	return f, rest, nil
}

// serverOptions configure the webhook server of the runner's manager.
func (f webhookFlags) serverOptions() webhook.Options {
	return webhook.Options{Host: f.host, Port: f.port, CertDir: f.certDir}
}

// webhookOptions make the operator keep the webhook configurations
// "auto.kopf.dev", pointing at the URL and trusting the CA bundle.
func (f webhookFlags) webhookOptions() (handlers.WebhookOptions, error) {
	u, err := url.Parse(f.url)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return handlers.WebhookOptions{}, fmt.Errorf("--webhook-url %q: want an https:// URL with a host", f.url)
	}
	ca, err := os.ReadFile(f.caFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !f.caFileSet:
		// No CA of our own: the API server trusts the certificate by its
		// own roots, if at all.
		ca = nil
	case err != nil:
		return handlers.WebhookOptions{}, fmt.Errorf("read the CA bundle: %w", err)
	}
	return handlers.WebhookOptions{
		Managed:      managed,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &f.url, CABundle: ca},
	}, nil
}
