package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/internal/engine"
	"github.com/kopf-go/kopf/internal/runner"
	"github.com/kopf-go/kopf/pkg/cause"
)

func TestParseFlagsPeeringFromEnvironment(t *testing.T) {
	t.Setenv("KOPF_RUN_PEERING", "from-env")
	got, err := ParseFlags(nil)
	if err != nil || got.Peering != "from-env" {
		t.Errorf("ParseFlags() = %+v, %v; want the peering from KOPF_RUN_PEERING", got, err)
	}
	got, err = ParseFlags([]string{"--peering", "from-flag"})
	if err != nil || got.Peering != "from-flag" {
		t.Errorf("ParseFlags(--peering) = %+v, %v; the flag wins", got, err)
	}
}

func TestParseFlags(t *testing.T) {
	t.Setenv("KOPF_RUN_PEERING", "")
	tests := []struct {
		name    string
		args    []string
		want    Flags
		wantErr bool
	}{
		{"nothing", nil, Flags{}, false},
		{"kopf's long flags", []string{"--standalone", "--peering", "p", "--priority", "10", "--namespace", "a", "--namespace", "b", "--verbose", "--kubeconfig", "/k"},
			Flags{Standalone: true, Peering: "p", Priority: 10, Namespaces: []string{"a", "b"}, Verbose: true, Kubeconfig: "/k"}, false},
		{"short flags", []string{"-n", "a", "-p", "5", "-P", "q", "-v"},
			Flags{Namespaces: []string{"a"}, Priority: 5, Peering: "q", Verbose: true}, false},
		{"a comma list is one pattern, as in Kopf", []string{"-n", "app-*,!app-skip", "--namespace=ops"},
			Flags{Namespaces: []string{"app-*,!app-skip", "ops"}}, false},
		{"a malformed pattern", []string{"-n", "app-["}, Flags{}, true},
		{"an empty pattern", []string{"-n", ""}, Flags{}, true},
		{"dev is priority 666", []string{"--dev", "--priority", "1"}, Flags{Dev: true, Priority: 666}, false},
		{"all namespaces", []string{"-A"}, Flags{AllNamespaces: true}, false},
		{"all namespaces and a namespace", []string{"-A", "-n", "x"}, Flags{}, true},
		{"unknown flag", []string{"--nope"}, Flags{}, true},
		{"positional argument", []string{"main.go"}, Flags{}, true},
		{"debug is verbose", []string{"--debug"}, Flags{Verbose: true}, false},
		{"-d is verbose", []string{"-d"}, Flags{Verbose: true}, false},
		{"quiet", []string{"-q"}, Flags{Quiet: true}, false},
		{"quiet and verbose", []string{"-q", "-v"}, Flags{}, true},
		{"json logs", []string{"--log-format=json"}, Flags{LogFormat: "json"}, false},
		{"an unknown log format", []string{"--log-format=xml"}, Flags{}, true},
		{"the webhook server", []string{"--webhook-host=127.0.0.1", "--webhook-port=8443", "--webhook-cert-dir=/certs"},
			Flags{WebhookHost: "127.0.0.1", WebhookPort: 8443, WebhookCertDir: "/certs"}, false},
		{"metrics as kubebuilder names the flag", []string{"--metrics-bind-address", ":8080"}, Flags{MetricsBindAddress: ":8080"}, false},
		{"metrics off", []string{"--metrics-bind-address=0"}, Flags{MetricsBindAddress: "0"}, false},
		{"a shard ring", []string{"--shard-ring=main"}, Flags{ShardRing: "main"}, false},
		{"a shard ring without standby", []string{"--shard-ring=main", "--shard-no-standby"}, Flags{ShardRing: "main", ShardNoStandby: true}, false},
		{"metrics over plain HTTP", []string{"--metrics-secure=false"}, Flags{MetricsSecure: ptr.To(false)}, false},
		{"metrics over HTTPS, said", []string{"--metrics-secure"}, Flags{MetricsSecure: ptr.To(true)}, false},
		{"metrics-secure is a boolean", []string{"--metrics-secure=maybe"}, Flags{}, true},
		{"the servers' security", []string{"--metrics-cert-dir=/m", "--enable-http2", "--webhook-client-ca-name=ca.crt",
			"--webhook-self-signed", "--webhook-max-concurrent-reviews=4"},
			Flags{MetricsCertDir: "/m", EnableHTTP2: true, WebhookClientCAName: "ca.crt", WebhookSelfSigned: true, WebhookMaxConcurrentReviews: 4}, false},
		{"a negative bound on reviews", []string{"--webhook-max-concurrent-reviews=-1"}, Flags{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFlags(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseFlags(%q) error = %v, want error: %v", tt.args, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFlags(%q) -want +got:\n%s", tt.args, diff)
			}
		})
	}
}

