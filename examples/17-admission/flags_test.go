package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWebhookFlags(t *testing.T) {
	tests := []struct {
		args     []string
		want     webhookFlags
		wantRest []string
		wantErr  bool
	}{
		{nil, webhookFlags{}, nil, false},
		{[]string{"--verbose", "--webhook-url=https://h:1", "-n", "ns", "--webhook-ca-file", "/ca"},
			webhookFlags{url: "https://h:1", caFile: "/ca"}, []string{"--verbose", "-n", "ns"}, false},
		// The server's own flags are the runner's: they pass through.
		{[]string{"--webhook-port=8443", "--webhook-cert-dir=/certs"}, webhookFlags{},
			[]string{"--webhook-port=8443", "--webhook-cert-dir=/certs"}, false},
		{[]string{"--webhook-url"}, webhookFlags{}, nil, true},
	}
	for _, tt := range tests {
		got, rest, err := parseWebhookFlags(tt.args)
		if (err != nil) != tt.wantErr {
			t.Fatalf("parseWebhookFlags(%q) error = %v, want error: %v", tt.args, err, tt.wantErr)
		}
		if tt.wantErr {
			continue
		}
		if got != tt.want {
			t.Errorf("parseWebhookFlags(%q) = %+v, want %+v", tt.args, got, tt.want)
		}
		if diff := cmp.Diff(tt.wantRest, rest); diff != "" {
			t.Errorf("parseWebhookFlags(%q) rest -want +got:\n%s", tt.args, diff)
		}
	}
}

func TestWebhookOptions(t *testing.T) {
	opts, err := webhookFlags{}.webhookOptions()
	if err != nil || opts.Managed != managed || opts.ClientConfig.URL != nil || opts.ClientConfig.CABundle != nil {
		t.Errorf("without flags: %+v, %v; want the managed configurations with the runner's URL and CA", opts, err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err = webhookFlags{url: "https://op.example.com:9443", caFile: ca}.webhookOptions()
	if err != nil || *opts.ClientConfig.URL != "https://op.example.com:9443" || string(opts.ClientConfig.CABundle) != "PEM" {
		t.Errorf("with flags: %+v, %v; want the URL and the CA", opts, err)
	}
	if _, err := (webhookFlags{url: "http://insecure"}).webhookOptions(); err == nil {
		t.Error("an http:// URL is accepted")
	}
	if _, err := (webhookFlags{caFile: filepath.Join(t.TempDir(), "missing")}).webhookOptions(); err == nil {
		t.Error("a missing CA file is accepted")
	}
}
