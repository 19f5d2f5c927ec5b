package bench

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/selfsigned"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// The conversion list workload's sizes.
var (
	conversionObjects = flag.Int("conversion-objects", 500, "BenchmarkConversionList: ConversionExample objects stored in v2")
	conversionLists   = flag.Int("conversion-lists", 5, "BenchmarkConversionList: lists in each version, alternating; the figures are medians")
)

// conversionCRD is the name of examples/19-conversion's CRD, which the
// package's control plane installs without a conversion.
const conversionCRD = "conversionexamples.kopf.dev"

// conversionWebhook is where the operators of the conversion workload
// serve: one port and one self-signed certificate for the whole test
// binary, made as the runner makes its own (internal/selfsigned) but
// once, in a certificate directory. Every operator after the first thus
// finds the CRD's conversion as it would write it and leaves the CRD
// alone, as replicas of one operator do in a rollout (with one Service
// and one cert-manager certificate). A certificate made at each start, as
// WebhookOptions.SelfSigned does, would rewrite the CRD's caBundle at
// each start; the API server then rebuilds the kind's storage, failing
// the lists and watches of the operator that has just started until the
// new CA is in effect, which would be measured as its start.
type conversionWebhook struct {
	host    string
	port    int
	certDir string
	ca      []byte
}

// url is the webhook server's root, as the CRD's conversion names it
// (handlers appends handlers.ConversionPath).
func (w conversionWebhook) url() string {
	return "https://" + net.JoinHostPort(w.host, strconv.Itoa(w.port))
}

var conversionWebhookOnce = sync.OnceValues(func() (conversionWebhook, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return conversionWebhook{}, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	bundle, err := selfsigned.Generate([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		return conversionWebhook{}, err
	}
	dir := filepath.Join(fixtures.tmp, "conversion-certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return conversionWebhook{}, err
	}
	for name, data := range map[string][]byte{"tls.crt": bundle.Cert, "tls.key": bundle.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return conversionWebhook{}, err
		}
	}
	return conversionWebhook{host: "127.0.0.1", port: port, certDir: dir, ca: bundle.CA}, nil
})

// startConversionOperator runs examples/19-conversion's registry for v1
// in-process, as test/e2e runs the example (--webhook-host=127.0.0.1,
// WebhookOptions.Managed "auto.kopf.dev"): its conversion webhook is
// served on the manager's webhook server, and the CRD's conversion points
// there. cfg, if not nil, is the operator's connection.
func startConversionOperator(tb testing.TB, ns string, calls *conversionCalls, cfg *rest.Config) *kopftest.Operator {
	tb.Helper()
	wh, err := conversionWebhookOnce()
	if err != nil {
		tb.Fatal(err)
	}
	url := wh.url()
	opts := handlers.Options{Standalone: true, Webhooks: handlers.WebhookOptions{
		Managed:      "auto.kopf.dev",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: wh.ca},
	}}
	options := []kopftest.OperatorOption{kopftest.WithManagerOptions(func(o *manager.Options) {
		o.WebhookServer = webhook.NewServer(webhook.Options{Host: wh.host, Port: wh.port, CertDir: wh.certDir})
	})}
	if cfg != nil {
		options = append(options, kopftest.WithConfig(cfg))
	}
	return fixtures.env.StartOperator(tb, ns, conversionRegistry("v1", calls), opts, options...)
}

