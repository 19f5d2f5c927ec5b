package integration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/test/testenv"
)

// kexKind is the kind label of KopfExample objects.
const kexKind = "KopfExample.kopf.dev"

// servingMetrics is a manager tweak that serves the metrics at a free
// local address, which it returns.
func servingMetrics(t *testing.T) (func(*manager.Options), string) {
	at := testenv.FreeAddress(t)
	return func(o *manager.Options) { o.Metrics.BindAddress = at }, at
}

// samples are the values a metrics endpoint serves, by series as exposed:
// name{label="value",...}, the labels sorted by name (as the Prometheus
// client writes them).
type samples map[string]float64

// scrape reads the metrics endpoint's samples, waiting for the endpoint
// to listen: the manager starts its metrics server in the background.
func scrape(t *testing.T, at string) samples {
	t.Helper()
	var code int
	var body string
	await.True(t, "the metrics endpoint at "+at+" listens", 30*time.Second, func() bool {
		code, body = httpGetMaybe("http://" + at + "/metrics")
		return code != 0
	})
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	out := samples{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		value, err := strconv.ParseFloat(line[cut+1:], 64)
		if err != nil {
			t.Fatalf("the sample %q: %v", line, err)
		}
		out[line[:cut]] = value
	}
	return out
}

// series names a series: the metric and its labels as pairs of name and
// value, in any order.
func series(name string, labels ...string) string {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// invocations is the series of a KopfExample handler's outcome.
func invocations(handler, cause, outcome string) string {
	return series("kopf_handler_invocations_total", "kind", kexKind, "handler", handler, "cause", cause, "outcome", outcome)
}

// waitForSamples scrapes until every series has its value (absent series
// count as zero), failing with the differences after 30 s.
func waitForSamples(t *testing.T, at, what string, want map[string]float64) samples {
	t.Helper()
	return waitFor(t, at, what, want, func(got, want float64) bool { return got == want })
}

// waitForAtLeast is waitForSamples for counters that keep growing (a
// timer's ticks): a scrape may see them past the wanted value.
func waitForAtLeast(t *testing.T, at, what string, want map[string]float64) samples {
	t.Helper()
	return waitFor(t, at, what, want, func(got, want float64) bool { return got >= want })
}

func waitFor(t *testing.T, at, what string, want map[string]float64, ok func(got, want float64) bool) samples {
	t.Helper()
	var got samples
	await.NoneMissing(t, what, 30*time.Second, func() string {
		got = scrape(t, at)
		var wrong []string
		for s, v := range want {
			if !ok(got[s], v) {
				wrong = append(wrong, fmt.Sprintf("%s = %v, want %v", s, got[s], v))
			}
		}
		sort.Strings(wrong)
		return strings.Join(wrong, "\n")
	})
	return got
}
