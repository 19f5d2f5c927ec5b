// Command operator is the panics suite's operator: for KopfExample
// objects, every kind of callback that an operator hands to kopf-go,
// each of which panics for the objects labelled panic=<its case> and
// works for the others; so do its progress storage and its wrapper of
// the engine's client. The operator-wide handlers panic on their first
// attempt (login, startup, cleanup) or always (the probe). It checks
// nothing itself: the tests see from outside what the library lets
// happen.
//
// Its own flags come first, then "--" and the standalone runner's flags:
//
//	operator --cleanup-gate=/tmp/gate --webhooks -- --standalone --namespace=ns
//
// With --webhooks it registers only the admission handlers (the managed
// webhook configurations apply to every KopfExample of the cluster).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// Label is the label whose value names the case whose callback panics.
const Label = "panic"

// The cases: which callback panics for an object labelled panic=<case>.
const (
	CaseChange        = "change"
	CaseChangeFilter  = "change-filter"
	CaseEvent         = "event"
	CaseEventFilter   = "event-filter"
	CaseIndex         = "index"
	CaseIndexFilter   = "index-filter"
	CaseDaemon        = "daemon"
	CaseDaemonFilter  = "daemon-filter"
	CaseDelay         = "delay"
	CaseTimer         = "timer"
	CaseTimerFilter   = "timer-filter"
	CaseWebhook       = "webhook"
	CaseWebhookFilter = "webhook-filter"
	CaseStorage       = "storage"
	// CaseClient is a name prefix rather than a label: the engine's
	// patches carry no labels.
	CaseClient = "client"
)

// retry is the backoff of every handler: far below Kopf's 60 s, so that a
// failed attempt is seen to be retried within the test.
var retry = handlers.Backoff(time.Second)

// managed names the webhook configurations the operator keeps.
const managed = "panics.kopf.dev"

func main() {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	gate := fs.String("cleanup-gate", "", "the cleanup handler's second attempt waits (up to 15 s) until this file exists")
	webhooks := fs.Bool("webhooks", false, "register the admission handlers only")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	var opts handlers.RunOptions
	if *webhooks {
		resourceWebhooks(kex)
		opts.Webhooks = handlers.WebhookOptions{Managed: managed}
	} else {
		resourceHandlers(kex)
		operatorHandlers(reg, *gate)
		opts.ProgressStorage = brokenStorage{progress.NewSmart()}
		opts.WrapClient = func(c client.Client) client.Client { return brokenClient{c} }
	}
	if err := handlers.Run(ctrl.SetupSignalHandler(), reg, fs.Args(), opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// boom is where every callback of this operator panics: the tests find it
// on the logged stacks.
func boom(what string) { panic(what + " is broken") }

// is reports whether the object is labelled for the case.
func is(obj *unstructured.Unstructured, c string) bool { return obj.GetLabels()[Label] == c }

// panicFor panics for the objects labelled for the case.
func panicFor(obj *unstructured.Unstructured, c string) {
	if is(obj, c) {
		boom(c + " of " + obj.GetName())
	}
}

// when is a filter that panics for the case and matches every other
// object.
func when(c string) handlers.FilterOption {
	return handlers.When(func(obj *unstructured.Unstructured, _ *cause.Change) bool {
		panicFor(obj, c)
		return true
	})
}

// resourceHandlers are the handlers of objects: each panics for its case.
// The create handler's result (status.create.handled) shows that an
// object is served.
func resourceHandlers(kex *handlers.Resource[*unstructured.Unstructured]) {
	handlers.OnCreate(kex, "create", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		panicFor(obj, CaseChange)
		return map[string]any{"handled": true}, nil
	}, retry, handlers.Retries(2))
	handlers.OnCreate(kex, "create_when", nothing, when(CaseChangeFilter))

	handlers.OnEvent(kex, "event", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Event) (any, error) {
		panicFor(obj, CaseEvent)
		return nil, nil
	})
	handlers.OnEvent(kex, "event_when", func(context.Context, *unstructured.Unstructured, *cause.Event) (any, error) {
		return nil, nil
	}, when(CaseEventFilter))

	handlers.Index(kex, "index", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		panicFor(obj, CaseIndex)
		return obj.GetName(), nil
	})
	handlers.Index(kex, "index_when", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		return obj.GetName(), nil
	}, when(CaseIndexFilter))

	handlers.Daemon(kex, "daemon", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		panicFor(obj, CaseDaemon)
		<-ctx.Done()
		return nil, nil
	}, retry, handlers.Retries(2))
	handlers.Daemon(kex, "daemon_when", waitForStop, when(CaseDaemonFilter))
	handlers.Daemon(kex, "delayed", waitForStop, handlers.InitialDelayFunc(func(obj *unstructured.Unstructured) time.Duration {
		panicFor(obj, CaseDelay)
		return 0
	}))

	handlers.Timer(kex, "timer", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		panicFor(obj, CaseTimer)
		return nil, nil
	}, handlers.Interval(time.Second), retry, handlers.Retries(2))
	handlers.Timer(kex, "timer_when", func(context.Context, *unstructured.Unstructured, *cause.Daemon) (any, error) {
		return nil, nil
	}, handlers.Interval(time.Minute), handlers.Labels{Label: filter.Check(func(v any) bool {
		if v == CaseTimerFilter {
			boom(CaseTimerFilter)
		}
		return true
	})})
}