// The runner does not throttle its own requests (client-go's default
// would be 5 a second), unless the connection says how.
func TestClusterConfigLeavesThrottlingToTheServer(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const text = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(kubeconfig, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, again, err := clusterConfig(context.Background(), NewRegistry(), resolvedSettings(t, Options{}), kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if again != nil {
		t.Error("re-logins without login handlers: the kubeconfig's credentials are not renewed by the runner")
	}
	if cfg.QPS != -1 || cfg.Host != "https://127.0.0.1:1" {
		t.Errorf("from the kubeconfig: QPS %v, host %q; want -1 (no client-side limit) and the kubeconfig's server", cfg.QPS, cfg.Host)
	}

	reg := NewRegistry()
	OnLogin(reg, "login_fn", func(ctx context.Context, a *cause.Activity) (*rest.Config, error) {
		return &rest.Config{Host: "https://127.0.0.1:2", QPS: 50}, nil
	})
	cfg, again, err = clusterConfig(context.Background(), reg, resolvedSettings(t, Options{}), kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if again == nil {
		t.Error("no re-logins with a login handler")
	} else {
		again.Close()
	}
	if cfg.QPS != 50 || cfg.Host != "https://127.0.0.1:2" {
		t.Errorf("from a login handler: QPS %v, host %q; want the handler's own", cfg.QPS, cfg.Host)
	}
}

func TestMetricsAddress(t *testing.T) {
	tests := []struct {
		name       string
		flag, opts string
		want       string
	}{
		{"off by default", "", "", "0"},
		{"from the options", "", ":8080", ":8080"},
		{"the flag wins", "127.0.0.1:9090", ":8080", "127.0.0.1:9090"},
		{"the flag switches them off", "0", ":8080", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := metricsAddress(Flags{MetricsBindAddress: tt.flag}, RunOptions{MetricsBindAddress: tt.opts})
			if got != tt.want {
				t.Errorf("metricsAddress() = %q, want %q", got, tt.want)
			}
		})
	}
}

// The command line's ring joins the options' sharding settings and wins
// over their ring; the rest of the settings stay.
func TestWithFlagsShardRing(t *testing.T) {
	opts := RunOptions{Options: Options{Sharding: Sharding{Ring: "from-options", LeaseDuration: 30 * time.Second}}}
	got := withFlags(opts, Flags{ShardRing: "from-flags"}).Sharding
	if want := (Sharding{Ring: "from-flags", LeaseDuration: 30 * time.Second}); got != want {
		t.Errorf("withFlags() sharding = %+v, want %+v", got, want)
	}
	if got := withFlags(opts, Flags{}).Sharding.Ring; got != "from-options" {
		t.Errorf("withFlags() without --shard-ring: ring %q, want the options' own", got)
	}
	if got := withFlags(opts, Flags{ShardNoStandby: true}).Sharding; !got.NoStandby || got.Ring != "from-options" {
		t.Errorf("withFlags() with --shard-no-standby: sharding %+v, want no standby and the options' ring", got)
	}
}

// The runner's logs come in Kopf's formats and levels: JSON lines for log
// collectors, and only errors when quiet.
func TestRunnerLogger(t *testing.T) {
	var out bytes.Buffer
	log := runner.Logger(false, false, "json", &out)
	log.Info("Handler 'create_fn' succeeded.", "name", "kex")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("the json log line %q does not parse: %v", out.String(), err)
	}
	if line["msg"] != "Handler 'create_fn' succeeded." || line["name"] != "kex" {
		t.Errorf("the json log line = %v, want the message and the name", line)
	}

	out.Reset()
	quiet := runner.Logger(false, true, "", &out)
	quiet.Info("an info line")
	quiet.Error(errors.New("boom"), "an error line")
	if got := out.String(); strings.Contains(got, "an info line") || !strings.Contains(got, "an error line") {
		t.Errorf("the quiet log = %q, want the error line only", got)
	}

	out.Reset()
	runner.Logger(false, false, "full", &out).Info("with the caller")
	if got := out.String(); !strings.Contains(got, "run_test.go") {
		t.Errorf("the full log line = %q, want the caller", got)
	}
}

// The runner's manager takes the program's scheme, and the webhook flags
// win over the options.
func TestRunnerManagerOptions(t *testing.T) {
	s := runtime.NewScheme()
	mopts, err := runnerManagerOptions(logr.Discard(), Flags{}, RunOptions{Scheme: s}, resolvedSettings(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if mopts.Scheme != s {
		t.Error("the runner's manager does not use the given scheme")
	}
	got := webhookOptions(Flags{WebhookPort: 8443, WebhookCertDir: "/certs", WebhookClientCAName: "ca.crt"}, webhook.Options{Host: "0.0.0.0", Port: 9443})
	if got.Host != "0.0.0.0" || got.Port != 8443 || got.CertDir != "/certs" || got.ClientCAName != "ca.crt" {
		t.Errorf("webhook options = %+v, want the flags over the options", got)
	}
}

// resolvedSettings are the engine's settings of the options, resolved.
func resolvedSettings(t *testing.T, o Options) engine.Settings {
	t.Helper()
	s, err := o.settings().Resolved()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A zero consistency timeout is the default; NoConsistencyWait disables
// the wait, as Kopf's zero does.
func TestConsistencyTimeoutZeroIsExplicit(t *testing.T) {
	if got := resolvedSettings(t, Options{}).ConsistencyTimeout; got != 5*time.Second {
		t.Errorf("the default = %s, want 5s", got)
	}
	if got := resolvedSettings(t, Options{ConsistencyTimeout: NoConsistencyWait}).ConsistencyTimeout; got >= 0 {
		t.Errorf("NoConsistencyWait = %s, want a negative timeout (no wait)", got)
	}
}