// conversionInPlace tells whether the CRD's conversion calls the
// workload's webhook server.
func conversionInPlace(tb testing.TB) bool {
	tb.Helper()
	wh, err := conversionWebhookOnce()
	if err != nil {
		tb.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := fixtures.env.Client.Get(context.Background(), client.ObjectKey{Name: conversionCRD}, crd); err != nil {
		tb.Fatal(err)
	}
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil &&
		c.Webhook.ClientConfig.URL != nil && *c.Webhook.ClientConfig.URL == wh.url()+handlers.ConversionPath &&
		string(c.Webhook.ClientConfig.CABundle) == string(wh.ca)
}

// conversionObject is a ConversionExample in a version, without a spec.
func conversionObject(ns, name, version string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: version, Kind: "ConversionExample"})
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// awaitConversion waits until the API server converts through the
// operator's webhook: it takes a moment after the CRD's conversion is
// written, and until then it prunes v1's spec.field from an object
// stored in v2. A dry run in v1 goes to v2 and back.
func awaitConversion(tb testing.TB, ns string) {
	tb.Helper()
	kopftest.Eventually(tb, "the API server converts through the webhook", time.Minute, func() bool {
		probe := conversionObject(ns, "conv-probe", "v1")
		probe.Object["spec"] = map[string]any{"field": "probe"}
		if err := fixtures.env.Client.Create(context.Background(), probe, client.DryRunAll); err != nil {
			return false
		}
		field, _, _ := unstructured.NestedString(probe.Object, "spec", "field")
		return field == "probe"
	})
}

// listConversionObjects lists the namespace's ConversionExamples in a
// version and checks each: spec.field in v1, spec.value in v2, the value
// its name says, nothing else in the spec.
func listConversionObjects(tb testing.TB, c client.Client, ns, version string, n int) time.Duration {
	tb.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: version, Kind: "ConversionExampleList"})
	start := time.Now()
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		tb.Fatalf("list in %s: %v", version, err)
	}
	took := time.Since(start)
	if len(list.Items) != n {
		tb.Fatalf("the list in %s has %d objects, want %d", version, len(list.Items), n)
	}
	field := map[string]string{"v1": "field", "v2": "value"}[version]
	for _, obj := range list.Items {
		spec, _ := obj.Object["spec"].(map[string]any)
		if want := "value of " + obj.GetName(); obj.GetAPIVersion() != "kopf.dev/"+version || len(spec) != 1 || spec[field] != want {
			tb.Fatalf("%s listed in %s is a %s with the spec %v, want {%s: %q}", obj.GetName(), version, obj.GetAPIVersion(), spec, field, want)
		}
	}
	return took
}

// conversionHandled counts the namespace's objects that the operator has
// handled: create_fn's result in the status, and the diff-base written
// (after the status).
func conversionHandled(tb testing.TB, c client.Client, ns string) int {
	tb.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: "v2", Kind: "ConversionExampleList"})
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		tb.Fatal(err)
	}
	done := 0
	for _, o := range list.Items {
		msg, _, _ := unstructured.NestedString(o.Object, "status", "create_fn", "message")
		if msg == "hello world" && o.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != "" {
			done++
		}
	}
	return done
}

