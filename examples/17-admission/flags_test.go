package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWebhookFlags(t *testing.T) {
	defaultDir := filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	cases := []struct {
		name     string
		args     []string
		want     webhookFlags
		wantRest []string
		wantErr  bool
	}{{
		name: "defaults",
		args: []string{"--standalone", "-n", "ns"},
		want: webhookFlags{port: 9443, certDir: defaultDir, url: "https://localhost:9443",
			caFile: filepath.Join(defaultDir, "ca.crt")},
		wantRest: []string{"--standalone", "-n", "ns"},
	}, {
		name: "own flags anywhere, with = or a separate value",
		args: []string{"--webhook-host=127.0.0.1", "--verbose", "--webhook-port", "1234", "-webhook-cert-dir=/certs",
			"--namespace=ns", "--webhook-ca-file", "/ca.pem"},
		want: webhookFlags{host: "127.0.0.1", port: 1234, certDir: "/certs", url: "https://127.0.0.1:1234",
			caFile: "/ca.pem", caFileSet: true},
		wantRest: []string{"--verbose", "--namespace=ns"},
	}, {
		name: "an explicit URL",
		args: []string{"--webhook-url=https://host.k3d.internal:9443"},
		want: webhookFlags{port: 9443, certDir: defaultDir, url: "https://host.k3d.internal:9443",
			caFile: filepath.Join(defaultDir, "ca.crt")},
	}, {
		name: "everything after -- is the runner's",
		args: []string{"--", "--webhook-port=1"},
		want: webhookFlags{port: 9443, certDir: defaultDir, url: "https://localhost:9443",
			caFile: filepath.Join(defaultDir, "ca.crt")},
		wantRest: []string{"--", "--webhook-port=1"},
	}, {
		name:    "a missing value",
		args:    []string{"--webhook-port"},
		wantErr: true,
	}, {
		name:    "a bad value",
		args:    []string{"--webhook-port=many"},
		wantErr: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, rest, err := parseWebhookFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(webhookFlags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRest, rest); diff != "" {
				t.Errorf("the runner's arguments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWebhookOptions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		wantCA  string
		wantErr bool
	}{
		{name: "the default CA file", args: []string{"--webhook-cert-dir=" + dir}, wantCA: "CA"},
		{name: "no default CA file", args: []string{"--webhook-cert-dir=" + filepath.Join(dir, "none")}},
		{name: "a missing CA file given", args: []string{"--webhook-ca-file=" + filepath.Join(dir, "none")}, wantErr: true},
		{name: "not https", args: []string{"--webhook-url=http://localhost:9443"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := parseWebhookFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := f.webhookOptions()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if opts.Managed != "auto.kopf.dev" || opts.ClientConfig.URL == nil || *opts.ClientConfig.URL != f.url {
				t.Errorf("the managed configuration is %q at %v, want auto.kopf.dev at %s", opts.Managed, opts.ClientConfig.URL, f.url)
			}
			if got := string(opts.ClientConfig.CABundle); got != tc.wantCA {
				t.Errorf("the CA bundle is %q, want %q", got, tc.wantCA)
			}
		})
	}
}
