package admission

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/handlers"
	configs "github.com/kopf-go/kopf/internal/admission/managed"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"

	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/filter"
)

// lines captures a manager's log lines, their values rendered as funcr
// renders them.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) logger(t *testing.T, name string) logr.Logger {
	return funcr.New(func(prefix, args string) {
		line := prefix + " " + args
		l.mu.Lock()
		l.all = append(l.all, line)
		l.mu.Unlock()
		t.Log(name, line)
	}, funcr.Options{})
}

// with returns the lines that contain the substring.
func (l *lines) with(substring string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.all {
		if strings.Contains(line, substring) {
			out = append(out, line)
		}
	}
	return out
}

// errors returns the error lines, but client-go's election's report of
// a race it handles itself (two candidates creating the Lease at once).
func (l *lines) errors() []string {
	var out []string
	for _, line := range l.with(`"error"`) {
		if !strings.Contains(line, "Error initially creating lease lock") {
			out = append(out, line)
		}
	}
	return out
}

// managedTestRegistry has two validating handlers, one of them persistent,
// and a mutating one, for KopfExamples with a label that no other test
// sets: the configurations it gets do not meddle with other tests.
func managedTestRegistry() *handlers.Registry {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	only := handlers.Labels{"kopf-go-managed-test": filter.Present}
	ok := func(context.Context, *unstructured.Unstructured, *admission.Request) error { return nil }
	handlers.OnValidate(kex, "plain", ok, only)
	handlers.OnValidate(kex, "kept", ok, only, handlers.Persistent())
	handlers.OnMutate(kex, "mutated", ok, only)
	return reg
}

// replica is an operator serving webhooks in-process, in a manager of its
// own on cfg, on a port of its own with envtest's serving certificate.
type replica struct {
	logs *lines
	// stop stops the replica and returns its manager's error; exited is
	// closed once the manager has returned err.
	stop   func() error
	exited chan struct{}
	err    error
}

// startReplica starts the webhooks of reg with opts (their client config
// pointing at this replica unless opts has one); the replica is stopped
// at the test's end, if not before.
func startReplica(t *testing.T, name string, c *rest.Config, reg *handlers.Registry, opts handlers.WebhookOptions) *replica {
	t.Helper()
	host, portText, _ := net.SplitHostPort(testenv.FreeAddress(t))
	port, _ := strconv.Atoi(portText)
	r := &replica{logs: &lines{}}
	mgr, err := manager.New(c, manager.Options{
		Logger:  r.logs.logger(t, name),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: host, Port: port, CertDir: env.WebhookInstallOptions.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if opts.ClientConfig.URL == nil && opts.ClientConfig.Service == nil {
		opts.ClientConfig.URL = ptr.To("https://" + net.JoinHostPort(host, portText))
	}
	if err := handlers.SetupWebhooksWithManager(mgr, reg, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.exited = make(chan struct{})
	go func() {
		defer close(r.exited)
		r.err = mgr.Start(ctx)
	}()
	r.stop = func() error {
		cancel()
		select {
		case <-r.exited:
			return r.err
		case <-time.After(60 * time.Second):
			return fmt.Errorf("%s did not stop within 60 s", name)
		}
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	return r
}

// deleteConfigurations deletes both configurations of that name when the
// test ends (registered before the replicas, it runs after their stop).
func deleteConfigurations(t *testing.T, name string) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = k8s.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// configurations reads both configurations; nil for an absent one.
func configurations(t *testing.T, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	ctx := context.Background()
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
		v = nil
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
		m = nil
	}
	return v, m
}

// webhookNames are the names of both configurations' webhooks, sorted
// (nil for an absent configuration).
func webhookNames(t *testing.T, name string) (validating, mutating []string) {
	t.Helper()
	v, m := configurations(t, name)
	if v != nil {
		validating = []string{}
		for _, w := range v.Webhooks {
			validating = append(validating, w.Name)
		}
		slices.Sort(validating)
	}
	if m != nil {
		mutating = []string{}
		for _, w := range m.Webhooks {
			mutating = append(mutating, w.Name)
		}
		slices.Sort(mutating)
	}
	return validating, mutating
}

// waitForWebhooks waits until both configurations hold exactly these
// webhooks.
func waitForWebhooks(t *testing.T, name string, validating, mutating []string) {
	t.Helper()
	kopftest.Eventually(t, fmt.Sprintf("the webhooks %v and %v in %s", validating, mutating, name), 30*time.Second, func() bool {
		v, m := webhookNames(t, name)
		return slices.Equal(v, validating) && slices.Equal(m, mutating)
	})
}

// presenceLeases lists the presence Leases of the configuration in ns.
func presenceLeases(t *testing.T, ns, name string) []coordinationv1.Lease {
	t.Helper()
	var list coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{configs.ConfigurationLabel: configs.LeaseBase(name)}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// writerHolder is the holder of the configuration's writer Lease in ns;
// "" if none holds it (or it does not exist).
func writerHolder(t *testing.T, ns, name string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: configs.WriterLease(name)}, lease); err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}