func nothing(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
	return nil, nil
}

func waitForStop(ctx context.Context, _ *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
	<-ctx.Done()
	return nil, nil
}

// operatorHandlers are the operator-wide handlers: login, startup and
// cleanup panic on their first attempt and work on the next; the probe
// always panics.
func operatorHandlers(reg *handlers.Registry, gate string) {
	var logins, startups, cleanups atomic.Int32
	handlers.OnLogin(reg, "login", func(context.Context, *cause.Activity) (*rest.Config, error) {
		if logins.Add(1) == 1 {
			boom("login")
		}
		return clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	}, retry)
	handlers.OnStartup(reg, "startup", func(context.Context, *cause.Activity) error {
		if startups.Add(1) == 1 {
			boom("startup")
		}
		return nil
	}, retry)
	handlers.OnProbe(reg, "probe", func(context.Context, *cause.Activity) (any, error) {
		boom("probe")
		return nil, nil
	})
	handlers.OnCleanup(reg, "cleanup", func(ctx context.Context, _ *cause.Activity) error {
		if cleanups.Add(1) == 1 {
			boom("cleanup")
		}
		return waitForFile(ctx, gate, 15*time.Second)
	}, retry)
}

// waitForFile waits until the file exists, or the time is over, or ctx
// ends: the test scrapes the metrics of a stopping operator meanwhile.
func waitForFile(ctx context.Context, path string, limit time.Duration) error {
	if path == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// resourceWebhooks are a validating handler that panics for its case and
// one whose filter does.
func resourceWebhooks(kex *handlers.Resource[*unstructured.Unstructured]) {
	handlers.OnValidate(kex, "validate", func(_ context.Context, obj *unstructured.Unstructured, _ *admission.Request) error {
		panicFor(obj, CaseWebhook)
		return nil
	})
	handlers.OnValidate(kex, "validate_when", func(context.Context, *unstructured.Unstructured, *admission.Request) error {
		return nil
	}, when(CaseWebhookFilter))
}

// brokenStorage is the operator's progress storage: its Store panics for
// the objects labelled for CaseStorage.
type brokenStorage struct{ progress.Storage }

func (s brokenStorage) Store(body map[string]any, p *patch.Patch, id string, r progress.Record) {
	metadata, _ := body["metadata"].(map[string]any)
	labels, _ := metadata["labels"].(map[string]any)
	if labels[Label] == CaseStorage {
		boom(CaseStorage + " of " + fmt.Sprint(metadata["name"]))
	}
	s.Storage.Store(body, p, id, r)
}

// brokenClient is the operator's wrapper of the engine's client: its
// Patch panics for the objects named for CaseClient.
type brokenClient struct{ client.Client }

func (c brokenClient) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	if strings.HasPrefix(obj.GetName(), "trigger-"+CaseClient) {
		boom(CaseClient + " of " + obj.GetName())
	}
	return c.Client.Patch(ctx, obj, p, opts...)
}