// conversionReviews is how many requests the webhook servers of this
// process have answered at handlers.ConversionPath, from
// controller-runtime's webhook metrics.
func conversionReviews(tb testing.TB) float64 {
	tb.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == handlers.ConversionPath {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// conversionListFigures are one run's.
type conversionListFigures struct {
	objects int
	// writeReviews and writeConversions are the ConversionReviews served,
	// and the objects converted to v1, per object while the objects were
	// created and handled.
	writeReviews, writeConversions float64
	// listV1 and listV2 are the lists' times in each version;
	// listReviews and listConversions are the reviews and conversions to
	// v1 per list in v1.
	listV1, listV2               []time.Duration
	listReviews, listConversions float64
	// start is from the restarted operator's start until it was quiet;
	// requests are its requests until then, startConversions the objects
	// converted to v1 meanwhile, resumed the objects it looked at (its
	// "Resuming is in progress" lines).
	start            time.Duration
	requests         map[string]int
	startConversions int64
	resumed          int
	// reruns are the handlers' calls in the restarted operator on the
	// objects handled before (its one fresh object's create excepted).
	reruns int64
}

// conversionList is the quick start's shape with conversion: an operator
// of examples/19-conversion registered for v1 handles n objects created
// in v2 (stored in v2; its watch sees them through the webhook), then
// stops; a fresh one starts over them and is timed until quiet, with its
// requests counted, and must run no handler. While it serves the
// webhook, a client lists the objects in v1 and in v2, in turn. Last, a
// fresh object shows that the restarted operator handles objects at all,
// so that its zero re-runs are not those of an operator that does
// nothing.
//
// Where the conversions happen is counted, not assumed: the API server
// keeps a watch cache per served version and converts each object into
// the v1 cache as it is written (one review per write, or one for the
// whole kind when the cache fills after the CRD's spec changes), and
// serves lists in v1 from that cache, already converted.
func conversionList(tb testing.TB, n, lists int) conversionListFigures {
	tb.Helper()
	setup(tb)
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	var first conversionCalls
	if !conversionInPlace(tb) {
		// The watches that an operator starts before its conversion takes
		// effect may serve objects converted without it
		// (docs/conversion.md, "First start"): the first operator of the
		// process only writes the conversion, with no objects yet.
		op := startConversionOperator(tb, ns, &first, nil)
		awaitConversion(tb, ns)
		op.Stop(tb)
	}
	op := startConversionOperator(tb, ns, &first, nil)
	awaitConversion(tb, ns)
	f := conversionListFigures{objects: n}
	reviews, converted := conversionReviews(tb), first.toV1.Load()
	err := forEach(n, bulkWorkers, func(i int) error {
		obj := conversionObject(ns, fmt.Sprintf("conv-%05d", i), "v2")
		obj.Object["spec"] = map[string]any{"value": "value of " + obj.GetName()}
		return driver.Create(context.Background(), obj)
	})
	if err != nil {
		tb.Fatalf("create the objects: %v", err)
	}
	kopftest.Eventually(tb, "every object is handled", 5*time.Minute, func() bool { return conversionHandled(tb, driver, ns) == n })
	op.Stop(tb)
	f.writeReviews = (conversionReviews(tb) - reviews) / float64(n)
	f.writeConversions = float64(first.toV1.Load()-converted) / float64(n)
	if got := first.create.Load(); got != int64(n) {
		tb.Fatalf("create_fn ran %d times over %d new objects, want once each", got, n)
	}

	counter := &requests.Counter{}
	cfg := rest.CopyConfig(fixtures.env.Config)
	counter.Instrument(cfg)
	var again conversionCalls
	started := time.Now()
	op = startConversionOperator(tb, ns, &again, cfg)
	f.start, f.requests = untilQuiet(tb, op, counter, started)
	f.startConversions = again.toV1.Load()
	f.resumed = len(op.Logs.Messages("Resuming is in progress: conv-"))

	reviews, converted = conversionReviews(tb), again.toV1.Load()
	for range lists {
		f.listV1 = append(f.listV1, listConversionObjects(tb, driver, ns, "v1", n))
		f.listV2 = append(f.listV2, listConversionObjects(tb, driver, ns, "v2", n))
	}
	f.listReviews = (conversionReviews(tb) - reviews) / float64(lists)
	f.listConversions = float64(again.toV1.Load()-converted) / float64(lists)

	fresh := conversionObject(ns, "conv-fresh", "v2")
	fresh.Object["spec"] = map[string]any{"value": "value of conv-fresh"}
	if err := driver.Create(context.Background(), fresh); err != nil {
		tb.Fatal(err)
	}
	kopftest.Eventually(tb, "the fresh object is handled", time.Minute, func() bool { return conversionHandled(tb, driver, ns) == n+1 })
	op.Stop(tb)
	if got := again.create.Load(); got < 1 {
		tb.Fatalf("the restarted operator did not run create_fn on the fresh object")
	}
	f.reruns = again.create.Load() - 1 + again.update.Load()
	return f
}

// untilQuiet waits until the operator has started its workers and then
// made no request for a second (its watches stay open, and count once),
// and returns the time from started until the quiet second began and the
// requests counted until then.
func untilQuiet(tb testing.TB, op *kopftest.Operator, counter *requests.Counter, started time.Time) (time.Duration, map[string]int) {
	tb.Helper()
	const window = time.Second
	deadline := time.Now().Add(2 * time.Minute)
	var last map[string]int
	lastChange := time.Now()
	for time.Now().Before(deadline) {
		now := counter.Counts()
		if !maps.Equal(now, last) {
			last, lastChange = now, time.Now()
		} else if op.Logs.Count("Starting workers") > 0 && time.Since(lastChange) >= window {
			return lastChange.Sub(started), last
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("the restarted operator was not quiet for %s within 2 minutes: %v", window, last)
	return 0, nil
}

// BenchmarkConversionList measures lists of objects stored in v2 in the
// version the operator converts them to (v1) and in the stored one, what
// the conversions cost while the objects are written, and a restart of
// the operator over objects it reads in another version than they are
// stored in (docs/benchmarks.md, "Conversion webhooks").
func BenchmarkConversionList(b *testing.B) {
	var f conversionListFigures
	for b.Loop() {
		f = conversionList(b, *conversionObjects, *conversionLists)
	}
	if f.reruns != 0 {
		b.Errorf("the restarted operator re-ran handlers %d times", f.reruns)
	}
	ms := func(ds []time.Duration) float64 {
		xs := make([]float64, len(ds))
		for i, d := range ds {
			xs[i] = float64(d.Microseconds()) / 1000
		}
		return median(xs)
	}
	b.ReportMetric(ms(f.listV1), "ms-list-v1")
	b.ReportMetric(ms(f.listV2), "ms-list-v2")
	b.ReportMetric(f.listReviews, "reviews/list-v1")
	b.ReportMetric(f.writeConversions, "conversions/object-written")
	b.ReportMetric(f.start.Seconds(), "s-restart")
	// Printed, not logged: the operator's own log lines fill the
	// benchmark's log past what go test shows.
	fmt.Printf("creating and handling %d objects: %.2f reviews and %.2f conversions to v1 per object\n", f.objects, f.writeReviews, f.writeConversions)
	fmt.Printf("lists of %d objects, median of %d: v1 %.1f ms, v2 %.1f ms; per list in v1 %.1f reviews, %.1f conversions\n",
		f.objects, len(f.listV1), ms(f.listV1), ms(f.listV2), f.listReviews, f.listConversions)
	fmt.Printf("restart over them: quiet after %.2f s, %d objects resumed, %d conversions, handlers re-run %d times; its requests:\n",
		f.start.Seconds(), f.resumed, f.startConversions, f.reruns)
	for _, key := range slices.Sorted(maps.Keys(f.requests)) {
		fmt.Printf("  %s: %d\n", key, f.requests[key])
	}
}

// TestConversionListWorkload runs the workload small, so that it cannot
// rot: every list in v1 holds spec.field equal to the spec.value stored
// (listConversionObjects); the objects written in v2 went through the
// webhook to the operator's watch in v1; the restarted operator looked at
// every object and ran no handler again, nor wrote any of them.
func TestConversionListWorkload(t *testing.T) {
	setup(t)
	kopftest.NoLeaks(t)
	const n = 5
	f := conversionList(t, n, 2)
	if f.reruns != 0 {
		t.Errorf("the restarted operator re-ran handlers %d times over %d handled objects", f.reruns, n)
	}
	if f.writeConversions < 1 || f.writeReviews <= 0 {
		t.Errorf("%.2f conversions to v1 (%.2f reviews) per object written in v2, want 1 at least: the webhook was not on the way", f.writeConversions, f.writeReviews)
	}
	if f.resumed != n {
		t.Errorf("the restarted operator resumed %d objects, want %d", f.resumed, n)
	}
	for key, count := range f.requests {
		if requests.IsWrite(key) && strings.Contains(key, "conversionexamples") {
			t.Errorf("the restarted operator wrote objects while starting over handled ones: %s %d times", key, count)
		}
	}
}
