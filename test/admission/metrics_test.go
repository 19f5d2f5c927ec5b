package admission

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// checkWebhookMetrics checks, after TestAdmission's requests, that the
// manager's metrics endpoint counts the handlers' calls by outcome: the
// requests allowed by each handler, and those its handler denied.
func checkWebhookMetrics(t *testing.T, at string) {
	resp, err := http.Get("http://" + at + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "kopf_webhook_calls_total{") {
			cut := strings.LastIndexByte(line, ' ')
			v, err := strconv.ParseFloat(line[cut+1:], 64)
			if err != nil {
				t.Fatalf("the sample %q: %v", line, err)
			}
			values[line[:cut]] = v
		}
	}
	calls := func(kind, typ, handler, outcome string) string {
		return fmt.Sprintf(`kopf_webhook_calls_total{handler=%q,kind=%q,outcome=%q,type=%q}`, handler, kind, outcome, typ)
	}
	for _, s := range []string{
		calls("KopfExample.kopf.dev", "validating", "validate2/spec.field", "denied"),
		calls("KopfExample.kopf.dev", "validating", "authhook", "allowed"),
		calls("KopfExample.kopf.dev", "mutating", "inject", "allowed"),
		calls("KopfExample.kopf.dev", "mutating", "mutate1", "allowed"),
		calls("ConfigMap", "validating", "cm_check", "denied"),
	} {
		if values[s] < 1 {
			var have []string
			for k := range values {
				have = append(have, k)
			}
			sort.Strings(have)
			t.Errorf("%s = %v, want at least 1; served:\n%s", s, values[s], strings.Join(have, "\n"))
		}
	}
	if s := calls("KopfExample.kopf.dev", "validating", "validate2/spec.field", "allowed"); values[s] != 0 {
		t.Errorf("%s = %v: the field filter lets only the denied object through", s, values[s])
	}
}
