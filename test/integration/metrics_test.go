package integration

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
	"github.com/kopf-go/kopf/pkg/filter"
)

// labelled returns the example object with a name and the label
// case=<name>, which the test's handlers filter on: one object per case.
func labelled(t *testing.T, namespace, name string) *unstructured.Unstructured {
	obj := named(t, namespace, name)
	obj.SetLabels(map[string]string{"case": name})
	return obj
}

// forCase is the filter of a case's handlers.
func forCase(name string) handlers.Labels { return handlers.Labels{"case": filter.Equals(name)} }

// The metrics endpoint counts each handler's attempts by outcome, times
// them, and counts the objects that wait for a retry or failed for good:
// up while they do, down once they recover, are handled by a later cause,
// or are gone. Handler ids are the test's own: the metrics are the
// process's, shared with other tests' operators.
func TestMetricsHandlerOutcomes(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var flaky atomic.Bool
	flaky.Store(true)
	handlers.OnCreate(kind, "m-ok", nothing, forCase("ok"))
	handlers.OnCreate(kind, "m-flaky", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		if flaky.Load() {
			return nil, handlers.Temporary(errors.New("not yet"), 500*time.Millisecond)
		}
		return nil, nil
	}, forCase("flaky"))
	handlers.OnCreate(kind, "m-stuck", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, handlers.Temporary(errors.New("not ever"), 500*time.Millisecond)
	}, forCase("stuck"))
	handlers.OnCreate(kind, "m-permanent", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, handlers.Permanent(errors.New("never"))
	}, forCase("permanent"))
	handlers.OnUpdate(kind, "m-update", nothing, forCase("permanent"))
	handlers.OnCreate(kind, "m-retries", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, errors.New("boom")
	}, forCase("limits"), handlers.Retries(2), handlers.Backoff(0))
	handlers.OnCreate(kind, "m-timeout", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, handlers.Temporary(errors.New("later"), 2*time.Second)
	}, forCase("limits"), handlers.Timeout(time.Second))
	handlers.OnCreate(kind, "m-ignored", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, errors.New("whatever")
	}, forCase("limits"), handlers.Errors(failure.ErrorsIgnored))
	serve, at := servingMetrics(t)
	env.StartOperator(t, ns, reg, handlers.Options{}, kopftest.WithManagerOptions(serve))

	retrying := series("kopf_objects_retrying", "kind", kexKind)
	failed := series("kopf_objects_failed", "kind", kexKind)
	base := scrape(t, at)
	for _, name := range []string{"ok", "flaky", "stuck", "permanent", "limits"} {
		create(t, labelled(t, ns, name))
	}
	got := waitForSamples(t, at, "the handlers' outcomes", map[string]float64{
		invocations("m-ok", "create", "success"):                1,
		invocations("m-permanent", "create", "permanent_error"): 1,
		invocations("m-retries", "create", "temporary_error"):   1,
		invocations("m-retries", "create", "retries_exceeded"):  1,
		invocations("m-timeout", "create", "timeout"):           1,
		invocations("m-ignored", "create", "ignored_error"):     1,
		retrying: base[retrying] + 2, // flaky, stuck
		failed:   base[failed] + 2,   // permanent, limits
	})
	if got[invocations("m-flaky", "create", "temporary_error")] < 1 {
		t.Errorf("m-flaky's temporary errors are not counted")
	}
	okDuration := series("kopf_handler_duration_seconds_count", "kind", kexKind, "handler", "m-ok", "cause", "create")
	if got[okDuration] != 1 {
		t.Errorf("%s = %v, want 1", okDuration, got[okDuration])
	}

	flaky.Store(false)
	waitForSamples(t, at, "the flaky handler's recovery", map[string]float64{
		invocations("m-flaky", "create", "success"): 1,
		retrying: base[retrying] + 1,
		failed:   base[failed] + 2,
	})
	mergePatch(t, ns, "stuck", `{"metadata":{"labels":{"case":"none"}}}`, false)
	waitForSamples(t, at, "the stuck object no longer matches its handler", map[string]float64{retrying: base[retrying]})
	mergePatch(t, ns, "permanent", `{"spec":{"field":"changed"}}`, false)
	waitForSamples(t, at, "the failed object is handled by a later cause", map[string]float64{
		invocations("m-update", "update", "success"): 1,
		failed: base[failed] + 1,
	})
	if err := env.Client.Delete(context.Background(), named(t, ns, "limits")); err != nil {
		t.Fatal(err)
	}
	waitForSamples(t, at, "the failed object is gone", map[string]float64{failed: base[failed]})
}

// A stopped operator leaves nothing behind in the process's metrics: its
// objects leave the gauges and its frozen state is no longer reported, so
// that the next operator of the process starts from zero.
func TestMetricsReleasedOnStop(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "m-stop", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, handlers.Permanent(errors.New("never"))
	})
	identity := "metrics-" + ns
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: identity})
	registry := httptest.NewServer(promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	defer registry.Close()
	at := strings.TrimPrefix(registry.URL, "http://")

	failed := series("kopf_objects_failed", "kind", kexKind)
	frozen := series("kopf_operator_frozen", "identity", identity, "reason", "")
	base := scrape(t, at)
	create(t, exampleObject(t, ns))
	waitForSamples(t, at, "the object fails", map[string]float64{
		invocations("m-stop", "create", "permanent_error"): 1,
		failed: base[failed] + 1,
	})
	if _, ok := scrape(t, at)[frozen]; !ok {
		t.Errorf("%s is not reported while the operator runs", frozen)
	}
	op.Stop(t)
	got := scrape(t, at)
	if got[failed] != base[failed] {
		t.Errorf("%s = %v after the stop, want %v", failed, got[failed], base[failed])
	}
	if _, ok := got[frozen]; ok {
		t.Errorf("%s is still reported after the stop", frozen)
	}
}
