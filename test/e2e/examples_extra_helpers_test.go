package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/testenv"
)

// Kopf's e2e test counts the successes of any handler, activities
// included, with this pattern, and the failures with the other.
var (
	extraSucceededRE = regexp.MustCompile(`'(.+?)' succeeded`)
	extraFailedRE    = regexp.MustCompile(`'(.+?)' failed (?:permanently|with an exception and will stop)`)
)

// extraStart runs an example as startExample does, with more
// arguments.
func extraStart(t *testing.T, name, namespace string, args ...string) *operator {
	t.Helper()
	p, err := testenv.StartProcess(filepath.Join(binDir, name),
		append([]string{"--standalone", "--verbose", "--namespace=" + namespace}, args...),
		[]string{"KUBECONFIG=" + kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		t.Logf("the output of %s:\n%s", name, p.Output())
	})
	return &operator{p}
}

// extraWaitForExit waits until the program exits by itself.
func extraWaitForExit(t *testing.T, op *operator) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitTimeout, true,
		func(context.Context) (bool, error) { return op.Exited(), nil })
	if err != nil {
		t.Fatalf("the program did not exit by itself within %s", waitTimeout)
	}
}

// extraWaitForGone waits until the object is deleted for good.
func extraWaitForGone(t *testing.T, op *operator, key client.ObjectKey) {
	t.Helper()
	op.waitFor(t, "the object is gone", func() bool {
		err := env.Client.Get(context.Background(), key, newObject())
		return err != nil && client.IgnoreNotFound(err) == nil
	})
}

// extraProbes polls the liveness endpoint until its results satisfy
// ok, and returns them (the results are reused for 10 s, as in Kopf).
func extraProbes(t *testing.T, op *operator, url string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var got map[string]any
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the last answer of %s: %s", url, last)
		}
	}()
	op.waitFor(t, "the probes at "+url+" answer as expected", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		got = nil
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d %v", resp.StatusCode, got)
		return resp.StatusCode == http.StatusOK && ok(got)
	})
	return got
}

// extraFreePort returns a TCP port on 127.0.0.1 that is free now.
func extraFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// extraPod is a pod that never runs: envtest has no kubelet.
func extraPod(namespace, generateName string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: generateName, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

// extraCheckOutcomes compares the successes and permanent failures of the
// handlers, as Kopf's e2e test does: only those of the given ids (nil:
// not checked).
func extraCheckOutcomes(t *testing.T, op *operator, succeeded, failed map[string]int) {
	t.Helper()
	for _, c := range []struct {
		what string
		re   *regexp.Regexp
		want map[string]int
	}{{"succeeded", extraSucceededRE, succeeded}, {"failed for good", extraFailedRE, failed}} {
		if c.want == nil {
			continue
		}
		got := map[string]int{}
		for id, n := range op.counts(c.re) {
			if _, checked := c.want[id]; checked || len(c.want) == 0 {
				got[id] = n
			}
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("handlers that %s, and how often (-want +got):\n%s", c.what, diff)
		}
	}
}

// extraCheckLines asserts the exact counts of substrings of the output.
func extraCheckLines(t *testing.T, op *operator, lines map[string]int) {
	t.Helper()
	for line, want := range lines {
		if got := op.count(line); got != want {
			t.Errorf("the output has %q %d times, want %d", line, got, want)
		}
	}
}

// extraCheckCleanLog asserts the number of error-level lines, and no panics.
func extraCheckCleanLog(t *testing.T, op *operator, errorLines int) {
	t.Helper()
	if n := op.count("\tERROR\t"); n != errorLines {
		t.Errorf("the output has %d error lines, want %d", n, errorLines)
	}
	if n := op.count("panic"); n > 0 {
		t.Errorf("the output mentions a panic %d times", n)
	}
}
