package panics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/testenv"
)

// waitTimeout bounds each wait: the machine may be loaded.
const waitTimeout = 60 * time.Second

// label is the operator's label that names the case (operator.Label).
const label = "panic"

// operator is the suite's operator running as a process.
type operator struct {
	*testenv.Process
	// metrics is the address of its /metrics.
	metrics string
}

// metricsFlags make the runner serve /metrics at the address, scraped
// over plain HTTP by scrapePanics: the runner's default is HTTPS for
// authorized callers (test/e2e's security tests show that), which is
// beside the point here.
func metricsFlags(at string) []string {
	return []string{"--metrics-bind-address=" + at, "--metrics-secure=false"}
}

// startOperator runs the operator with its own flags and the runner's,
// serving the namespace, logging JSON, and serving /metrics.
func startOperator(t *testing.T, namespace string, own []string, runner ...string) *operator {
	t.Helper()
	at := testenv.FreeAddress(t)
	args := append(append([]string(nil), own...), "--", "--standalone", "--namespace="+namespace, "--log-format=json")
	args = append(append(args, metricsFlags(at)...), runner...)
	p, err := testenv.StartProcess(binary, args, []string{"KUBECONFIG=" + kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("the operator's output:\n%s", p.Output())
		}
	})
	return &operator{Process: p, metrics: at}
}

// waitFor polls cond until it holds, failing the test after waitTimeout or
// as soon as the operator has exited.
func (op *operator) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	op.WaitFor(t, what, waitTimeout, cond)
}

// logLine is one JSON line of the operator's log, the fields the tests
// look at.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Name  string `json:"name"`
	Stack string `json:"stack"`
}

// panicLogged waits for the error line with the message, whose stack
// shows the operator's panicking function (so that it is the callback's
// stack, not the logger's), and, if name is given, which names the
// object.
func (op *operator) panicLogged(t *testing.T, msg, name string) {
	t.Helper()
	var near []logLine
	defer func() {
		if t.Failed() {
			t.Logf("the last error lines: %+v", near[max(0, len(near)-8):])
		}
	}()
	op.waitFor(t, fmt.Sprintf("the log says %q with the stack", msg), func() bool {
		near = nil
		for _, l := range op.lines() {
			if l.Level != "error" {
				continue
			}
			near = append(near, logLine{Msg: l.Msg, Name: l.Name, Stack: firstLines(l.Stack, 2)})
			if l.Msg == msg && strings.HasPrefix(l.Stack, "goroutine ") && strings.Contains(l.Stack, "main.boom(") &&
				(name == "" || l.Name == name) {
				return true
			}
		}
		return false
	})
}

// lines are the JSON lines of the operator's output so far.
func (op *operator) lines() []logLine {
	var out []logLine
	for _, raw := range strings.Split(op.Output(), "\n") {
		var l logLine
		if json.Unmarshal([]byte(raw), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// scrapePanics is kopf_callback_panics_total of the callback and handler
// on /metrics (its kind label any), -1 while nothing serves it.
func scrapePanics(at, callback, handler string) float64 {
	resp, err := http.Get("http://" + at + "/metrics")
	if err != nil {
		return -1
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, "kopf_callback_panics_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		got := map[string]string{}
		for _, m := range labelPair.FindAllStringSubmatch(labels, -1) {
			got[m[1]] = m[2]
		}
		if got["callback"] != callback || got["handler"] != handler {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			total += v
		}
	}
	return total
}

var labelPair = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// panicCounted waits until /metrics counts a panic of the callback.
func (op *operator) panicCounted(t *testing.T, callback, handler string) {
	t.Helper()
	op.waitFor(t, fmt.Sprintf("/metrics counts a panic of %s %q", callback, handler), func() bool {
		return scrapePanics(op.metrics, callback, handler) >= 1
	})
}

// example is a KopfExample, labelled for a case if one is given.
func example(namespace, name, panicCase string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": "value"}}}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(namespace)
	obj.SetName(name)
	if panicCase != "" {
		obj.SetLabels(map[string]string{label: panicCase})
	}
	return obj
}

// served waits until the operator's create handler has handled the
// object (status.create.handled).
func (op *operator) served(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	op.waitFor(t, fmt.Sprintf("%s is handled", obj.GetName()), func() bool {
		got := obj.DeepCopy()
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return false
		}
		handled, _, _ := unstructured.NestedBool(got.Object, "status", "create", "handled")
		return handled
	})
}
