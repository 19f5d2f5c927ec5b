package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/kopf-go/kopf/handlers"
)

// managed names the webhook configurations that the operator keeps, as in
// Kopf's example.
const managed = "auto.kopf.dev"

// webhookFlags are the example's own flags, for a webhook server that the
// API server reaches through a URL of the operator's choosing with a
// certificate of its own (production). Without them, the runner serves
// with a self-signed certificate and points the configurations at its
// host and port (development). The server's --webhook-host, --webhook-port
// and --webhook-cert-dir are the runner's flags.
type webhookFlags struct {
	url, caFile string
}

// parseWebhookFlags takes the example's flags (--webhook-url=..., or
// --webhook-url ...) out of args, and returns the rest for the runner.
func parseWebhookFlags(args []string) (webhookFlags, []string, error) {
	var f webhookFlags
	set := flag.NewFlagSet("17-admission", flag.ContinueOnError)
	set.SetOutput(io.Discard)
	set.StringVar(&f.url, "webhook-url", "", "the URL the API server calls (default: https://<webhook host>:<webhook port>)")
	set.StringVar(&f.caFile, "webhook-ca-file", "", "the CA bundle the API server trusts the server with (default: the self-signed CA, if the server has no certificate)")
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
	}
	return f, rest, nil
}

// webhookOptions make the operator keep the webhook configurations
// "auto.kopf.dev", pointing at the URL and trusting the CA bundle, if
// given.
func (f webhookFlags) webhookOptions() (handlers.WebhookOptions, error) {
	opts := handlers.WebhookOptions{Managed: managed}
	if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return opts, fmt.Errorf("--webhook-url %q: want an https:// URL with a host", f.url)
		}
		opts.ClientConfig.URL = &f.url
	}
	if f.caFile != "" {
		ca, err := os.ReadFile(f.caFile)
		if err != nil {
			return opts, fmt.Errorf("read the CA bundle: %w", err)
		}
		opts.ClientConfig.CABundle = ca
	}
	return opts, nil
}
